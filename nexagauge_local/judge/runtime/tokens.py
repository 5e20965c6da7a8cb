"""Prompts as a model sees them: the chat template, the token ids, the EOS set.

Why shared: the hf and vLLM backends must render, count and stop exactly alike, and `estimate`
counts prompt tokens with the tokenizer alone (TokenCounter), no weights loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.runtime.weights import load_tokenizer
from nexagauge_local.judge.types import JudgeRequest, Messages


def render_prompt(tokenizer: Any, messages: Messages) -> str:
    """Apply the chat template. Templates without a system role (Mistral/Prometheus) reject a
    system turn; then the system text is merged into the first user turn."""
    text: str
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return text
    except Exception:  # jinja TemplateError raised by the template itself
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        rest = [dict(m) for m in messages if m["role"] != "system"]
        if not system or not rest:
            raise
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
        text = tokenizer.apply_chat_template(rest, tokenize=False, add_generation_prompt=True)
        return text


def request_prompt(tokenizer: Any, request: JudgeRequest) -> str:
    """A request's prompt text: our chat-templated messages, or a guard format's own prompt
    (its chat template with the family's extras where the weights' template reads them,
    else the family's documented layout, special tokens written out)."""
    guard = request.guard
    if guard is None:
        return render_prompt(tokenizer, request.messages)
    if guard.uses_messages(getattr(tokenizer, "chat_template", None)):
        text: str = tokenizer.apply_chat_template(
            request.messages, tokenize=False, add_generation_prompt=True,
            **dict(guard.template_kwargs))  # fmt: skip
        return text
    return guard.text


def request_prompt_ids(tokenizer: Any, request: JudgeRequest) -> list[int]:
    """Token ids of `request_prompt`, exactly as the backends feed them."""
    return list(tokenizer(request_prompt(tokenizer, request),
                          add_special_tokens=False)["input_ids"])  # fmt: skip


def token_pieces(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """Each generated token's text in context (the decoded prefix grows by it): decoding a
    token alone drops a SentencePiece word's leading space, and the guard formats find their
    decision word by its offset in the answer."""
    pieces, before = [], ""
    for n in range(1, len(ids) + 1):
        text = tokenizer.decode(list(ids[:n]), skip_special_tokens=True)
        pieces.append(text.removeprefix(before))
        before = text
    return pieces


def prompt_ids(tokenizer: Any, messages: Messages) -> list[int]:
    """Token ids of the chat-templated prompt, exactly as the backend feeds them."""
    return list(
        tokenizer(render_prompt(tokenizer, messages), add_special_tokens=False)["input_ids"]
    )


def count_prompt_tokens(tokenizer: Any, messages: Messages) -> int:
    return len(prompt_ids(tokenizer, messages))


def eos_set(tokenizer: Any, config_eos: int | list[int] | None) -> set[int]:
    """Every id that ends an answer: the tokenizer's EOS and the generation config's (Llama-3.1
    has two there). One set for the hf backend (which aligns the grammar to it) and vLLM's
    stop tokens, so both backends end answers on the same ids."""
    ids = {tokenizer.eos_token_id}
    ids.update(config_eos if isinstance(config_eos, list) else [config_eos])
    return {i for i in ids if i is not None}


def eos_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """eos_set of a loaded model."""
    return eos_set(tokenizer, getattr(model.generation_config, "eos_token_id", None))


def generation_eos_ids(path: str | Path, tokenizer: Any) -> set[int]:
    """eos_set of a weights folder, without loading the weights (for vLLM's stop tokens)."""
    from transformers import GenerationConfig

    try:
        config_eos = GenerationConfig.from_pretrained(path).eos_token_id
    except OSError:  # no generation_config.json: the tokenizer's EOS alone
        config_eos = None
    return eos_set(tokenizer, config_eos)


class TokenCounter:
    """Tokenizer-only stand-in for a backend: exact prompt token counts, no weights loaded."""

    def __init__(self, profile: JudgeProfile, cache_dir: Path) -> None:
        self.profile = profile
        self.tokenizer = load_tokenizer(profile, cache_dir)

    def count_tokens(self, messages: Messages) -> int:
        return count_prompt_tokens(self.tokenizer, messages)

    def count_request(self, request: JudgeRequest) -> int:
        """A request's prompt tokens as the engines feed them: a guard family's request counts
        its own prompt (request_prompt), not our chat-templated messages."""
        return len(request_prompt_ids(self.tokenizer, request))
