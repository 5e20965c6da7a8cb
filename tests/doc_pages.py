"""The user documentation as the tests read it: README.md and docs/*.md, parsed with
markdown-it (a CommonMark parser, already installed with rich), so a fence inside a list item
or a link split over two lines is found where a regex would miss it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[1]


def doc_pages() -> list[Path]:
    """README.md and every page of docs/, the files a user reads."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


@cache
def tokens(page: Path) -> tuple[Token, ...]:
    return tuple(MarkdownIt("commonmark").enable("table").parse(page.read_text(encoding="utf-8")))


def _walk(items: tuple[Token, ...] | list[Token]) -> Iterator[Token]:
    for token in items:
        yield token
        if token.children:
            yield from _walk(token.children)


@dataclass(frozen=True)
class Fence:
    """A fenced code block: its info string (`bash`, `toml`, empty), text and first line."""

    info: str
    text: str
    line: int


def fences(page: Path) -> list[Fence]:
    return [Fence(t.info.strip(), t.content, (t.map[0] + 1) if t.map else 0)
            for t in tokens(page) if t.type in ("fence", "code_block")]  # fmt: skip


def links(page: Path) -> list[tuple[str, int]]:
    """(target, line) of every link and image in the page; the line is where its paragraph
    or table row starts (markdown-it maps blocks, not inline spans)."""
    found: list[tuple[str, int]] = []
    line = 0
    for token in _walk(list(tokens(page))):
        if token.map:
            line = token.map[0] + 1
        if token.type == "link_open":
            found.append((str(token.attrGet("href") or ""), line))
        elif token.type == "image":
            found.append((str(token.attrGet("src") or ""), line))
    return found


# GitHub keeps letters, marks, digits, connector punctuation (`_`), spaces and hyphens.
_NOT_IN_SLUG = re.compile(r"[^\w\- ]")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub renders it: lower case, punctuation dropped (backticks
    included: `--gpu` gives `--gpu`), each space a hyphen."""
    return _NOT_IN_SLUG.sub("", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every `#anchor` the page's headings give, a repeated heading's as `-1`, `-2`, ..."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    items = tokens(page)
    for i, token in enumerate(items):
        if token.type != "heading_open":
            continue
        inline = items[i + 1]
        text = "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
        base = slug(text)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out
