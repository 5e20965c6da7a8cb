"""nexa-gauge's refalign units (scoring/ng_units.py): chunks of 100 cl100k tokens and its MMR
refiner, offline."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from nexagauge_local.scoring.ng_units import (
    CHUNK_TOKENS,
    chunk_units,
    mmr_refine,
    token_counter,
)

SENTENCE = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris, France. "


def test_a_text_under_100_tokens_is_one_unit_with_its_whitespace_folded() -> None:
    text = "Canberra is the capital\nof  Australia."
    assert token_counter()(text) < CHUNK_TOKENS
    assert chunk_units(text) == ["Canberra is the capital of Australia."]
    assert chunk_units("  \n ") == []


def test_a_longer_text_is_cut_into_chunks_of_at_most_100_tokens() -> None:
    text = SENTENCE * 12  # about 200 tokens
    count = token_counter()
    assert count(text) >= 2 * CHUNK_TOKENS
    units = chunk_units(text)
    assert len(units) >= 2
    assert all(count(u) <= CHUNK_TOKENS for u in units)
    assert "".join(units).replace(" ", "") == text.replace(" ", "")  # nothing lost


def test_special_token_text_is_counted_not_refused() -> None:
    assert token_counter()("see <|endoftext|> here") > 3


def test_the_encoding_loads_with_no_network_and_an_empty_tiktoken_cache(tmp_path) -> None:
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path), "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9"}  # fmt: skip
    code = ("from nexagauge_local.scoring.ng_units import token_counter; "
            "print(token_counter()('hello world'))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True)  # fmt: skip
    assert out.stdout.strip() == "2"


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_mmr_keeps_the_first_then_the_least_similar_and_drops_duplicates() -> None:
    vectors = np.stack([
        _unit(1, 0, 0),
        _unit(0.99, 0.1, 0),  # within 0.7 of the first: a duplicate, dropped
        _unit(0.6, 0.8, 0),   # cosine 0.6 with the first
        _unit(0, 0, 1),       # cosine 0 with the first: chosen second
        _unit(0, 0.6, 0.8),
    ])  # fmt: skip
    assert mmr_refine(vectors, 3) == [0, 2, 3]
    assert mmr_refine(vectors, 2) == [0, 3]
    assert mmr_refine(vectors, None) == [0, 2, 3]  # the last is within 0.7 of the fourth


def test_mmr_edge_cases() -> None:
    one = np.stack([_unit(1, 0)])
    assert mmr_refine(one, 3) == [0]
    assert mmr_refine(one, 0) == []
    assert mmr_refine(np.zeros((0, 2), dtype=np.float32), 3) == []
    same = np.stack([_unit(1, 0)] * 4)
    assert mmr_refine(same, 3) == [0]  # every other one is a duplicate
