"""readers/json_stream.py: a JSON array read element by element gives exactly what `json.load`
gave (case ids and the audit's record hashes are computed from it), wherever the read window
happens to cut the text, and a syntax error on the line json names."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from nexagauge_local.audit.hashing import canonical_json, sha256_bytes
from nexagauge_local.audit.inputs import hash_records
from nexagauge_local.graph import BLOCKS
from nexagauge_local.readers import iter_raw
from nexagauge_local.readers.json_stream import (
    JsonSyntaxError,
    NotAnArray,
    _Window,
    iter_array,
    value_type,
)
from nexagauge_local.records import RawRecord, normalise
from tests.input_data import compress

SAMPLE = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"

# Values json.load reads and a streaming library may not: ijson's C backend turns "\ud800"
# into "?" and refuses ints past 64 bits; no ijson backend reads NaN or Infinity.
TRICKY = r"""[
  {"floats": [1.0, 1e5, 1E-7, -0.0, 0.1, 123.456789012345678901, 1.5e308, 1e400],
   "ints": [0, -0, 12345678901234567890123, -9223372036854775809],
   "specials": [NaN, Infinity, -Infinity],
   "text": "caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n\t\u0000 café 😀",
   "lone": ["\ud800", "\udc00x", "\ud83d"],
   "\ud800key": true,
   "nested": {"a": [{"b": {"c": [[], {}, null, false]}}]},
   "dup": 1, "dup": 2},
  {"output": "second", "empty": "", "list": [1, [2, [3]]]}
]"""


@pytest.fixture(params=[1, 3, 7, 64, _Window.CHUNK])
def window(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Windows down to one character, so every value is cut somewhere by some window."""
    monkeypatch.setattr(_Window, "CHUNK", request.param)
    return int(request.param)


def streamed(text: str) -> list[Any]:
    return list(iter_array(io.StringIO(text)))


def test_tricky_values_are_what_json_load_gives(window: int) -> None:
    # repr, not ==: nan != nan, and 1 == 1.0 would hide a float read as an int
    assert repr(streamed(TRICKY)) == repr(json.loads(TRICKY))


def test_sample_dataset_as_an_array_gives_the_same_records_and_case_ids(
        tmp_path: Path, window: int) -> None:
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    text = json.dumps(records, indent=2, ensure_ascii=False)
    path = tmp_path / "sample.json"
    path.write_text(text, encoding="utf-8")
    raws = list(iter_raw(path))
    assert [r.data for r in raws] == json.loads(text)
    loaded = [RawRecord(data, r.source) for data, r in zip(json.loads(text), raws, strict=True)]
    assert [normalise(r, {}, blocks=BLOCKS) for r in raws] == [
        normalise(r, {}, blocks=BLOCKS) for r in loaded]  # case ids are content hashes
    expected = [sha256_bytes(canonical_json(item)) for item in json.loads(text)]
    assert [d.sha256 for d in hash_records(path)] == expected


def test_a_compressed_array_streams_the_same_records(tmp_path: Path) -> None:
    path = tmp_path / "tricky.json.gz"
    path.write_bytes(compress(TRICKY.encode("utf-8"), "gzip"))
    assert repr([r.data for r in iter_raw(path)]) == repr(json.loads(TRICKY))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig"])
def test_an_array_with_a_byte_order_mark(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "data.json"
    path.write_bytes(TRICKY.encode(encoding, errors="surrogatepass"))
    assert repr([r.data for r in iter_raw(path)]) == repr(json.loads(TRICKY))


@pytest.mark.parametrize("text", [
    '[\n  {"a": 1},\n  {"a": \n]\n',  # a value missing
    '[{"a": 1}\n {"a": 2}]',  # a comma missing
    '[{"a": 1},\n]',  # a trailing comma
    '[{"a": "x\ty"}]',  # a control character inside a string
    '[{"a": "unterminated\n',
    '[{"a": 1}]\n\n{"b": 2}',  # text after the array
    '[{"a": 1}, {"a": 2}',  # cut short
    "[",
    '[{"a": tru}]',
    '[{"a": 1.}]',
])
def test_syntax_errors_are_on_the_line_json_names(text: str, window: int) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(JsonSyntaxError) as got:
        streamed(text)
    assert got.value.lineno == expected.value.lineno, (got.value, expected.value)


def test_records_before_a_syntax_error_are_yielded_first() -> None:
    elements = iter_array(io.StringIO('[{"a": 1}, {"a": 2}, {"a": }]'))
    assert [next(elements), next(elements)] == [{"a": 1}, {"a": 2}]
    with pytest.raises(JsonSyntaxError):
        next(elements)


@pytest.mark.parametrize("text", ['{"a": [1]}', '"x"', "", "  \n"])
def test_text_that_is_not_an_array(text: str) -> None:
    with pytest.raises(NotAnArray):
        streamed(text)


@pytest.mark.parametrize(("text", "kind"), [
    ("[1, 2]", list), ('\n{"a": [1]}\n', dict), ('"x"', str), ("3", int), ("[]", list)])
def test_value_type_is_the_type_json_load_gives(text: str, kind: type, window: int) -> None:
    assert value_type(io.StringIO(text)) is kind is type(json.loads(text))


@pytest.mark.parametrize("text", ['{"a": 1}\n{"b": 2}\n', "[1, 2] x", '{"a": 1', ""])
def test_value_type_refuses_what_json_load_refuses(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(JsonSyntaxError):
        value_type(io.StringIO(text))


def test_random_arrays_cut_anywhere_match_json_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random nesting and values, some with one character cut, dropped or added: the records,
    or the error's line, are json.load's for every window size."""
    rnd = random.Random(45)
    atoms = ["1", "-0", "1.0", "1e5", "12345678901234567890123", "NaN", "-Infinity", "true",
             "null", '"x"', r'"\ud800"', r'"\udc00\ud83d\ude00"', '"a\\nb\\"c"', '""']

    def value(depth: int = 0) -> str:
        roll = rnd.random()
        if depth > 3 or roll < 0.4:
            return rnd.choice(atoms)
        ws = rnd.choice(["", " ", "\n  "])
        if roll < 0.7:
            return "[" + ws + f",{ws}".join(value(depth + 1) for _ in range(rnd.randint(0, 3))) + "]"
        pairs = (f'"{rnd.choice("abk")}"{ws}:{ws}{value(depth + 1)}' for _ in range(rnd.randint(0, 3)))
        return "{" + ",".join(pairs) + ws + "}"

    for _ in range(300):
        text = "[" + ",\n ".join(value() for _ in range(rnd.randint(0, 5))) + "]\n"
        if rnd.random() < 0.5:
            at = rnd.randrange(len(text))
            text = rnd.choice([text[:at], text[:at] + text[at + 1:], text[:at] + ",]:x\n" + text[at:]])
        try:
            expected: Any = repr(json.loads(text))
        except json.JSONDecodeError as exc:
            expected = exc.lineno
        if not text.lstrip().startswith("["):
            continue
        for size in (1, 5, 64):
            monkeypatch.setattr(_Window, "CHUNK", size)
            try:
                got: Any = repr(streamed(text))
            except JsonSyntaxError as exc:
                got = exc.lineno
            assert got == expected, (text, size)
