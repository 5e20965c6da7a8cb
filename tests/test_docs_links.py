"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and a
`#anchor` is one of the target page's headings.

Why a test: the README sends readers to task pages, which send them to each other's sections;
a page renamed or a heading reworded breaks those links silently (GitHub renders a dead link
as an ordinary one).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.doc_pages import ROOT, anchors, doc_pages, links, rel, slug


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """`PAGE:LINE: TARGET: why` for each relative link of PAGE that does not resolve to a file
    under ROOT (and, with an anchor, to one of its headings)."""
    bad: list[str] = []
    for target, line in links(page):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # a web address (or mailto:): not checked offline
        where = f"{page.relative_to(root)}:{line}: {target}"
        dest = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not dest.exists():
            bad.append(f"{where}: no such file")
        elif not dest.is_relative_to(root):
            bad.append(f"{where}: outside the repository")
        elif parts.fragment:
            if dest.suffix != ".md":
                bad.append(f"{where}: an anchor into a file that is not markdown")
            elif parts.fragment not in anchors(dest):
                bad.append(f"{where}: {dest.relative_to(root)} has no heading with that anchor")
    return bad


@pytest.mark.parametrize("page", doc_pages(), ids=rel)
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_slugs_follow_github() -> None:
    assert slug("A red-team audit, end to end") == "a-red-team-audit-end-to-end"
    assert slug("Choosing GPUs: `--gpu`") == "choosing-gpus---gpu"
    assert slug("Judge servers (`--judge-url`)") == "judge-servers---judge-url"
    assert slug("What `bundle build` does") == "what-bundle-build-does"


def test_the_check_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Same\n\n## Same\n")
    page.write_text("# Here\n\n[ok](other.md#same-1) [self](#here) [web](https://example.com)\n"
                    "[gone](nowhere.md) [bad anchor](other.md#missing) [self bad](#there)\n")
    assert broken_links(page, tmp_path) == [
        "page.md:3: nowhere.md: no such file",
        "page.md:3: other.md#missing: other.md has no heading with that anchor",
        "page.md:3: #there: page.md has no heading with that anchor",
    ]


def test_the_readme_leads_to_every_docs_page() -> None:
    """The README is the front door: a page it does not link is a page no one finds."""
    linked = {(ROOT / urlsplit(t).path).resolve() for t, _ in links(ROOT / "README.md")
              if not urlsplit(t).scheme}  # fmt: skip
    assert [rel(p) for p in doc_pages()[1:] if p.resolve() not in linked] == []
