"""The `hf` judge backend: transformers + constrained decoding (llguidance or outlines), CPU
or CUDA.

Why it looks like this:
- One compiled grammar per schema (hf/grammar.py), built once and reused. outlines (the
  default) precompiles an index that costs seconds and, for bounded strings, gigabytes;
  llguidance (`--grammar-backend guidance`) compiles in milliseconds and computes masks per
  step.
- On CPU every request of a call is split into prefix families (prefix.split_families), each
  family's prefix is computed once and held once (hf/cascade.py), and batches that may mix
  families and schemas are cut by a KV-token budget (hf/batches.py), so memory stays bounded on
  any node size. On a GPU requests are grouped by (schema, max_tokens), sorted by prompt length
  and run in micro-batches bounded by a prompt-token budget.
- Decoding is our own loop (hf/decode.py), not `model.generate`: exact output ids, the top-k
  logprobs in the same pass, the shared rubric prefix prefilled once, finished rows dropped.
  A guard format's request decodes under its answer regex, with its decision token's logprobs.
- It streams: each row goes to `on_batch` the step it ends, so the client caches it at once
  and a killed run loses only the rows still decoding. A request whose prompt + max_tokens
  exceeds max_model_len is answered at once with a context error (judge/long_inputs.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.judge.hf.batches import default_token_budget, last_use, shared_batches
from nexagauge_local.judge.hf.cascade import install
from nexagauge_local.judge.hf.decode import (
    Decoded,
    RowRule,
    compute_prefix,
    constrained_greedy,
)
from nexagauge_local.judge.hf.families import common_prefix_len, prefix_families, split_families
from nexagauge_local.judge.hf.grammar import (
    CompiledGrammar,
    OutlinesGrammar,
    guidance_grammar,
    guidance_regex,
    guidance_tokenizer,
    outlines_regex,
)
from nexagauge_local.judge.hf.kv_cache import SharedPrefix
from nexagauge_local.judge.long_inputs import refusal
from nexagauge_local.judge.profiles import DEFAULT_GRAMMAR, JudgeProfile, fingerprint
from nexagauge_local.judge.runtime import (
    count_prompt_tokens,
    eos_token_ids,
    load_model,
    request_prompt,
    resolve_dtype,
    token_pieces,
)
from nexagauge_local.judge.schemas import (
    engine_schema_json,
    grammar_key,
    parse_request_answer,
    schema_id,
)
from nexagauge_local.judge.string_caps import StringCaps, token_texts
from nexagauge_local.judge.types import (
    JudgeRequest,
    JudgeResult,
    Messages,
    OnBatch,
    decision_step,
)

TOP_LOGPROBS = 5
LOGPROB_SOURCE = "hf_constrained_top5"


# ------------------------------------------------------------------ backend


class HFBackend:
    """transformers + llguidance/outlines judge backend (the path CI tests)."""

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

        self.profile = profile
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = resolve_dtype(dtype or profile.dtype, self.device)
        on_gpu = self.device.startswith("cuda")
        self.gpu_count = 1 if on_gpu else 0
        self.token_budget = token_budget or default_token_budget(on_gpu, self.dtype)
        # batch-invariant: every request decoded alone, its whole prompt computed at once
        self.max_batch = 1 if profile.batch_invariant else max_batch or (256 if on_gpu else 64)
        self.threads = threads
        self.grammar = grammar
        self.fingerprint = fingerprint(profile, self.name, self.dtype, grammar)
        started = time.perf_counter()
        self.model, self.tokenizer = load_model(profile, cache_dir, self.dtype, self.device)
        self._eos_ids = eos_token_ids(self.model, self.tokenizer)
        # CPU: each family's prefix held once and attended by every row (hf/cascade.py).
        self.shared_prefix = not on_gpu and not profile.batch_invariant and install(self.model)
        self._om: Any = None  # outlines' model wrapper, built on first outlines use
        self._ll_tokenizer: Any = None  # llguidance's tokenizer, built on first guidance use
        self.load_seconds = time.perf_counter() - started
        self._generators: dict[str, Any] = {}
        self._grammars: dict[str, CompiledGrammar] = {}
        self._caps: dict[str, StringCaps] = {}
        self._token_texts: list[str] | None = None  # each id's text, built on first clip use

    # -- protocol

    def count_tokens(self, messages: Messages) -> int:
        return count_prompt_tokens(self.tokenizer, messages)

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        """Results aligned with `requests`; `on_batch(positions, results)` for each
        answer, the step its row ends (and once at the start for requests refused for their
        length)."""
        import torch

        before = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            return self._generate(requests, on_batch)
        finally:
            torch.set_num_threads(before)

    def _generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None
    ) -> list[JudgeResult]:
        results: list[JudgeResult | None] = [None] * len(requests)
        prompts = [request_prompt(self.tokenizer, r) for r in requests]
        token_ids = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        lengths = [len(ids) for ids in token_ids]
        refused: dict[int, JudgeResult] = {}  # position -> the answer that refuses it
        groups: dict[tuple[str, int], list[int]] = {}
        for i, r in enumerate(requests):
            refused_result = refusal(r, lengths[i], self.profile.max_model_len)
            if refused_result is not None:
                results[i] = refused[i] = refused_result
            else:
                groups.setdefault((grammar_key(r), r.max_tokens), []).append(i)
        if refused and on_batch:
            on_batch(list(refused), list(refused.values()))
        if self.shared_prefix:  # CPU: every schema in one pool, decoded together
            pool = [i for idxs in groups.values() for i in idxs]
            families = [sorted((pool[j] for j in f), key=lambda i: lengths[i])
                        for f in split_families([token_ids[i] for i in pool])]  # fmt: skip
            plain = self._run_shared(families, requests, token_ids, lengths, results, on_batch)
            groups = {}
            for i in (i for f in plain for i in f):
                r = requests[i]
                groups.setdefault((grammar_key(r), r.max_tokens), []).append(i)
        for idxs in groups.values():  # GPU, or prompts with no prefix to share
            for family in self._families(idxs, token_ids, lengths):
                for batch in self._micro_batches(family, lengths):
                    self._run_batch([requests[i] for i in batch], [token_ids[i] for i in batch],
                                    _handover(batch, results, on_batch))  # fmt: skip
        return [r for r in results if r is not None]

    def close(self) -> None:
        """Nothing to stop: no engine process; the weights go with the object."""

    # -- internals

    def _families(
        self, idxs: list[int], token_ids: list[list[int]], lengths: list[int]
    ) -> list[list[int]]:
        """Prefix families (hf/families.py), each length-sorted: one family's prompts share its
        whole rubric (the peer sample's redteam prompts: 471 and 432 tokens, where the two
        rubrics together share only 139)."""
        return [sorted((idxs[j] for j in family), key=lambda i: lengths[i])
                for family in prefix_families([token_ids[i] for i in idxs])]  # fmt: skip

    def _run_shared(
        self,
        families: list[list[int]],
        requests: Sequence[JudgeRequest],
        token_ids: list[list[int]],
        lengths: list[int],
        results: list[JudgeResult | None],
        on_batch: OnBatch | None,
    ) -> list[list[int]]:
        """Decode the families against their prefixes, each computed once (hf/cascade.py),
        in batches that may hold several families (hf/batches.py). Returns the families that
        share no prefix token (left to the plain path)."""
        lens = [common_prefix_len([token_ids[i] for i in f]) for f in families]
        plain = [f for f, n in zip(families, lens) if n == 0]
        shared = [f for f, n in zip(families, lens) if n > 0]
        plens = [n for n in lens if n > 0]
        plan = shared_batches(shared, plens, lengths, self.token_budget, self.max_batch)
        ending: dict[int, list[int]] = {}  # batch -> the families it is the last of
        for f, end in last_use(plan).items():
            ending.setdefault(end, []).append(f)
        held: dict[int, tuple[SharedPrefix, float]] = {}
        for b, batch in enumerate(plan):
            for _, f in batch:
                if f not in held:
                    held[f] = self._prefix(token_ids[shared[f][0]][: plens[f]], len(shared[f]))
            batch.sort(key=lambda row: lengths[row[0]] - plens[row[1]])  # row_cache buckets
            idx = [i for i, _ in batch]
            self._run_batch([requests[i] for i in idx], [token_ids[i] for i in idx],
                            _handover(idx, results, on_batch), [held[f][0] for _, f in batch],
                            [held[f][1] for _, f in batch])  # fmt: skip
            for f in ending.get(b, []):
                del held[f]
        return plain

    def _prefix(self, ids: list[int], members: int) -> tuple[SharedPrefix, float]:
        """A family's prefix, and each member's share of the seconds it took."""
        started = time.perf_counter()
        prefix = compute_prefix(self.model, ids)
        return prefix, (time.perf_counter() - started) / members

    def _micro_batches(self, idxs: list[int], lengths: list[int]) -> list[list[int]]:
        """Cut length-sorted requests into batches with batch_size x longest prompt <= budget."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in idxs:
            longest = max([lengths[j] for j in current] + [lengths[i]])
            if current and (
                (len(current) + 1) * longest > self.token_budget or len(current) >= self.max_batch
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def grammar_for_request(self, request: JudgeRequest) -> CompiledGrammar:
        """A guard format's answer regex, or the request's schema, compiled once."""
        if request.guard is None:
            return self.grammar_for(request.schema)
        return self._compiled(f"regex:{request.guard.regex}", request.guard.regex, None)

    def grammar_for(self, schema: Any) -> CompiledGrammar:
        """The schema compiled by this backend's grammar engine, on first use, then reused."""
        return self._compiled(schema_id(schema), None, schema)

    def _compiled(self, what: str, regex: str | None, schema: Any) -> CompiledGrammar:
        """One cache and one engine choice for both kinds of grammar."""
        key, eos = f"{self.grammar}:{what}", self.tokenizer.eos_token_id
        if key in self._grammars:
            return self._grammars[key]
        if self.grammar == "outlines" and regex is not None:
            self._om = self._om or _outlines_model(self.model, self.tokenizer)
            self._grammars[key] = outlines_regex(self._om, regex, eos)
        elif self.grammar == "outlines":
            self._grammars[key] = OutlinesGrammar(
                self.generator_for(schema).logits_processor.index, eos)
        else:
            if self._ll_tokenizer is None:
                self._ll_tokenizer = guidance_tokenizer(self.tokenizer, self._vocab())
            self._grammars[key] = (
                guidance_regex(self._ll_tokenizer, regex, eos) if regex is not None
                else guidance_grammar(self._ll_tokenizer, self._engine_json(schema), eos))
        return self._grammars[key]

    def _vocab(self) -> int:
        """The model's logit width (may exceed the tokenizer's vocabulary)."""
        return int(self.model.get_output_embeddings().weight.shape[0])

    def _engine_json(self, schema: Any) -> str:
        return engine_schema_json(schema, self.profile.string_bounds == "clip")

    def generator_for(self, schema: Any) -> Any:
        """The outlines generator for a schema, compiled on first use and then reused."""
        if self._om is None:
            self._om = _outlines_model(self.model, self.tokenizer)
        key = schema_id(schema)
        if key not in self._generators:
            import outlines
            from outlines.types import JsonSchema

            # No free whitespace between JSON tokens: shorter outputs, and no whitespace loops.
            term = JsonSchema(self._engine_json(schema), whitespace_pattern="")
            self._generators[key] = outlines.Generator(self._om, term)
        return self._generators[key]

    def _run_batch(
        self,
        reqs: list[JudgeRequest],
        ids: list[list[int]],
        handover: Callable[[list[int], list[JudgeResult]], None],
        prefixes: list[SharedPrefix] | None = None,
        prefix_shares: list[float] | None = None,
    ) -> None:
        """Decode one micro-batch of tokenised prompts; each row goes to
        `handover(batch positions, results)` the step it ends, charged its share of the
        seconds its family prefix took (`prefix_shares`)."""
        rules = [RowRule(self.grammar_for_request(r), r.max_tokens,
                         None if r.guard else self.caps_for(r.schema)) for r in reqs]
        want_lp = any(r.want_logprobs for r in reqs)
        pad_id = self.tokenizer.pad_token_id

        def finished(rows: list[int], decoded: list[Decoded]) -> None:
            for r, dec in zip(rows, decoded):
                dec.seconds += prefix_shares[r] if prefix_shares else 0.0
            handover(rows, [self._to_result(reqs[r], len(ids[r]), dec, len(reqs))
                            for r, dec in zip(rows, decoded)])  # fmt: skip

        constrained_greedy(
            self.model,
            None,
            ids,
            eos_ids=self._eos_ids,
            pad_id=pad_id if pad_id is not None else min(self._eos_ids),
            top_k=max([TOP_LOGPROBS] + [r.guard.top_logprobs for r in reqs if r.guard])
            if want_lp else 0,
            on_finished=finished,
            prefixes=prefixes,
            rules=rules,
        )

    def caps_for(self, schema: Any) -> StringCaps | None:
        """string_bounds = "clip": the loop's string caps for this schema, else None."""
        if self.profile.string_bounds != "clip":
            return None
        key = schema_id(schema)
        if key not in self._caps:
            if self._token_texts is None:
                self._token_texts = token_texts(self.tokenizer, self._vocab())
            self._caps[key] = StringCaps(schema.model_json_schema(), self._token_texts)
        return self._caps[key]

    def _to_result(
        self, req: JudgeRequest, prompt_tokens: int, dec: Decoded, batch_size: int
    ) -> JudgeResult:
        text_ids = dec.token_ids[:-1] if dec.stopped else dec.token_ids
        text = self.tokenizer.decode(text_ids, skip_special_tokens=True)
        parsed, error, failure = parse_request_answer(req, text, hit_max_tokens=not dec.stopped)
        res = JudgeResult(
            parsed=parsed,
            raw_text=text,
            prompt_tokens=prompt_tokens,
            output_tokens=len(dec.token_ids),
            gpu_seconds=dec.seconds * max(self.gpu_count, 1),  # on CPU: one device
            error=error,
            failure=failure,
            extra={"batch_size": batch_size},
        )
        if req.want_logprobs:
            steps = self._logprobs(dec)
            if req.guard is not None:  # the decision token's alternatives alone
                steps = decision_step(token_pieces(self.tokenizer, text_ids), steps,
                                      req.guard.decision_label, req.guard.top_logprobs)
            res.token_logprobs = steps
            res.extra["logprob_source"] = LOGPROB_SOURCE
        return res

    def _logprobs(self, dec: Decoded) -> list[dict[str, float]]:
        steps: list[dict[str, float]] = []
        for values, indices in dec.top_logprobs:
            alts: dict[str, float] = {}
            for lp, tid in zip(values, indices):
                if lp == float("-inf"):
                    continue
                text = self.tokenizer.decode([tid])
                alts[text] = max(lp, alts.get(text, float("-inf")))
            steps.append(alts)
        return steps


def _handover(
    batch: list[int], results: list[JudgeResult | None], on_batch: OnBatch | None
) -> Callable[[list[int], list[JudgeResult]], None]:
    """Where a micro-batch's finished rows go: their request's slot, then `on_batch`."""

    def handover(local: list[int], done: list[JudgeResult]) -> None:
        positions = [batch[j] for j in local]
        for i, res in zip(positions, done):
            results[i] = res
        if on_batch:
            on_batch(positions, done)

    return handover


def _outlines_model(model: Any, tokenizer: Any) -> Any:
    import outlines

    return outlines.from_transformers(model, tokenizer)
