"""Prompts as a model sees them: the chat template, the token ids, the EOS set.

Why shared: the hf and vLLM backends must render, count and stop exactly alike, and `estimate`
counts prompt tokens with the tokenizer alone (TokenCounter), no weights loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.runtime.weights import load_tokenizer
from nexagauge_local.judge.types import Messages


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


def prompt_ids(tokenizer: Any, messages: Messages) -> list[int]:
    """Token ids of the chat-templated prompt, exactly as the backend feeds them."""
    return list(
        tokenizer(render_prompt(tokenizer, messages), add_special_tokens=False)["input_ids"]
    )


def count_prompt_tokens(tokenizer: Any, messages: Messages) -> int:
    return len(prompt_ids(tokenizer, messages))


def eos_set(tokenizer: Any, config_eos: int | list[int] | None) -> set[int]:
    """Every id that ends an answer: the tokenizer's EOS and the generation config's (Llama-3.1
    has two there). One set for the hf decode loop (which aligns the grammar to it) and vLLM's
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
