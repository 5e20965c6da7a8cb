"""refalign on hand-made pairs with the real bundled embedding model."""

from __future__ import annotations

import numpy as np
import pytest

from nexagauge_local.embed import Embedder
from nexagauge_local.nodes.refiner import dedupe, mmr
from nexagauge_local.scoring.alignment import align


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


def _align(embedder: Embedder, out: list[str], ref: list[str], threshold: float = 0.8):
    return align(out, embedder.encode(out), ref, embedder.encode(ref), threshold)


def test_paraphrase_matches(embedder: Embedder) -> None:
    a = _align(embedder, ["The Eiffel Tower is located in Paris, France."],
               ["The Eiffel Tower stands in Paris, France."])
    assert a.precision == a.recall == a.f1 == 1.0
    assert a.matched[0]["similarity"] >= 0.8
    assert a.global_cosine > 0.8


def test_unrelated_does_not_match(embedder: Embedder) -> None:
    a = _align(embedder, ["The stock market fell sharply on Tuesday."],
               ["Photosynthesis turns light into chemical energy in plants."])
    assert a.f1 == 0.0
    assert a.missed == ["Photosynthesis turns light into chemical energy in plants."]
    assert a.extra == ["The stock market fell sharply on Tuesday."]
    assert a.global_cosine < 0.3


def test_one_to_one_matching_and_partial_recall(embedder: Embedder) -> None:
    out = ["The Eiffel Tower is located in Paris, France.", "The Eiffel Tower is in Paris."]
    ref = ["The Eiffel Tower stands in Paris, France.", "It was completed in 1889 for the World's Fair."]
    a = _align(embedder, out, ref)
    # two output units about Paris cannot both claim the single Paris reference unit
    assert len(a.matched) == 1
    assert a.precision == 0.5 and a.recall == 0.5
    assert a.missed == ["It was completed in 1889 for the World's Fair."]


def test_empty_sides() -> None:
    empty = np.zeros((0, 4), dtype=np.float32)
    a = align([], empty, ["x"], np.ones((1, 4), dtype=np.float32), 0.8)
    assert (a.precision, a.recall, a.f1) == (0.0, 0.0, 0.0)
    assert a.missed == ["x"]


def test_dedupe_drops_near_duplicates() -> None:
    v = np.array([[1.0, 0.0], [0.999, 0.0447], [0.0, 1.0]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert dedupe(v, 0.95) == [0, 2]


def test_mmr_picks_diverse_units() -> None:
    v = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0], [0.7, 0.7]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    chosen = mmr(v, 2)
    assert len(chosen) == 2
    assert not {0, 1} <= set(chosen)  # never both of the near-identical pair
