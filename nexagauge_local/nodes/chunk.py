"""chunk: sentence-aligned chunks of the output (and the reference, for refalign).

pysbd is rule-based and needs no download (nltk's punkt is a run-time download). Short
sentences are merged up to `max_chars` so a chunk is a unit a claim or an alignment can use;
a chunk never splits a sentence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import pysbd

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.spec import NodeSpec

MAX_CHARS = 320


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False, char_span=False)


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for para in text.split("\n"):
        if para.strip():
            out.extend(s.strip() for s in _segmenter().segment(para) if s.strip())
    return out


def chunk_text(text: str, max_chars: int = MAX_CHARS) -> list[str]:
    """Group whole sentences into chunks of at most max_chars (a longer sentence stands alone).

    A text that fits in one chunk is that chunk (its lines joined by spaces) without running
    the segmenter: the grouping could only put all its sentences back together, and pysbd's
    rules cost ~0.7 ms a text, which was a tenth of refalign's time on short answers.
    """
    if len(text) <= max_chars:
        joined = " ".join(line.strip() for line in text.split("\n") if line.strip())
        return [joined] if joined else []
    return group_sentences(sentences(text), max_chars)


def group_sentences(sents: Iterable[str], max_chars: int) -> list[str]:
    """Consecutive sentences joined by spaces while they fit in max_chars; the grouping
    itself, without chunk_text's short-text shortcut (its tests compare the two)."""
    chunks: list[str] = []
    current = ""
    for sent in sents:
        if current and len(current) + 1 + len(sent) > max_chars:
            chunks.append(current)
            current = sent
        else:
            current = f"{current} {sent}" if current else sent
    if current:
        chunks.append(current)
    return chunks


SPEC = NodeSpec("chunk", ("scan",), ("output",), "utility",
                "split output (and reference) into sentence-aligned chunks",
                order=1, impl=f"{__name__}:ChunkNode")


class ChunkNode(NodeBase):
    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        for state in states:
            case = state.case
            ref = case.field("reference")
            state.artifacts[self.name] = {
                "output": chunk_text(case.output),
                "reference": chunk_text(ref) if ref else [],
            }
            ctx.advance(self.name, 1)
