"""The `hf` judge backend: transformers' own greedy `generate` under a grammar engine's logits
processor (hf/grammar.py), on CPU or CUDA: the fallback where vLLM (the engine tuned for speed)
does not run, built from library parts only, so it follows torch and transformers releases.

- Requests are grouped by (schema, max_tokens) and cut into micro-batches (judge/batch_plan.py)
  of one rubric's rows: their common first ids are prefilled once (a KV cache repeated per
  row), each row's own part left-padded after them. batch_invariant: every request alone.
- Each micro-batch's answers go to `on_batch` as it ends, so the client caches them and a
  killed run loses only the micro-batch in flight. A request whose prompt + max_tokens exceeds
  the profile's max_model_len is answered at once with a context error (judge/long_inputs.py).
- Logprobs: the top 5 of each step's constrained distribution (`generate`'s own scores).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nexagauge_local.judge.batch_plan as plan
import nexagauge_local.judge.runtime as rt
import nexagauge_local.judge.schemas as sc
from nexagauge_local.judge.hf.grammar import Grammars
from nexagauge_local.judge.hf.processors import (
    AlignedEos,
    CapStrings,
    Processor,
    TopLogprobs,
    eos_aliases,
)
from nexagauge_local.judge.long_inputs import refusal
from nexagauge_local.judge.profiles import DEFAULT_GRAMMAR, JudgeProfile, fingerprint
from nexagauge_local.judge.string_caps import StringCaps, token_texts
from nexagauge_local.judge.types import JudgeRequest, JudgeResult, Messages, OnBatch, decision_step

TOP_LOGPROBS = 5
LOGPROB_SOURCE = "hf_constrained_top5"


class HFBackend:
    """transformers `generate` + outlines/llguidance judge backend (the path CI tests)."""

    name = "hf"

    def __init__(
        self,
        profile: JudgeProfile,
        *,
        cache_dir: Path,
        device: str | None = None,
        dtype: str | None = None,
        token_budget: int | None = None,
        max_batch: int | None = None,
        threads: int | None = None,
        grammar: str = DEFAULT_GRAMMAR["hf"],
    ) -> None:
        """`threads` pins torch's CPU thread count during generate (restored after): 1 is
        fastest for tiny models and on a host other jobs keep busy, where OpenMP threads
        spin-waiting on a descheduled peer make every op slow."""
        import torch
        from transformers import GenerationConfig

        self.profile = profile
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = rt.resolve_dtype(dtype or profile.dtype, self.device)
        on_gpu = self.device.startswith("cuda")
        self.gpu_count = 1 if on_gpu else 0
        self.max_batch = 1 if profile.batch_invariant else max_batch or (256 if on_gpu else 64)
        self.threads = threads
        self.grammar = grammar
        self.fingerprint = fingerprint(profile, self.name, self.dtype, grammar)
        started = time.perf_counter()
        self.model, self.tokenizer = rt.load_model(profile, cache_dir, self.dtype, self.device)
        self._eos_ids = rt.eos_token_ids(self.model, self.tokenizer)
        # plain greedy: no sampling or penalty defaults of the weights' generation_config
        self.model.generation_config = GenerationConfig()  # type: ignore[no-untyped-call]
        self.load_seconds = time.perf_counter() - started
        self._vocab = int(self.model.get_output_embeddings().weight.shape[0])
        kv = plan.kv_bytes_per_token(self.model.config, 4 if self.dtype == "float32" else 2)
        self.token_budget = token_budget or plan.default_token_budget(on_gpu, kv)
        self._grammars: dict[str, Grammars] = {}
        self._caps: dict[str, StringCaps] = {}
        self._token_texts: list[str] | None = None  # each id's text, built on first clip use

    def count_tokens(self, messages: Messages) -> int:
        return rt.count_prompt_tokens(self.tokenizer, messages)

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        """Results aligned with `requests`; `on_batch(positions, results)` once per
        micro-batch as it ends (and once at the start for requests refused for length)."""
        import torch

        before = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            return self._generate(requests, on_batch)
        finally:
            torch.set_num_threads(before)

    def close(self) -> None:
        """Nothing to stop: no engine process; the weights go with the object."""

    def grammar_for(self, schema: Any) -> Any:
        """The schema compiled by this backend's grammar engine, on first use, then reused."""
        return self._engine().compile(self._engine_json(schema))

    def caps_for(self, schema: Any) -> StringCaps | None:
        """string_bounds = "clip": the string caps for this schema, else None."""
        if self.profile.string_bounds != "clip":
            return None
        key = sc.schema_id(schema)
        if key not in self._caps:
            if self._token_texts is None:
                self._token_texts = token_texts(self.tokenizer, self._vocab)
            self._caps[key] = StringCaps(schema.model_json_schema(), self._token_texts)
        return self._caps[key]

    def processors(self, schema: Any, rows: int, regex: str | None = None) -> list[Processor]:
        """A micro-batch's logits processors, in order: the grammar (`regex`: a guard
        format's answer, else the schema) with every EOS id aligned to the grammar's, then
        the string caps (JSON answers only)."""
        if regex is not None:
            grammar = self._engine().processor(regex, rows, self._eos_ids, kind="regex")
        else:
            grammar = self._engine().processor(self._engine_json(schema), rows, self._eos_ids)
        eos = self.tokenizer.eos_token_id
        procs: list[Processor] = [AlignedEos(grammar, eos, eos_aliases(self._eos_ids, eos,
                                                                       self._vocab))]  # fmt: skip
        caps = self.caps_for(schema) if regex is None else None
        if caps is not None:
            procs.append(CapStrings(caps, rows, self._eos_ids))
        return procs

    def _engine(self) -> Grammars:
        if self.grammar not in self._grammars:  # `grammar` may be switched after init
            self._grammars[self.grammar] = Grammars(self.grammar, self.model, self.tokenizer,
                                                    self._vocab)  # fmt: skip
        return self._grammars[self.grammar]

    def _engine_json(self, schema: Any) -> str:
        return sc.engine_schema_json(schema, self.profile.string_bounds == "clip")

    def _generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None
    ) -> list[JudgeResult]:
        results: list[JudgeResult | None] = [None] * len(requests)
        prompts = [rt.request_prompt(self.tokenizer, r) for r in requests]
        token_ids: list[list[int]] = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        lengths = [len(ids) for ids in token_ids]
        refused: dict[int, JudgeResult] = {}
        groups: dict[tuple[str, int], list[int]] = {}
        for i, r in enumerate(requests):
            answer = refusal(r, lengths[i], self.profile.max_model_len)
            if answer is not None:
                results[i] = refused[i] = answer
            else:
                groups.setdefault((sc.grammar_key(r), r.max_tokens), []).append(i)
        if refused and on_batch:
            on_batch(list(refused), list(refused.values()))
        for idxs in groups.values():
            order = sorted(idxs, key=lambda i: token_ids[i])  # a rubric's rows side by side
            for batch in plan.micro_batches(order, lengths, self.token_budget, self.max_batch, token_ids):
                done = self._run_batch([requests[i] for i in batch], [token_ids[i] for i in batch])
                for i, res in zip(batch, done):
                    results[i] = res
                if on_batch:
                    on_batch(batch, done)
        return [r for r in results if r is not None]

    def _run_batch(self, reqs: list[JudgeRequest], ids: list[list[int]]) -> list[JudgeResult]:
        """Greedy `generate` of one left-padded micro-batch (one schema, one max_tokens); its
        seconds are split over its rows in proportion to their tokens."""
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        pad = self.tokenizer.pad_token_id
        pad = pad if pad is not None else min(self._eos_ids)
        width, dev = max(len(p) for p in ids), self.model.device
        shared = plan.shared_prefix(ids)
        head = ids[0][:shared]  # every row's first `shared` ids; the rest is left-padded
        input_ids = torch.tensor([head + [pad] * (width - len(p)) + p[shared:] for p in ids],
                                 device=dev)  # fmt: skip
        mask = torch.tensor([[1] * shared + [0] * (width - len(p)) + [1] * (len(p) - shared)
                             for p in ids], device=dev)  # fmt: skip
        config = GenerationConfig(  # type: ignore[no-untyped-call]
            max_new_tokens=reqs[0].max_tokens, do_sample=False, num_beams=1, pad_token_id=pad,
            eos_token_id=sorted(self._eos_ids))  # fmt: skip
        guard = reqs[0].guard
        procs = self.processors(reqs[0].schema, len(ids), guard.regex if guard else None)
        top = None
        if any(r.want_logprobs for r in reqs):  # the last processor sees the final scores
            top = TopLogprobs(max([TOP_LOGPROBS] + [r.guard.top_logprobs for r in reqs if r.guard]))
            procs.append(top)
        started = time.perf_counter()
        with torch.inference_mode():
            cache = self._prefix_cache(head, len(ids)) if shared else None
            out = self.model.generate(input_ids=input_ids, attention_mask=mask,
                                      generation_config=config, past_key_values=cache,
                                      logits_processor=LogitsProcessorList(procs))  # fmt: skip
        seconds = time.perf_counter() - started
        rows = [self._until_eos(row) for row in out[:, width:].tolist()]
        steps = top.steps if top else []
        tokens = sum(len(p) + len(row) for p, (row, _) in zip(ids, rows))
        return [self._result(req, len(p), row, stopped, seconds * (len(p) + len(row)) / tokens,
                             len(ids), [(v[j].tolist(), i[j].tolist()) for v, i in steps[: len(row)]])
                for j, (req, p, (row, stopped)) in enumerate(zip(reqs, ids, rows))]  # fmt: skip

    def _prefix_cache(self, head: list[int], rows: int) -> Any:
        """The KV cache of the rows' shared first ids, computed once and repeated per row:
        `generate` then runs only what follows it (transformers' documented prompt reuse). A
        node's prompts share the system prompt and rubric, often most of each prompt."""
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        ids = torch.tensor([head], device=self.model.device)
        self.model(input_ids=ids, past_key_values=cache, use_cache=True)
        cache.batch_repeat_interleave(rows)
        return cache

    def _until_eos(self, generated: list[int]) -> tuple[list[int], bool]:
        """A row's ids up to and including its first EOS (padding follows), and whether it
        had one (else it ran to max_tokens)."""
        for n, token in enumerate(generated):
            if token in self._eos_ids:
                return generated[: n + 1], True
        return generated, False

    def _result(self, req: JudgeRequest, prompt_tokens: int, token_ids: list[int], stopped: bool,
                seconds: float, batch_size: int, top: list[tuple[list[float], list[int]]]
                ) -> JudgeResult:  # fmt: skip
        text = self.tokenizer.decode(token_ids[:-1] if stopped else token_ids,
                                     skip_special_tokens=True)  # fmt: skip
        parsed, error, failure = sc.parse_request_answer(req, text, hit_max_tokens=not stopped)
        res = JudgeResult(parsed=parsed, raw_text=text, prompt_tokens=prompt_tokens,
                          output_tokens=len(token_ids), error=error, failure=failure,
                          gpu_seconds=seconds * max(self.gpu_count, 1),  # on CPU: one device
                          extra={"batch_size": batch_size})  # fmt: skip
        if req.want_logprobs:
            steps = [self._alternatives(values, indices) for values, indices in top]
            if req.guard is not None:  # the decision token's alternatives alone
                k = req.guard.top_logprobs
                steps = decision_step(rt.token_pieces(self.tokenizer, token_ids), steps,
                                      req.guard.decision_label, k)  # fmt: skip
            res.token_logprobs = steps
            res.extra["logprob_source"] = LOGPROB_SOURCE
        return res

    def _alternatives(self, values: list[float], indices: list[int]) -> dict[str, float]:
        """One step's top tokens by text (two ids of one text keep the larger logprob)."""
        alts: dict[str, float] = {}
        for lp, tid in zip(values, indices):
            if lp != float("-inf"):
                text = self.tokenizer.decode([tid])
                alts[text] = max(lp, alts.get(text, float("-inf")))
        return alts
