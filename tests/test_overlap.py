"""overlap.py's counts must give the reference libraries' scores bit for bit, not approximately.

Random texts from a small vocabulary (so n-grams repeat and match), with capitals, punctuation,
stemmable words, empty and very short sides: the cases where clipping, smoothing, brevity and
rouge-score's integer zeros differ.
"""

from __future__ import annotations

import random

import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from nexagauge_local.scoring.lexical import LexicalScorer, _unit
from nexagauge_local.scoring.overlap import lcs_length, ngram_matches

VOCAB = ["the", "The", "cat", "cats", "sat", "sitting", "on", "mat", "mat.", "a", "runs", "running",
         "Paris,", "France", "is", "in", "100", "°C", "-", "(it)", "quick", "quickly", "and", "&amp;"]


def _text(rng: random.Random) -> str:
    n = rng.choice([0, 1, 2, 3, 4, 5, 8, 13, 30, 70])
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def _pairs(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = [(_text(rng), _text(rng)) for _ in range(count)]
    pairs += [(r, r) for r, _ in pairs[:20]]  # identical sides: every order matches
    return pairs + [("", ""), ("", "the cat"), ("the cat", ""), ("a", "a"), ("- -", "(it)")]


def _lcs_table_length(a: list[str], b: list[str]) -> int:
    return rouge_scorer._lcs_table(a, b)[-1][-1]


@pytest.mark.parametrize("seed", [1, 2])
def test_lcs_length_equals_rouge_score_table(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randrange(0, 90))]
        b = [rng.choice("abcdef") for _ in range(rng.randrange(0, 90))]
        assert lcs_length(a, b) == _lcs_table_length(a, b)


def test_ngram_matches_equal_nltk_modified_precision() -> None:
    from nltk.translate.bleu_score import modified_precision

    for ref, hyp in _pairs(300, seed=3):
        r, h = ref.split(), hyp.split()
        matches, totals = ngram_matches(r, h, 4)
        for n in range(1, 5):
            p = modified_precision([r], h, n)
            assert (matches[n - 1], max(1, totals[n - 1])) == (p.numerator, p.denominator)


def test_rouge_equals_rouge_score_exactly() -> None:
    ours = LexicalScorer()
    theirs = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for ref, hyp in _pairs(400, seed=4):
        got = ours.rouge(ref, hyp)
        want = theirs.score(ref, hyp)
        assert list(got) == ["rouge1", "rouge2", "rougeL"]
        for name, score in want.items():
            assert got[name] == {"precision": score.precision, "recall": score.recall,
                                 "fmeasure": score.fmeasure}, (name, ref, hyp)
            assert [type(v) for v in got[name].values()] == [type(v) for v in score]


def test_bleu_equals_nltk_and_sacrebleu_exactly() -> None:
    ours = LexicalScorer()
    sacre = BLEU(smooth_method="exp", effective_order=True)
    method1 = SmoothingFunction().method1
    for ref, hyp in _pairs(400, seed=5):
        got = ours.bleu(ref, hyp)
        assert got["score"] == _unit(float(sentence_bleu([ref.split()], hyp.split(), smoothing_function=method1)))
        b = sacre.sentence_score(hyp, [ref])
        assert got["sacrebleu"] == _unit(b.score / 100.0), (ref, hyp)
        assert got["sacrebleu_brevity_penalty"] == b.bp
        assert got["sacrebleu_precisions"] == [p / 100.0 for p in b.precisions]


def test_tokenize_13a_equals_sacrebleu() -> None:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    from nexagauge_local.scoring.tok13a import tokenize_13a

    theirs = Tokenizer13a()
    rng = random.Random(6)
    alphabet = [chr(c) for c in range(32, 127)] + ["\n", "-\n", "\t", "é", "°", "—", "&quot;", "&amp;",
                                                   "&lt;", "<skipped>", "1.5", "3,000", "9-"]
    for _ in range(2000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert tokenize_13a(line) == theirs(line), repr(line)
    for ref, hyp in _pairs(100, seed=7):
        assert tokenize_13a(hyp) == theirs(hyp)
