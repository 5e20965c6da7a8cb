"""ROUGE, BLEU and METEOR through their reference libraries, so figures match what papers report.

Porter stemming is most of the cost (ROUGE and METEOR both stem every token of every case), and
a dataset repeats the same words endlessly, so one memoised stemmer is shared by both metrics.
Stemming is a pure function: the memo changes speed, never a score.
"""

from __future__ import annotations

from typing import Any

import sacrebleu
from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer, tokenize
from rouge_score.tokenizers import Tokenizer

from nexagauge_local.scoring.meteor import meteor

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def _unit(x: float) -> float:
    """Clamp float noise (100.00000000000004 / 100) back into [0, 1]."""
    return min(1.0, max(0.0, x))


class MemoStemmer(PorterStemmer):
    """nltk's PorterStemmer (the one rouge-score and nltk's METEOR use) with a bounded memo."""

    def __init__(self, max_entries: int = 200_000):
        super().__init__()
        self._memo: dict[tuple[str, bool], str] = {}
        self._max = max_entries

    def stem(self, word: str, to_lowercase: bool = True) -> str:
        key = (word, to_lowercase)
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= self._max:
                self._memo.clear()
            hit = self._memo[key] = super().stem(word, to_lowercase)
        return hit


class _RougeTokenizer(Tokenizer):
    """rouge-score's default tokenisation, with our memoised stemmer."""

    def __init__(self, stemmer: PorterStemmer):
        self._stemmer = stemmer

    def tokenize(self, text: str) -> list[str]:
        return tokenize.tokenize(text, self._stemmer)


class LexicalScorer:
    """Holds the shared stemmer and ROUGE scorer for one run."""

    def __init__(self) -> None:
        self.stemmer = MemoStemmer()
        self._rouge = rouge_scorer.RougeScorer(list(ROUGE_TYPES), tokenizer=_RougeTokenizer(self.stemmer))

    def rouge(self, reference: str, hypothesis: str) -> dict[str, dict[str, float]]:
        scores = self._rouge.score(reference, hypothesis)
        return {
            name: {"precision": s.precision, "recall": s.recall, "fmeasure": s.fmeasure}
            for name, s in scores.items()
        }

    @staticmethod
    def bleu(reference: str, hypothesis: str) -> dict[str, Any]:
        """Sentence BLEU (sacrebleu defaults: 13a tokenizer, exp smoothing), scaled to [0, 1]."""
        b = sacrebleu.sentence_bleu(hypothesis, [reference])
        return {
            "score": _unit(b.score / 100.0),  # sacrebleu's 0-100 scale, back to [0, 1]
            "brevity_penalty": b.bp,
            "precisions": [p / 100.0 for p in b.precisions],
        }

    def meteor(self, reference: str, hypothesis: str, wordnet: Any) -> float:
        return _unit(meteor(reference, hypothesis, wordnet, self.stemmer))
