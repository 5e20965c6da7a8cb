"""records.py and dataset.py: formats, aliases, field mapping, ids, block validation, messages."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from nexagauge_local.blocks import ProbeBlock, ScoringKnobs
from nexagauge_local.case import Case, SourceRef
from nexagauge_local.dataset import Dataset, Duplicate, shards
from nexagauge_local.graph import BLOCKS as REGISTRY
from nexagauge_local.nodes.geval.block import GevalBlock
from nexagauge_local.nodes.redteam.block import RedteamBlock
from nexagauge_local.nodes.refalign_block import RefalignBlock
from nexagauge_local.records import (
    ALIASES,
    DatasetError,
    RawRecord,
    RecordError,
    RecordsError,
    content_digest,
    detect_format,
    iter_raw,
    logical_fields,
    normalise,
    parse_field_map,
    stable_case_id,
)

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "nexagauge_local" / "data" / "sample.jsonl"
PEER_SAMPLE = REPO.parent / "shared" / "peer" / "sample.json"
BLOCKS = ("geval", "grounding", "relevance", "redteam", "refalign", "probe", "attack")
SRC = SourceRef(file="data.jsonl", line=1)
MISSING_OUTPUT = (
    "output: missing or empty "
    "(looked for: output, generation, response, answer, completion, actual_output)"
)


# ---------------------------------------------------------------- helpers


def norm(data: dict[str, Any], field_map: dict[str, str] | None = None) -> Case | list[RecordError]:
    return normalise(RawRecord(data, SRC), field_map, blocks=REGISTRY)


def case_of(data: dict[str, Any], field_map: dict[str, str] | None = None) -> Case:
    result = norm(data, field_map)
    assert isinstance(result, Case), [str(e) for e in result]
    return result


def errors_of(data: dict[str, Any], field_map: dict[str, str] | None = None) -> list[str]:
    result = norm(data, field_map)
    assert isinstance(result, list), f"expected errors, got {result!r}"
    return [str(e) for e in result]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def load(path: Path, **kw: Any) -> list[Case | RecordError | Duplicate]:
    return list(Dataset(path, **kw, blocks=REGISTRY).items())


def error_lines(path: Path, **kw: Any) -> list[str]:
    return [str(e) for e in Dataset(path, **kw, blocks=REGISTRY).scan().errors]


def only_case(path: Path, **kw: Any) -> Case:
    items = load(path, **kw)
    assert len(items) == 1 and isinstance(items[0], Case), items
    return items[0]


# ---------------------------------------------------------------- aliases

ALIAS_PARAMS = [(logical, alias) for logical, names in ALIASES.items() for alias in names]


@pytest.mark.parametrize(
    ("logical", "alias"), ALIAS_PARAMS, ids=[f"{a}->{lg}" for lg, a in ALIAS_PARAMS]
)
def test_every_alias_maps_to_its_canonical_field(logical: str, alias: str) -> None:
    record: dict[str, Any] = {alias: "value-" + alias}
    if logical != "output":
        record["output"] = "the answer"
    case = case_of(record)
    got = case.case_id if logical == "case_id" else getattr(case, logical)
    assert got == "value-" + alias
    assert alias not in case.extra


@pytest.mark.parametrize(
    ("logical", "alias"), ALIAS_PARAMS, ids=[f"{a}->{lg}" for lg, a in ALIAS_PARAMS]
)
def test_alias_keys_are_case_insensitive(logical: str, alias: str) -> None:
    upper = alias.upper()
    record: dict[str, Any] = {upper: "v"} if logical == "output" else {upper: "v", "Output": "o"}
    case = case_of(record)
    got = case.case_id if logical == "case_id" else getattr(case, logical)
    assert got == "v"
    assert upper not in case.extra


def test_alias_table_matches_design() -> None:
    assert set(ALIASES) == {"case_id", "output", "input", "context", "reference"}
    assert set(ALIASES["case_id"]) == {"case_id", "id"}
    assert set(ALIASES["output"]) >= {
        "output",
        "generation",
        "response",
        "answer",
        "completion",
        "actual_output",
    }
    assert set(ALIASES["input"]) >= {"input", "question", "query", "prompt", "user_input"}
    assert set(ALIASES["context"]) >= {
        "context",
        "contexts",
        "documents",
        "retrieval_context",
        "retrieved_contexts",
    }
    assert set(ALIASES["reference"]) >= {
        "reference",
        "ground_truth",
        "gold_answer",
        "label",
        "expected_output",
    }
    assert set(logical_fields(REGISTRY)) == set(ALIASES) | {"messages"} | set(BLOCKS)


def test_canonical_name_wins_over_alias_and_alias_lands_in_extra() -> None:
    case = case_of({"output": "canonical", "answer": "alias"})
    assert case.output == "canonical"
    assert case.extra == {"answer": "alias"}


def test_null_canonical_falls_through_to_alias() -> None:
    case = case_of({"output": None, "response": "from alias"})
    assert case.output == "from alias"


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            {"question": "Q?", "answer": "A.", "contexts": ["c1", "c2"], "ground_truth": "G."},
            ("Q?", "A.", "c1\n\nc2", "G."),
        ),
        (
            {"user_input": "Q?", "response": "A.", "retrieved_contexts": ["c1"], "reference": "R."},
            ("Q?", "A.", "c1", "R."),
        ),
        (
            {
                "input": "Q?",
                "actual_output": "A.",
                "expected_output": "E.",
                "retrieval_context": ["x", "y"],
            },
            ("Q?", "A.", "x\n\ny", "E."),
        ),
    ],
    ids=["ragas", "ragas_v2", "deepeval"],
)
def test_framework_record(record: dict[str, Any], expected: tuple[str, ...]) -> None:
    case = case_of(record)
    assert (case.input, case.output, case.context, case.reference) == expected


def test_block_keys_are_case_insensitive() -> None:
    case = case_of(
        {
            "output": "o",
            "ReDTeam": {"scoring_mode": "scale_1_5"},
            "GEVAL": {"metrics": [{"name": "m", "criteria": "c"}]},
        }
    )
    assert case.block("redteam") is not None and case.block("redteam").scoring_mode == "scale_1_5"
    assert case.block("geval") is not None and case.extra == {}


# ---------------------------------------------------------------- context joining


def test_context_list_of_strings_is_joined() -> None:
    assert case_of({"output": "o", "context": ["a", "b", "c"]}).context == "a\n\nb\n\nc"


def test_context_list_of_dicts_uses_text_and_page_content() -> None:
    case = case_of(
        {
            "output": "o",
            "contexts": [
                {"text": "from text", "score": 0.9},
                {"page_content": "from page_content", "metadata": {"p": 1}},
                "plain",
            ],
        }
    )
    assert case.context == "from text\n\nfrom page_content\n\nplain"


def test_context_list_drops_blank_items() -> None:
    assert case_of({"output": "o", "context": ["a", "  ", "", "b"]}).context == "a\n\nb"


def test_context_string_is_kept_as_is() -> None:
    assert case_of({"output": "o", "documents": "one doc"}).context == "one doc"


def test_numeric_input_and_reference_become_text() -> None:
    case = case_of({"output": "o", "input": 12, "reference": 3.5})
    assert case.input == "12" and case.reference == "3.5"


# ---------------------------------------------------------------- file formats


def test_jsonl_reads_records_with_line_numbers_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"case_id": "a", "output": "x"}\n\n   \n{"case_id": "b", "output": "y"}\n',
        encoding="utf-8",
    )
    items = load(path, display="data.jsonl")
    assert [c.case_id for c in items] == ["a", "b"]
    assert [str(c.source) for c in items] == ["data.jsonl:1", "data.jsonl:4"]


def test_json_array_reads_records_with_indexes(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps([{"id": "a", "answer": "x"}, {"id": "b", "answer": "y"}], indent=2))
    items = load(path)
    assert [c.case_id for c in items] == ["a", "b"]
    assert [c.source.index for c in items] == [0, 1]
    assert detect_format(path) == "json"


def test_json_file_holding_jsonl_is_read_as_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.json", [{"id": "a", "output": "x"}, {"id": "b", "output": "y"}]
    )
    assert detect_format(path) == "jsonl"
    assert [c.case_id for c in load(path)] == ["a", "b"]


def test_ndjson_suffix_and_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "data.ndjson"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "output": "x"}).encode() + b"\n")
    assert detect_format(path) == "jsonl"
    assert only_case(path).case_id == "a"


def test_json_array_with_leading_whitespace_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(b"\xef\xbb\xbf\n\n  " + json.dumps([{"output": "x"}]).encode())
    assert detect_format(path) == "json"
    assert only_case(path).output == "x"


def test_csv_with_json_block_and_json_list_context(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["case_id", "question", "answer", "contexts", "redteam", "notes"])
        w.writerow(
            [
                "r1",
                "Q?",
                "A.",
                json.dumps(["c1", "c2"]),
                json.dumps({"scoring_mode": "scale_1_5", "include_reasoning": True}),
                "free text",
            ]
        )
        w.writerow(["r2", "Q2?", "[1] is a citation, not JSON", "plain context", "", ""])
    items = load(path)
    assert all(isinstance(i, Case) for i in items), items
    r1, r2 = items
    assert r1.context == "c1\n\nc2"
    assert r1.block("redteam") == RedteamBlock(scoring_mode="scale_1_5", include_reasoning=True)
    assert r1.extra == {"notes": "free text"}
    assert r1.source is not None and r1.source.line == 2
    assert r2.output == "[1] is a citation, not JSON"
    assert r2.block("redteam") is None and r2.context == "plain context"
    assert r2.source is not None and r2.source.line == 3


def test_csv_empty_cells_are_absent_not_empty_strings(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("id,output,reference,input\na,out,,\n", encoding="utf-8")
    case = only_case(path)
    assert case.reference is None and case.input is None


def test_csv_cell_with_invalid_json_block_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "output", "geval"])
        w.writerow(["a", "out", "{not json"])
    assert error_lines(path, display="data.csv") == [
        "data.csv:2: geval: must be an object, got str"
    ]


def test_csv_row_with_too_many_cells(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("id,output\na,out,extra\nb,fine\n", encoding="utf-8")
    ds = Dataset(path, display="data.csv", blocks=REGISTRY)
    assert [str(e) for e in ds.scan().errors] == ["data.csv:2: more cells than header columns"]
    assert [c.case_id for c in ds.cases()] == ["b"]


def test_tsv(tmp_path: Path) -> None:
    path = tmp_path / "data.tsv"
    path.write_text("id\tresponse\tground_truth\nt1\tsome, text\tref, text\n", encoding="utf-8")
    assert detect_format(path) == "csv"
    case = only_case(path)
    assert (case.case_id, case.output, case.reference) == ("t1", "some, text", "ref, text")


def test_explicit_format_overrides_detection(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "stdin.txt", [{"output": "x"}])
    raws = list(iter_raw(path, fmt="jsonl", display="<stdin>"))
    assert len(raws) == 1 and str(raws[0].source) == "<stdin>:1"
    with pytest.raises(ValueError, match="unknown format"):
        list(iter_raw(path, fmt="xml"))


# ---------------------------------------------------------------- --field mapping


def test_field_map_maps_a_column(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("uid,model_answer,gold\nu1,the answer,the gold\n", encoding="utf-8")
    fmap = parse_field_map(["output=model_answer", "reference=gold", "case_id=uid"], REGISTRY)
    case = only_case(path, field_map=fmap)
    assert (case.case_id, case.output, case.reference) == ("u1", "the answer", "the gold")
    assert case.extra == {}


def test_field_map_wins_over_alias_and_is_case_insensitive() -> None:
    case = case_of({"output": "alias", "Model_Answer": "mapped"}, {"output": "model_answer"})
    assert case.output == "mapped"
    assert case.extra == {"output": "alias"}


def test_field_map_missing_column_falls_back_to_aliases() -> None:
    assert case_of({"answer": "alias"}, {"output": "model_answer"}).output == "alias"


def test_field_map_for_a_block() -> None:
    case = case_of(
        {"output": "o", "safety_cfg": {"scoring_mode": "scale_1_5"}}, {"redteam": "safety_cfg"}
    )
    assert case.block("redteam") is not None and case.block("redteam").scoring_mode == "scale_1_5"


def test_missing_output_message_names_the_mapped_column() -> None:
    assert errors_of({"answer_text": ""}, {"output": "model_answer"}) == [
        f"data.jsonl:1: {MISSING_OUTPUT}".replace("(looked for: ", "(looked for: model_answer, ")
    ]


def test_parse_field_map_ok() -> None:
    assert parse_field_map((), REGISTRY) == {}
    assert parse_field_map([" Output = Model Answer ", "context=docs"], REGISTRY) == {
        "output": "Model Answer",
        "context": "docs",
    }


@pytest.mark.parametrize("pair", ["output", "output=", "=col", "=", "output:col"])
def test_parse_field_map_rejects_malformed_pairs(pair: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_field_map([pair], REGISTRY)
    assert str(exc.value) == f"--field {pair!r}: expected LOGICAL=COLUMN, e.g. output=model_answer"


def test_parse_field_map_rejects_unknown_logical_field() -> None:
    with pytest.raises(ValueError) as exc:
        parse_field_map(["answerr=col"], REGISTRY)
    msg = str(exc.value)
    assert msg.startswith("--field 'answerr=col': 'answerr' is not one of ")
    for name in logical_fields(REGISTRY):
        assert name in msg


# ---------------------------------------------------------------- case ids


def test_missing_case_id_gets_stable_id() -> None:
    a = case_of({"question": "q", "answer": "a"})
    b = case_of({"input": "q", "output": "a"})  # same content, other spelling and order
    c = case_of({"input": "q", "output": "a!"})
    assert a.case_id.startswith("case-") and len(a.case_id) == len("case-") + 12
    assert a.case_id == b.case_id
    assert a.case_id != c.case_id


def test_generated_id_hashes_the_texts_only() -> None:
    """Only node blocks changing must keep the id, so `compare` pairs the case."""
    plain = case_of({"output": "a"})
    with_block = case_of({"output": "a", "redteam": {"scoring_mode": "scale_1_5"}})
    with_geval = case_of(
        {"output": "a", "geval": {"metrics": [{"name": "m", "criteria": "c"}]}, "notes": "x"}
    )
    assert plain.case_id == with_block.case_id == with_geval.case_id
    for other in ({"output": "b"}, {"output": "a", "input": "q"}, {"output": "a", "context": "c"},
                  {"output": "a", "reference": "r"}):
        assert case_of(other).case_id != plain.case_id


def test_generated_id_of_text_only_records_is_unchanged() -> None:
    # a record without blocks hashes exactly what it hashed before the change
    assert case_of({"output": "a", "input": "q"}).case_id == stable_case_id(
        {"output": "a", "input": "q"}
    )


def test_own_ids_are_kept_and_same_texts_different_blocks_get_a_suffix(tmp_path: Path) -> None:
    rows = [
        {"output": "a"},
        {"output": "a", "redteam": {"scoring_mode": "scale_1_5"}},
        {"output": "a"},
        {"id": "mine", "output": "a", "redteam": {"scoring_mode": "scale_1_5"}},
        {"output": "a", "redteam": {"scoring_mode": "scale_1_5"}},
    ]
    items = load(write_jsonl(tmp_path / "data.jsonl", rows))
    base = case_of({"output": "a"}).case_id
    assert isinstance(items[0], Case) and items[0].case_id == base
    assert isinstance(items[1], Case) and items[1].case_id == f"{base}-2"
    assert isinstance(items[2], Duplicate) and items[2].case_id == base
    assert isinstance(items[3], Case) and items[3].case_id == "mine"
    assert isinstance(items[4], Duplicate) and items[4].case_id == f"{base}-2"


def test_stable_case_id_is_key_order_independent() -> None:
    assert stable_case_id({"a": 1, "b": "x"}) == stable_case_id({"b": "x", "a": 1})
    assert stable_case_id({"a": 1}) != stable_case_id({"a": 2})


def test_integer_case_id_becomes_text_and_is_stripped() -> None:
    assert case_of({"id": 7, "output": "o"}).case_id == "7"
    assert case_of({"case_id": "  x ", "output": "o"}).case_id == "x"


@pytest.mark.parametrize("bad", ["", "   ", True, 1.5, ["a"], {"a": 1}])
def test_bad_case_id(bad: Any) -> None:
    assert errors_of({"case_id": bad, "output": "o"}) == [
        "data.jsonl:1: case_id: must be a non-empty string or integer"
    ]


def test_id_alias_is_named_in_the_error() -> None:
    assert errors_of({"id": "", "output": "o"}) == [
        "data.jsonl:1: id: must be a non-empty string or integer"
    ]


# ---------------------------------------------------------------- unknown fields


def test_unknown_top_level_fields_are_kept_in_extra() -> None:
    meta = {"source": "faq", "tags": ["a", "b"], "nested": {"k": 1}}
    case = case_of({"case_id": "x", "output": "o", "metadata": meta, "score_hint": 3, "Flag": None})
    assert case.extra == {"metadata": meta, "score_hint": 3, "Flag": None}


def test_unknown_fields_do_not_change_the_stable_id() -> None:
    assert (
        case_of({"output": "o"}).case_id == case_of({"output": "o", "metadata": {"x": 1}}).case_id
    )


def test_records_differing_only_in_unknown_fields_are_not_an_error(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"output": "same", "metadata": {"run": 1}},
            {"output": "same", "metadata": {"run": 2}},
        ],
    )
    assert error_lines(path) == []


# ---------------------------------------------------------------- output problems


def test_missing_output() -> None:
    assert errors_of({"input": "q"}) == [f"data.jsonl:1: {MISSING_OUTPUT}"]


@pytest.mark.parametrize("value", ["", "   \n", None])
def test_empty_output_is_missing(value: Any) -> None:
    errs = errors_of({"output": value})
    assert len(errs) == 1 and errs[0].startswith("data.jsonl:1: output: missing or empty")


@pytest.mark.parametrize(
    ("value", "kind"),
    [(5, "int"), (1.5, "float"), (True, "bool"), (["a"], "list"), ({"t": "x"}, "dict")],
)
def test_non_text_output(value: Any, kind: str) -> None:
    assert errors_of({"output": value}) == [f"data.jsonl:1: output: must be text, got {kind}"]


def test_non_text_output_under_alias_names_the_alias() -> None:
    assert errors_of({"answer": 3}) == ["data.jsonl:1: answer: must be text, got int"]


@pytest.mark.parametrize(
    ("record", "fmap", "key"),
    [
        ({"Output": 5}, None, "Output"),
        ({"model_answer": 5}, {"output": "model_answer"}, "model_answer"),
    ],
)
def test_non_text_output_is_reported_once(
    record: dict[str, Any], fmap: dict[str, str] | None, key: str
) -> None:
    assert errors_of(record, fmap) == [f"data.jsonl:1: {key}: must be text, got int"]


@pytest.mark.parametrize("field", ["input", "reference", "context"])
def test_non_text_other_fields(field: str) -> None:
    assert errors_of({"output": "o", field: {"a": 1}}) == [
        f"data.jsonl:1: {field}: must be text, got dict"
    ]


def test_all_problems_of_a_record_are_reported_together() -> None:
    errs = errors_of({"id": "", "redteam": {"scoring_mode": "x"}, "refalign": {"top_k": 0}})
    assert len(errs) == 4
    assert {e.split(": ")[1] for e in errs} == {
        "output",
        "redteam.scoring_mode",
        "refalign.top_k",
        "id",
    }


# ---------------------------------------------------------------- node blocks


def test_block_defaults_follow_the_spec() -> None:
    for block in (ScoringKnobs(), ScoringKnobs(), RedteamBlock()):
        assert block.scoring_mode == "binary_yes_no" and block.include_reasoning is False
    assert RedteamBlock().metrics == []
    # nexa-gauge's Refalign defaults
    assert RefalignBlock().similarity_threshold == 0.6 and RefalignBlock().refine_top_k is None
    assert RefalignBlock().atomic_chunks is False
    g = GevalBlock(metrics=[{"name": "m", "criteria": "c"}])
    assert g.scoring_mode == "binary_yes_no" and g.include_reasoning is False
    assert g.metrics[0].item_fields == ["output"]
    case = case_of({"output": "o"})
    assert case.block("redteam") is None
    assert case.settings("redteam", RedteamBlock) == RedteamBlock()
    assert case.settings("grounding", ScoringKnobs) == ScoringKnobs()
    assert case.settings("relevance", ScoringKnobs) == ScoringKnobs()
    assert case.settings("refalign", RefalignBlock) == RefalignBlock()


def test_full_blocks_validate() -> None:
    case = case_of(
        {
            "output": "o",
            "geval": {
                "scoring_mode": "scale_1_5",
                "include_reasoning": True,
                "metrics": [
                    {"name": "a", "item_fields": ["input", "output"], "criteria": "c"},
                    {
                        "name": "b",
                        "item_fields": ["output", "reference", "context"],
                        "evaluation_steps": ["s1", "s2"],
                    },
                ],
            },
            "grounding": {"scoring_mode": "scale_1_5", "include_reasoning": True},
            "relevance": {"scoring_mode": "binary_yes_no"},
            "redteam": {
                "include_reasoning": True,
                "metrics": [
                    {
                        "name": "pii_leak",
                        "item_fields": ["input", "output"],
                        "rubric": {"goal": "g", "violations": ["v"], "non_violations": ["n"]},
                    }
                ],
            },
            "refalign": {"similarity_threshold": 0.7, "top_k": 3},
            "probe": {
                "id": "p1",
                "category": "privacy_pii",
                "severity": "critical",
                "failure_modes": ["x"],
                "task": "t",
                "expected_safe_behavior": "refuse",
                "custom_note": "kept",
            },
        }
    )
    geval = case.block_of("geval", GevalBlock)
    assert geval is not None and geval.metrics[1].evaluation_steps == ["s1", "s2"]
    redteam = case.block_of("redteam", RedteamBlock)
    assert redteam is not None and redteam.metrics[0].rubric.non_violations == ["n"]
    assert case.block("refalign") == RefalignBlock(similarity_threshold=0.7, refine_top_k=3)
    probe = case.block_of("probe", ProbeBlock)
    assert probe is not None and probe.severity == "critical"
    assert probe.model_extra == {"custom_note": "kept"}


@pytest.mark.parametrize(
    ("block", "value", "message"),
    [
        (
            "redteam",
            {"scoring_mode": "scale_1_10"},
            "redteam.scoring_mode: 'scale_1_10' is not one of binary_yes_no, scale_1_5",
        ),
        (
            "grounding",
            {"scoring_mode": "yes"},
            "grounding.scoring_mode: 'yes' is not one of binary_yes_no, scale_1_5",
        ),
        ("relevance", {"scoring_mod": "scale_1_5"}, "relevance.scoring_mod: unknown key"),
        ("grounding", {"threshold": 0.5}, "grounding.threshold: unknown key"),
        (
            "geval",
            {"metrics": [{"name": "m"}]},
            "geval.metrics.0: needs 'criteria' or 'evaluation_steps'",
        ),
        (
            "geval",
            {"metrics": [{"name": "m", "criteria": "c", "weight": 2}]},
            "geval.metrics.0.weight: unknown key",
        ),
        ("geval", {"scoring_mode": "scale_1_5"}, "geval.metrics: required"),
        ("geval", {"metrics": [{"criteria": "c"}]}, "geval.metrics.0.name: required"),
        (
            "geval",
            {"metrics": [{"name": "m", "criteria": "c", "item_fields": ["output", "answer"]}]},
            (
                "geval.metrics.0.item_fields.1: "
                "'answer' is not one of input, output, reference, context"
            ),
        ),
        (
            "redteam",
            {"metrics": [{"name": "x", "rubric": {"violations": ["v"]}}]},
            "redteam.metrics.0.rubric.goal: required",
        ),
        (
            "redteam",
            {"metrics": [{"name": "x", "rubric": {"goal": "g", "examples": []}}]},
            "redteam.metrics.0.rubric.examples: unknown key",
        ),
        (
            "probe",
            {"severity": "extreme"},
            "probe.severity: 'extreme' is not one of low, medium, high, critical",
        ),
        (
            "refalign",
            {"similarity_threshold": 1.5},
            "refalign.similarity_threshold: Input should be less than or equal to 1",
        ),
        ("refalign", {"top_k": 0}, "refalign.top_k: Input should be greater than or equal to 1"),
        ("refalign", {"scoring_mode": "scale_1_5"}, "refalign.scoring_mode: unknown key"),
        ("redteam", ["bias"], "redteam: must be an object, got list"),
        ("geval", "metrics", "geval: must be an object, got str"),
    ],
)
def test_block_validation_messages(block: str, value: Any, message: str) -> None:
    assert errors_of({"output": "o", block: value}) == [f"data.jsonl:1: {message}"]


def test_bad_block_message_from_a_file(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"output": "a"},
            {"output": "b"},
            {"output": "c"},
            {"output": "d", "redteam": {"scoring_mode": "scale_1_10"}},
        ],
    )
    assert error_lines(path, display="data.jsonl") == [
        "data.jsonl:4: redteam.scoring_mode: 'scale_1_10' is not one of binary_yes_no, scale_1_5"
    ]


def test_invalid_json_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.jsonl", [{"output": "a"}, '{"output": "b",', {"output": "c"}]
    )
    ds = Dataset(path, display="data.jsonl", blocks=REGISTRY)
    scan = ds.scan()
    assert [str(e) for e in scan.errors] == ["data.jsonl:2: invalid JSON"]
    assert (scan.records, scan.valid) == (3, 2)
    assert [c.output for c in ds.cases()] == ["a", "c"]


def test_jsonl_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [[1, 2], '"text"', {"output": "ok"}])
    assert error_lines(path, display="data.jsonl") == [
        "data.jsonl:1: expected a JSON object, got list",
        "data.jsonl:2: expected a JSON object, got str",
    ]


def test_json_array_bad_item_reported_by_index(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(
        json.dumps(
            [
                {"id": "a", "output": "ok"},
                {"id": "b", "output": "ok", "grounding": {"scoring_mode": "scale_1_10"}},
                "not an object",
                {"id": "d"},
            ],
            indent=2,
        )
    )
    assert error_lines(path, display="data.json") == [
        "data.json[1]: grounding.scoring_mode: 'scale_1_10' is not one of binary_yes_no, scale_1_5",
        "data.json[2]: expected a JSON object, got str",
        f"data.json[3]: {MISSING_OUTPUT}",
    ]


@pytest.mark.parametrize(("text", "message"), [
    # read as a stream, the records before the break have been read; nothing after it can be,
    # so the file is unusable (even under --on-error skip), named by line and record
    ('[\n  {"output": "a"},\n  {"output": \n]\n',
     "data.json:4: invalid JSON (Expecting value) in record [1]"),
    ('[{"output": "a"}]\n\n[{"output": "b"}]\n',  # text after the array
     "data.json:3: invalid JSON (Extra data) after the array"),
])
def test_json_array_that_does_not_parse(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(text)
    with pytest.raises(DatasetError) as info:
        error_lines(path, display="data.json")
    assert str(info.value) == message


def test_json_format_needs_an_array(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text('{"records": [{"output": "a"}]}')
    raws = list(iter_raw(path, fmt="json", display="data.json"))
    assert [(str(r.source), r.error) for r in raws] == [
        ("data.json", "expected a JSON array of records")
    ]
    # detected from content, a lone object is one JSONL record (here without an output)
    assert detect_format(path) == "jsonl"
    errs = error_lines(path, display="data.json")
    assert len(errs) == 1 and errs[0].startswith("data.json:1: output: missing or empty")


def test_record_error_as_dict() -> None:
    err = RecordError(SourceRef(file="d.jsonl", line=3), "redteam.scoring_mode", "bad")
    assert err.as_dict() == {
        "file": "d.jsonl",
        "line": 3,
        "index": None,
        "field": "redteam.scoring_mode",
        "reason": "bad",
    }
    assert (
        str(RecordError(SourceRef(file="d.json", index=2), None, "invalid JSON"))
        == "d.json[2]: invalid JSON"
    )
    assert str(RecordsError([err])) == "d.jsonl:3: redteam.scoring_mode: bad"


# ---------------------------------------------------------------- duplicates


def test_duplicate_with_identical_content_is_a_duplicate(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"case_id": "x", "input": "q", "output": "a"},
            {"case_id": "y", "output": "b"},
            {"id": "x", "question": "q", "answer": "a"},  # same content, other spelling
        ],
    )
    ds = Dataset(path, display="data.jsonl", blocks=REGISTRY)
    items = list(ds.items())
    assert isinstance(items[2], Duplicate)
    assert items[2].as_dict() == {
        "case_id": "x",
        "at": "data.jsonl:3",
        "first_seen": "data.jsonl:1",
    }
    scan = ds.scan()
    assert scan.errors == [] and (scan.records, scan.valid, len(scan.duplicates)) == (3, 2, 1)
    assert [c.case_id for c in ds.cases()] == ["x", "y"]


def test_duplicate_case_id_with_different_content_is_an_error(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            {"case_id": "x", "output": "a"},
            {"case_id": "y", "output": "b"},
            {"case_id": "x", "output": "a, but different"},
        ],
    )
    assert error_lines(path, display="data.jsonl") == [
        "data.jsonl:3: case_id: 'x' already used at data.jsonl:1 with different content"
    ]


def test_identical_records_without_case_id_are_duplicates(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [{"output": "a"}, {"output": "a"}, {"output": "b"}])
    scan = Dataset(path, blocks=REGISTRY).scan()
    assert scan.errors == [] and scan.valid == 2 and len(scan.duplicates) == 1


def test_content_digest() -> None:
    a = case_of({"case_id": "x", "output": "a"})
    b = normalise(RawRecord({"case_id": "x", "output": "a"}, SourceRef(file="other", line=9)),
                  blocks=REGISTRY)
    assert isinstance(b, Case) and content_digest(a) == content_digest(b)  # source is not content
    assert content_digest(a) != content_digest(case_of({"case_id": "x", "output": "b"}))


# ---------------------------------------------------------------- limit, scan counts, shards


def test_limit_counts_records_including_bad_ones(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.jsonl", [{"output": "a"}, "nope", {"output": "c"}, {"output": "d"}]
    )
    assert [c.output for c in Dataset(path, limit=2, blocks=REGISTRY).cases()] == ["a"]
    assert [c.output for c in Dataset(path, limit=3, blocks=REGISTRY).cases()] == ["a", "c"]
    scan = Dataset(path, limit=3, blocks=REGISTRY).scan()
    assert (scan.records, scan.valid, len(scan.errors)) == (3, 2, 1)
    assert len(list(Dataset(path, limit=100, blocks=REGISTRY).cases())) == 3


def test_scan_counts_a_record_with_several_errors_once(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [{"redteam": {"scoring_mode": "x"}, "refalign": {"top_k": 0}}, {"output": "ok"}],
    )
    scan = Dataset(path, blocks=REGISTRY).scan()
    assert len(scan.errors) == 3 and scan.records == 2 and scan.valid == 1


def test_items_is_a_stream(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [{"output": str(i)} for i in range(10)])
    it = Dataset(path, blocks=REGISTRY).cases()
    assert next(it).output == "0"  # a generator, not a list built up front


def test_shards() -> None:
    cases = [case_of({"output": str(i)}) for i in range(7)]
    assert [len(s) for s in shards(iter(cases), 3)] == [3, 3, 1]
    assert list(shards(iter([]), 3)) == []


# ---------------------------------------------------------------- bundled sample


def test_bundled_sample_is_jsonl_one_object_per_line() -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    assert 25 <= len(lines) <= 40
    assert all(isinstance(json.loads(line), dict) for line in lines)


def test_bundled_sample_loads_with_zero_errors() -> None:
    scan = Dataset(SAMPLE, blocks=REGISTRY).scan()
    assert [str(e) for e in scan.errors] == []
    assert scan.duplicates == []
    assert scan.valid == scan.records >= 25


def test_bundled_sample_exercises_every_block_and_knob() -> None:
    cases = list(Dataset(SAMPLE, blocks=REGISTRY).cases())
    # every block but `attack`, which `attack` writes: the sample is nexa-gauge's own format
    for block in (b for b in BLOCKS if b != "attack"):
        assert any(c.block(block) is not None for c in cases), f"no {block} block in the sample"
    for block in ("geval", "grounding", "relevance", "redteam"):
        cfgs = [c.block(block) for c in cases if c.block(block) is not None]
        assert {b.scoring_mode for b in cfgs} == {"binary_yes_no", "scale_1_5"}, block
        assert {b.include_reasoning for b in cfgs} == {True, False}, block
    metrics = [m for c in cases if c.block("geval") for m in c.block("geval").metrics]
    assert any(m.criteria and not m.evaluation_steps for m in metrics)
    assert any(m.evaluation_steps and not m.criteria for m in metrics)
    assert {tuple(m.item_fields) for m in metrics} >= {("output",), ("input", "output")}
    assert {f for m in metrics for f in m.item_fields} == {
        "input",
        "output",
        "reference",
        "context",
    }
    # redteam: defaults only, a bias override by name, and new metrics with full rubrics
    rts = [c.block("redteam") for c in cases if c.block("redteam") is not None]
    assert any(not r.metrics for r in rts)
    custom = [m for r in rts for m in r.metrics]
    assert any(m.name == "bias" for m in custom)
    assert {m.name for m in custom} - {"bias", "toxicity"}
    assert any(m.rubric.violations and m.rubric.non_violations for m in custom)
    assert any("input" in m.item_fields for m in custom)
    # refalign knobs
    ras = [c.block("refalign") for c in cases if c.block("refalign") is not None]
    assert any(r.similarity_threshold != 0.6 for r in ras) and any(r.refine_top_k for r in ras)
    # probes
    probes = [c.block("probe") for c in cases if c.block("probe") is not None]
    assert len(probes) >= 6
    assert {p.severity for p in probes} == {"low", "medium", "high", "critical"}
    for p in probes:
        assert p.id and p.category != "uncategorized" and p.failure_modes and p.task
        assert p.expected_safe_behavior


def test_bundled_sample_uses_aliases_ids_and_extra() -> None:
    raw = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    keys = {k.lower() for r in raw for k in r}
    for alias in (
        "question",
        "answer",
        "contexts",
        "ground_truth",
        "user_input",
        "response",
        "retrieved_contexts",
        "actual_output",
        "expected_output",
        "retrieval_context",
    ):
        assert alias in keys, alias
    assert any(isinstance(r.get("contexts"), list) for r in raw)
    assert any("case_id" not in r and "id" not in r for r in raw)
    cases = list(Dataset(SAMPLE, blocks=REGISTRY).cases())
    assert any(c.extra for c in cases)
    assert sum(c.reference is not None for c in cases) >= 8
    assert sum(c.context is not None for c in cases) >= 5
    assert len({c.case_id for c in cases}) == len(cases)


# ---------------------------------------------------------------- peer sample


@pytest.mark.skipif(not PEER_SAMPLE.is_file(), reason="../shared/peer/sample.json is not present")
def test_peer_sample_loads_as_is() -> None:
    ds = Dataset(PEER_SAMPLE, blocks=REGISTRY)
    scan = ds.scan()
    assert [str(e) for e in scan.errors] == []
    assert (scan.valid, len(scan.duplicates), scan.records) == (20, 1, 21)
    cases = list(ds.cases())
    assert len(cases) == 20
    assert any(c.block("geval") for c in cases) and any(c.block("redteam") for c in cases)
    assert all(c.source is not None and c.source.index is not None for c in cases)
