"""Chat transcripts: a record's `messages` list as the texts a case is judged on.

The mapping (docs/data-formats.md, "Chat records"):
- output:  the last assistant turn that has text;
- input:   the last user turn before it (the last user turn, when no assistant turn has text);
- context: every tool result before the output turn (`tool`/`function` role messages, and
  Anthropic-style `tool_result` parts), joined like a context list; retrieved documents are
  tool results in this shape. System prompts are not evaluated text and are not used.

A message is OpenAI's `{"role", "content"}` or ShareGPT's `{"from", "value"}`; content is text
or a list of content parts, whose text parts (`text`, `input_text`, `output_text`) are joined
with newlines (images and other parts carry no text to judge). Flat fields win: a record with
both `output` and `messages` is judged on its `output`, and the messages fill only what is
missing, so a log of prompt messages beside a `completion` reads as it should.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Keys a transcript is found under (the logical field `messages`, which --field can remap).
CHAT_KEYS = ("messages", "conversation", "conversations", "chat")
_ROLES = {
    "user": "user", "human": "user",
    "assistant": "assistant", "gpt": "assistant", "model": "assistant", "ai": "assistant",
    "bot": "assistant",
    "tool": "tool", "function": "tool", "ipython": "tool",
    "system": "system", "developer": "system",
}
_TEXT_PARTS = ("text", "input_text", "output_text")
_CONTEXT_JOIN = "\n\n"


@dataclass
class ChatTexts:
    """The texts a transcript gives, or the problems that kept it from giving them."""

    input: str | None = None
    output: str | None = None
    context: str | None = None
    errors: list[tuple[str, str]] = field(default_factory=list)  # (field path, message)


@dataclass
class _Turn:
    role: str
    text: str
    tool_results: list[str]


def chat_texts(messages: Any, key: str) -> ChatTexts:
    """input, output and context from the transcript held under `key` (the column's name,
    used in every error path: `messages.2.content`)."""
    if not isinstance(messages, list):
        kind = type(messages).__name__
        return ChatTexts(errors=[(key, f"must be a list of messages ({{role, content}}), got {kind}")])
    turns: list[_Turn] = []
    errors: list[tuple[str, str]] = []
    for i, message in enumerate(messages):
        turn = _turn(message, f"{key}.{i}", errors)
        if turn is not None:
            turns.append(turn)
    if errors:
        return ChatTexts(errors=errors)
    out = _last(turns, "assistant", len(turns))
    cut = out if out is not None else len(turns)
    user = _last(turns, "user", cut)
    tools = [r for t in turns[:cut] for r in ([t.text] if t.role == "tool" else t.tool_results)]
    context = _CONTEXT_JOIN.join(r for r in tools if r.strip())
    return ChatTexts(
        input=turns[user].text if user is not None else None,
        output=turns[out].text if out is not None else None,
        context=context or None,
    )


def _last(turns: list[_Turn], role: str, before: int) -> int | None:
    return next((i for i in range(before - 1, -1, -1)
                 if turns[i].role == role and turns[i].text.strip()), None)


def _turn(message: Any, where: str, errors: list[tuple[str, str]]) -> _Turn | None:
    if not isinstance(message, Mapping):
        kind = type(message).__name__
        errors.append((where, f"must be an object with role and content, got {kind}"))
        return None
    role_key = "from" if "from" in message and "role" not in message else "role"
    role = message.get(role_key)
    if not isinstance(role, str) or not role.strip():
        errors.append((f"{where}.{role_key}", "missing; expected user, assistant, tool or system"))
        return None
    content_key = next((k for k in ("content", "value", "text") if k in message), "content")
    texts, results = _content(message.get(content_key), f"{where}.{content_key}", errors)
    return _Turn(_ROLES.get(role.strip().lower(), "other"), "\n".join(texts), results)


def _content(value: Any, where: str, errors: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(text pieces, tool results) of one message's content."""
    if value is None:
        return [], []  # an assistant turn that only calls a tool
    if isinstance(value, str):
        return [value], []
    if not isinstance(value, list):
        kind = type(value).__name__
        errors.append((where, f"must be text or a list of content parts, got {kind}"))
        return [], []
    texts: list[str] = []
    results: list[str] = []
    for j, part in enumerate(value):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS:
            text = part.get("text")
            if not isinstance(text, str):
                errors.append((f"{where}.{j}.text", f"must be text, got {type(text).__name__}"))
            else:
                texts.append(text)
        elif isinstance(part, Mapping) and part.get("type") == "tool_result":
            inner, _ = _content(part.get("content"), f"{where}.{j}.content", errors)
            results.append("\n".join(inner))
    return texts, results
