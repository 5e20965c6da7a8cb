"""ROUGE, BLEU and METEOR through their reference libraries, computed as nexa-gauge computes them.

Users who move from nexa-gauge need the same numbers on the same file (issue 20), so each metric
is nexa-gauge 0.1.19's call: rouge-score with the Porter stemmer, nltk `sentence_bleu` on
`str.split()` tokens with smoothing method1, nltk `meteor_score` on `str.split()` tokens.
sacreBLEU's standard figure travels beside BLEU for comparison with papers.

Porter stemming is most of the cost (ROUGE and METEOR both stem every token of every case), and
a dataset repeats the same words endlessly, so one memoised stemmer is shared by both metrics.
Stemming is a pure function: the memo changes speed, never a score.
"""

from __future__ import annotations

from typing import Any

from sacrebleu.metrics import BLEU

from nexagauge_local.scoring.nltk_light import load_nltk

load_nltk()

from nltk.stem.porter import PorterStemmer
from nltk.translate.bleu_score import SmoothingFunction, brevity_penalty, sentence_bleu
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
        # sacrebleu.sentence_bleu's settings, built once rather than once per case
        self._sacrebleu = BLEU(smooth_method="exp", effective_order=True)

    def rouge(self, reference: str, hypothesis: str) -> dict[str, dict[str, float]]:
        scores = self._rouge.score(reference, hypothesis)
        return {
            name: {"precision": s.precision, "recall": s.recall, "fmeasure": s.fmeasure}
            for name, s in scores.items()
        }

    def bleu(self, reference: str, hypothesis: str) -> dict[str, Any]:
        """Sentence BLEU in [0, 1] as nexa-gauge computes it, with sacreBLEU's beside it.

        `score` is nltk `sentence_bleu([reference.split()], hypothesis.split(),
        smoothing_function=SmoothingFunction().method1)` with the default 4-gram uniform weights,
        case-sensitive, exactly nexa-gauge's call: drop-in numbers for its users. Splitting on
        whitespace keeps punctuation on words ("Canberra." is not "Canberra") and method1 puts
        0.1 on an order with no match, so short answers score lower than in sacreBLEU.
        `sacrebleu` is sacreBLEU's sentence BLEU (13a tokenizer, exp smoothing), the figure
        papers report, for anyone who compares with them.
        """
        ref, hyp = reference.split(), hypothesis.split()
        nltk_score = sentence_bleu([ref], hyp, smoothing_function=SmoothingFunction().method1)
        b = self._sacrebleu.sentence_score(hypothesis, [reference])
        return {
            "score": _unit(float(nltk_score)),  # nltk returns int 0 when nothing matches
            "definition": "nltk sentence_bleu, str.split tokens, smoothing method1 (as nexa-gauge)",
            "brevity_penalty": brevity_penalty(len(ref), len(hyp)),  # nltk: 0 for an empty output
            "sacrebleu": _unit(b.score / 100.0),  # sacrebleu's 0-100 scale, back to [0, 1]
            "sacrebleu_brevity_penalty": b.bp,
            "sacrebleu_precisions": [p / 100.0 for p in b.precisions],
        }

    def meteor(self, reference: str, hypothesis: str, wordnet: Any) -> float:
        return _unit(meteor(reference, hypothesis, wordnet, self.stemmer))
