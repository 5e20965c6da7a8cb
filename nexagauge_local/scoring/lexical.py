"""ROUGE, BLEU and METEOR through their reference libraries, computed as nexa-gauge computes them.

Users who move from nexa-gauge need the same numbers on the same file, so each metric
is nexa-gauge 0.1.19's call: rouge-score with the Porter stemmer, nltk `sentence_bleu` on
`str.split()` tokens with smoothing method1, nltk `meteor_score` on `str.split()` tokens.
sacreBLEU's standard figure travels beside BLEU for comparison with papers.

A dataset repeats the same words endlessly, so one memoised Porter stemmer is shared by ROUGE
and METEOR. Stemming is a pure function: the memo changes speed, never a score.

Tokenisation, stemming, METEOR and every formula are the libraries'; only the counting loops
under ROUGE-L (the LCS length) and both BLEUs (clipped n-gram matches) are overlap.py's, which
gives the same integers several times faster (the reasons are there).
"""

from __future__ import annotations

import math
from typing import Any

from sacrebleu.metrics import BLEU

from nexagauge_local.scoring.nltk_light import load_nltk

load_nltk()

from nltk.stem.porter import PorterStemmer
from nltk.translate.bleu_score import SmoothingFunction, brevity_penalty
from rouge_score import scoring, tokenize

from nexagauge_local.scoring.meteor import meteor
from nexagauge_local.scoring.overlap import lcs_length, ngram_f, ngram_matches
from nexagauge_local.scoring.tok13a import tokenize_13a

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def _prf(precision: float, recall: float) -> dict[str, float]:
    return {"precision": precision, "recall": recall, "fmeasure": scoring.fmeasure(precision, recall)}


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


def nltk_bleu_method1(ref: list[str], hyp: list[str]) -> float:
    """nltk `sentence_bleu([ref], hyp, smoothing_function=SmoothingFunction().method1)` with the
    default uniform 4-gram weights, from overlap.ngram_matches' counts.

    nltk's `corpus_bleu` step by step, in its order of operations, so the float is the same bit
    for bit: 0 without a unigram match; p_n = matches / max(1, total) (nltk's Fraction turns
    into exactly this float in math.log), method1 puts epsilon / max(1, total) where matches
    are 0; score = BP * exp(fsum(0.25 * log p_n)).
    """
    matches, totals = ngram_matches(ref, hyp, len(_WEIGHTS))
    if matches[0] == 0:
        return 0.0
    logs = []
    for w, m, t in zip(_WEIGHTS, matches, totals, strict=True):
        den = max(1, t)
        logs.append(w * math.log((m + _EPSILON) / den if m == 0 else m / den))
    return brevity_penalty(len(ref), len(hyp)) * math.exp(math.fsum(logs))


_WEIGHTS = (0.25, 0.25, 0.25, 0.25)  # nltk sentence_bleu's default
_EPSILON = SmoothingFunction().epsilon  # method1's 0.1


class LexicalScorer:
    """Holds the shared stemmer and ROUGE scorer for one run."""

    def __init__(self) -> None:
        self.stemmer = MemoStemmer()
        # sacrebleu.sentence_bleu's settings, built once rather than once per case
        self._sacrebleu = BLEU(smooth_method="exp", effective_order=True)

    def rouge(self, reference: str, hypothesis: str) -> dict[str, dict[str, float]]:
        """rouge-score's `RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score`:
        its tokenizer and its P/R/F formulas, on overlap.py's counts."""
        ref = tokenize.tokenize(reference, self.stemmer)
        hyp = tokenize.tokenize(hypothesis, self.stemmer)
        out: dict[str, dict[str, float]] = {}
        for name, n in (("rouge1", 1), ("rouge2", 2)):
            overlap, n_ref, n_hyp = ngram_f(ref, hyp, n)
            out[name] = _prf(overlap / max(n_hyp, 1), overlap / max(n_ref, 1))
        if not ref or not hyp:  # rouge-score's _score_lcs: integer zeros
            out["rougeL"] = {"precision": 0, "recall": 0, "fmeasure": 0}
        else:
            lcs = lcs_length(ref, hyp)
            out["rougeL"] = _prf(lcs / len(hyp), lcs / len(ref))
        return out

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
        nltk_score = nltk_bleu_method1(ref, hyp)
        b = self._sacrebleu_score(reference, hypothesis)
        return {
            "score": _unit(float(nltk_score)),  # nltk returns int 0 when nothing matches
            "definition": "nltk sentence_bleu, str.split tokens, smoothing method1 (as nexa-gauge)",
            "brevity_penalty": brevity_penalty(len(ref), len(hyp)),  # nltk: 0 for an empty output
            "sacrebleu": _unit(b.score / 100.0),  # sacrebleu's 0-100 scale, back to [0, 1]
            "sacrebleu_brevity_penalty": b.bp,
            "sacrebleu_precisions": [p / 100.0 for p in b.precisions],
        }

    def _sacrebleu_score(self, reference: str, hypothesis: str) -> Any:
        """`BLEU(smooth_method="exp", effective_order=True).sentence_score(hypothesis,
        [reference])`: its 13a tokens (tok13a.py) and sacreBLEU's own score formula
        (`_compute_score_from_stats`) on the statistics list its `_compute_segment_statistics`
        builds, [hyp_len, ref_len, correct_1..4, total_1..4], counted by overlap.py."""
        bleu = self._sacrebleu
        hyp = tokenize_13a(hypothesis.rstrip()).split()  # BLEU's _preprocess_segment, 13a, cased
        ref = tokenize_13a(reference.rstrip()).split()
        correct, total = ngram_matches(ref, hyp, bleu.max_ngram_order)
        return bleu._compute_score_from_stats([len(hyp), len(ref), *correct, *total])

    def meteor(self, reference: str, hypothesis: str, wordnet: Any) -> float:
        return _unit(meteor(reference, hypothesis, wordnet, self.stemmer))
