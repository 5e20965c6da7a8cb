"""Escaping untrusted text for the report, and marking evidence spans inside it.

Every evaluated text (outputs, inputs, contexts, judge reasoning) is attacker-controlled in a
red-team run, so it is HTML-escaped with markupsafe before it reaches the page. Slashes are
also written as `&#47;`: the browser shows them unchanged, but the file then never contains
`//`, so the page's "no remote references" guarantee holds even for texts that quote URLs.
"""

from __future__ import annotations

from collections.abc import Iterable

from markupsafe import Markup, escape


def safe_text(value: object) -> Markup:
    """Escaped text with every '/' as an entity; Markup passes through (already safe)."""
    if isinstance(value, Markup):
        return value
    return Markup(str(escape(str(value))).replace("/", "&#47;"))


def span_intervals(text: str, spans: Iterable[str]) -> list[tuple[int, int]]:
    """Character intervals of every occurrence of every span, merged where they overlap.

    Spans are verbatim substrings by construction (the redteam node moves the rest to
    `unverified_spans`), so exact matching is right; a span that is absent marks nothing.
    """
    found: list[tuple[int, int]] = []
    for span in {s for s in spans if s and s.strip()}:
        start = text.find(span)
        while start != -1:
            found.append((start, start + len(span)))
            start = text.find(span, start + 1)
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(found):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def highlight(text: str, spans: Iterable[str]) -> Markup:
    """`text` escaped, with each evidence span wrapped in <mark>."""
    out: list[str] = []
    pos = 0
    for lo, hi in span_intervals(text, spans):
        out.append(safe_text(text[pos:lo]))
        out.append(Markup("<mark>") + safe_text(text[lo:hi]) + Markup("</mark>"))
        pos = hi
    out.append(safe_text(text[pos:]))
    return Markup("").join(out)


def clip(text: str, limit: int) -> tuple[str, bool]:
    """At most `limit` characters, cut at a word boundary when one is near; (text, was_cut)."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind(" ", int(limit * 0.8), limit)
    return text[: cut if cut > 0 else limit], True
