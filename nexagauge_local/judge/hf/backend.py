"""The `hf` judge backend: transformers' own greedy `generate` under a grammar engine's logits
processor (hf/grammar.py), on CPU or CUDA: the fallback where vLLM (the engine tuned for speed)
does not run, built from library parts only, so it follows torch and transformers releases.

Requests are cut into micro-batches by judge/batch_plan.py (batch_invariant: each alone). Each
micro-batch's answers go to `on_batch` as it ends, so the client caches them and a killed run
loses only the micro-batch in flight. A request whose prompt + max_tokens exceeds the profile's
max_model_len is answered at once with a context error (judge/long_inputs.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from nexagauge_local.judge.batch_plan import (
    default_token_budget,
    grouped_batches,
    kv_bytes_per_token,
    left_padded,
)
from nexagauge_local.judge.decision import JudgeDecision, device_of, local_decision, torch_device
from nexagauge_local.judge.hf.grammar import Grammars
from nexagauge_local.judge.hf.processors import TopLogprobs, TopSteps, batch_processors
from nexagauge_local.judge.ledger import split_device_seconds
from nexagauge_local.judge.long_inputs import refusal
from nexagauge_local.judge.profiles import DEFAULT_GRAMMAR, JudgeProfile
from nexagauge_local.judge.runtime import (
    count_prompt_tokens,
    eos_token_ids,
    load_model,
    request_prompt,
    token_pieces,
)
from nexagauge_local.judge.schemas import engine_schema_json, parse_request_answer, schema_id
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
        decision: JudgeDecision | None = None,
    ) -> None:
        """`decision`: the run's decision for this judge (judge/factory.py), whose device,
        dtype, grammar engine and fingerprint it takes; without one (a benchmark, a test) they
        come from `device` (default: the host's GPU probe), `dtype` and `grammar`. `threads`
        pins torch's CPU thread count during generate (restored after): 1 is fastest for tiny
        models and on a host other jobs keep busy, where OpenMP threads spin-waiting on a
        descheduled peer make every op slow."""
        from transformers import GenerationConfig

        if decision is None:
            where, ids = device_of(device or torch_device(()))
            decision = local_decision(profile, "hf", device=where, gpu_ids=ids, dtype=dtype,
                                      grammar=grammar, reason="hf backend built directly")
        self.profile = profile
        self.decision = decision
        self.device = decision.torch_device
        self.dtype = decision.dtype
        grammar = decision.grammar
        on_gpu = self.device.startswith("cuda")
        self.gpu_count = 1 if on_gpu else 0
        self.max_batch = 1 if profile.batch_invariant else max_batch or (256 if on_gpu else 64)
        self.threads = threads
        self.grammar = grammar
        self.fingerprint = decision.fingerprint
        started = time.perf_counter()
        self.model, self.tokenizer = load_model(profile, cache_dir, self.dtype, self.device)
        self._eos_ids = eos_token_ids(self.model, self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self._pad: int = pad if pad is not None else min(self._eos_ids)
        # plain greedy: none of the sampling or penalty defaults of the weights' own config
        self.model.generation_config = GenerationConfig(  # type: ignore[no-untyped-call]
            do_sample=False, num_beams=1, pad_token_id=self._pad,
            eos_token_id=sorted(self._eos_ids))  # fmt: skip
        self.load_seconds = time.perf_counter() - started
        self._vocab = int(self.model.get_output_embeddings().weight.shape[0])
        kv = kv_bytes_per_token(self.model.config, 4 if self.dtype == "float32" else 2)
        self.token_budget = token_budget or default_token_budget(on_gpu, kv)
        self._grammars: dict[str, Grammars] = {}
        self._caps: dict[str, StringCaps] = {}

    def count_tokens(self, messages: Messages) -> int:
        return count_prompt_tokens(self.tokenizer, messages)

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        """Results aligned with `requests`; `on_batch(positions, results)` once per
        micro-batch as it ends (and once at the start for requests refused for length)."""
        import torch

        prompts = [request_prompt(self.tokenizer, r) for r in requests]
        ids: list[list[int]] = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        results = {i: refused for i, r in enumerate(requests)  # too long for the context window
                   if (refused := refusal(r, len(ids[i]), self.profile.max_model_len)) is not None}
        if results and on_batch:
            on_batch(list(results), list(results.values()))
        todo = [i for i in range(len(requests)) if i not in results]
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads or before)
        try:
            for batch in grouped_batches(requests, ids, todo, self.token_budget, self.max_batch):
                done = self._run_batch([requests[i] for i in batch], [ids[i] for i in batch])
                results.update(zip(batch, done))
                if on_batch:
                    on_batch(batch, done)
        finally:
            torch.set_num_threads(before)
        return [results[i] for i in range(len(requests))]

    def close(self) -> None:
        """Nothing to stop: no engine process; the weights go with the object."""

    def grammar_for(self, schema: Any) -> Any:
        """The schema compiled by this backend's grammar engine, on first use, then reused."""
        return self._engine().compile(self._engine_json(schema))

    def caps_for(self, schema: Any) -> StringCaps | None:
        """string_bounds = "clip": the string caps for this schema, else None."""
        if self.profile.string_bounds != "clip":
            return None
        key = schema_id(schema)
        if key not in self._caps:
            self._caps[key] = StringCaps(schema.model_json_schema(), self._token_texts)
        return self._caps[key]

    @cached_property
    def _token_texts(self) -> list[str]:
        """Each id's text, for the string caps; built on their first use."""
        return token_texts(self.tokenizer, self._vocab)

    def _engine(self) -> Grammars:
        if self.grammar not in self._grammars:  # `grammar` may be switched after init
            self._grammars[self.grammar] = Grammars(self.grammar, self.model, self.tokenizer,
                                                    self._vocab)  # fmt: skip
        return self._grammars[self.grammar]

    def _engine_json(self, schema: Any) -> str:
        return engine_schema_json(schema, self.profile.string_bounds == "clip")

    def _run_batch(self, reqs: list[JudgeRequest], ids: list[list[int]]) -> list[JudgeResult]:
        """Greedy `generate` of one micro-batch (one schema, one max_tokens); its seconds are
        split over its rows in proportion to their tokens."""
        import torch
        from transformers import LogitsProcessorList

        shared, rows, mask = left_padded(ids, self._pad)
        guard, engine = reqs[0].guard, self._engine()
        if guard is not None:  # a guard format's short answer: its regex, no string caps
            grammar, caps = engine.processor(guard.regex, len(ids), self._eos_ids, "regex"), None
        else:
            grammar = engine.processor(self._engine_json(reqs[0].schema), len(ids), self._eos_ids)
            caps = self.caps_for(reqs[0].schema)
        procs = batch_processors(grammar, self._eos_ids, self.tokenizer.eos_token_id, self._vocab,
                                 caps, len(ids))  # fmt: skip
        top = TopLogprobs(max([TOP_LOGPROBS] + [r.guard.top_logprobs for r in reqs if r.guard]))
        if any(r.want_logprobs for r in reqs):  # the last processor sees the final scores
            procs.append(top)
        started = time.perf_counter()
        with torch.inference_mode():
            cache = self._prefix_cache(ids[0][:shared], len(ids)) if shared else None
            out = self.model.generate(input_ids=torch.tensor(rows, device=self.model.device),
                                      attention_mask=torch.tensor(mask, device=self.model.device),
                                      max_new_tokens=reqs[0].max_tokens, past_key_values=cache,
                                      logits_processor=LogitsProcessorList(procs))  # fmt: skip
        new = out[:, len(rows[0]) :].tolist()  # each row's generated ids, padding after its EOS
        done = [self._result(req, len(p), new[j], len(ids), top.steps, j)
                for j, (req, p) in enumerate(zip(reqs, ids))]  # fmt: skip
        split_device_seconds(done, time.perf_counter() - started, self.gpu_count)
        return done

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

    def _result(self, req: JudgeRequest, prompt_tokens: int, generated: list[int], batch_size: int,
                steps: list[TopSteps], row: int) -> JudgeResult:  # fmt: skip
        """Row `row`'s answer: its ids up to and including its first EOS (padding follows), or
        all of them where it has none (it ran to max_tokens)."""
        end = next((n for n, token in enumerate(generated) if token in self._eos_ids), None)
        token_ids = generated if end is None else generated[: end + 1]
        text = self.tokenizer.decode(generated[:end], skip_special_tokens=True)
        parsed, error, failure = parse_request_answer(req, text, hit_max_tokens=end is None)
        res = JudgeResult(parsed=parsed, raw_text=text, prompt_tokens=prompt_tokens,
                          output_tokens=len(token_ids), gpu_seconds=0.0, error=error,
                          failure=failure, extra={"batch_size": batch_size})  # fmt: skip
        if req.want_logprobs:
            alternatives = [self._alternatives(v[row], i[row]) for v, i in steps[: len(token_ids)]]
            if req.guard is not None:  # the decision token's alternatives alone
                alternatives = decision_step(token_pieces(self.tokenizer, token_ids),
                                             alternatives, req.guard.decision_label,
                                             req.guard.top_logprobs)  # fmt: skip
            res.token_logprobs = alternatives
            res.extra["logprob_source"] = LOGPROB_SOURCE
        return res

    def _alternatives(self, values: list[float], indices: list[int]) -> dict[str, float]:
        """One step's top tokens by text (two ids of one text keep the larger logprob)."""
        alts: dict[str, float] = {}
        for lp, text in zip(values, self.tokenizer.batch_decode([[i] for i in indices])):
            if lp != float("-inf"):
                alts[text] = max(lp, alts.get(text, float("-inf")))
        return alts
