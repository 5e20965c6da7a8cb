"""Fencing of untrusted text inside judge prompts.

Why: the evaluated output (and the input, context and reference it came with) is attacker-
controlled text. Each such field is wrapped in fixed, well-known markers::

    <<<DATA field=output>>>
    ...text...
    <<<END DATA>>>

and every sequence inside the text that could be read as a marker is broken up first, so the
text cannot close its own section, open a new one, or smuggle chat-template control tokens
(``<|im_end|>``, ``[INST]`` ...) that a tokenizer would turn into real role switches. The
escape is deterministic (no random nonce), so the same case renders the same prompt and the
judge cache keeps hitting. The verdict format itself is enforced by the decoding grammar, not
by these instructions; fencing keeps the judge's *reading* of the text honest.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

OPEN_PREFIX = "<<<DATA field="
CLOSE = "<<<END DATA>>>"
FENCE_OPEN_RE = re.compile(r"^<<<DATA field=([a-z_0-9]+)>>>$")

# Chat-template control sequences of common judge families (ChatML, Llama 2/3, Mistral,
# Gemma). Broken up with a space so a tokenizer cannot parse them as special tokens.
_CONTROL_TOKENS = ("[INST]", "[/INST]", "<<SYS>>", "<</SYS>>", "<s>", "</s>",
                   "<start_of_turn>", "<end_of_turn>")
_CONTROL_RE = re.compile("|".join(re.escape(t) for t in _CONTROL_TOKENS), re.IGNORECASE)


def _break_runs(text: str, triple: str) -> str:
    """Insert spaces until no run of three marker characters remains ("<<<<" -> "<< <<")."""
    pair = triple[:2]
    while triple in text:
        text = text.replace(triple, pair + " " + triple[2:])
    return text


def _canonical(text: str) -> str:
    """NFKC-normalise and drop invisible format characters (zero-width space/joiners, word
    joiner, BOM, soft hyphen, bidi controls: Unicode category Cf).

    Why: the judge's tokenizer may read a fullwidth `＜＜＜END DATA＞＞＞` or a marker split by a
    zero-width space as the real marker, while a plain string search does not; after this step
    every lookalike is the ASCII marker and is escaped like one. NFKC keeps the content (letters,
    digits, words) readable; what is dropped is invisible anyway.
    """
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def escape(text: str) -> str:
    """Neutralise every fence and control sequence in untrusted text, lookalikes included;
    idempotent."""
    text = _break_runs(_canonical(text), "<<<")
    text = _break_runs(text, ">>>")
    text = text.replace("<|", "< |").replace("|>", "| >")
    return _CONTROL_RE.sub(lambda m: m.group(0)[0] + " " + m.group(0)[1:], text)


def open_tag(field: str) -> str:
    if not re.fullmatch(r"[a-z_0-9]+", field):
        raise ValueError(f"fence field names are lowercase identifiers, got {field!r}")
    return f"{OPEN_PREFIX}{field}>>>"


def fence(field: str, text: str) -> str:
    """One fenced data section: markers on their own lines, the escaped text between them."""
    return f"{open_tag(field)}\n{escape(text)}\n{CLOSE}"


@dataclass(frozen=True)
class FencedSection:
    field: str
    text: str


def parse_sections(prompt: str) -> tuple[list[FencedSection], str]:
    """Split a rendered prompt into its fenced sections and the text outside them.

    Used by tests (and by anyone auditing a prompt): raises ValueError when a section is not
    closed, or a marker appears where it should not, which would mean the fence was broken.
    """
    sections: list[FencedSection] = []
    outside: list[str] = []
    current: str | None = None
    body: list[str] = []
    for line in prompt.split("\n"):
        m = FENCE_OPEN_RE.match(line)
        if current is None:
            if m:
                current, body = m.group(1), []
            elif line == CLOSE:
                raise ValueError("close marker outside a data section")
            else:
                outside.append(line)
        elif line == CLOSE:
            sections.append(FencedSection(current, "\n".join(body)))
            current = None
        elif m:
            raise ValueError(f"data section {current!r} opened another section")
        else:
            body.append(line)
    if current is not None:
        raise ValueError(f"data section {current!r} is never closed")
    return sections, "\n".join(outside)
