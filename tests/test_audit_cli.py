"""The audit trail through the real CLI: every run writes manifest.json; `verify` catches a
tampered case report, a changed input record, a changed judge weight file and a bad signature,
each with a message naming the file; keys, signing, report re-rendering and reproduce."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nexagauge_local.audit import RunRecord, finalize_run, hash_input, read_manifest
from nexagauge_local.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"


def cli(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def verify_fails(out: Path, *args: object) -> str:
    """`verify`'s output for a run that no longer matches its manifest (exit 1)."""
    res = cli("verify", out, *args)
    assert res.exit_code == 1, res.output
    return res.output


def run_refmatch(out: Path, cache: Path, data: Path = SAMPLE, *extra: object) -> Result:
    res = cli("run", "refmatch", "--input", data, "--output-dir", out, "--cache-dir", cache, "-q",
              *extra)
    assert res.exit_code == 0, res.output
    return res


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One refmatch run (no judge) over a private copy of the sample; tests copy the folder."""
    base = tmp_path_factory.mktemp("audit_cli")
    data = base / "data.jsonl"
    shutil.copy(SAMPLE, data)
    run_refmatch(base / "out", base / "cache", data)
    return base / "out", data


@pytest.fixture
def run_copy(base_run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    out, data = base_run
    shutil.copytree(out, tmp_path / "out")
    shutil.copy(data, tmp_path / "data.jsonl")
    return tmp_path / "out", tmp_path / "data.jsonl"


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    res = cli("keys", "new", "--out", tmp_path / "keys")
    assert res.exit_code == 0, res.output
    return tmp_path / "keys" / "nexagauge.key", tmp_path / "keys" / "nexagauge.pub"


def test_every_run_writes_a_manifest_that_verifies(base_run: tuple[Path, Path]) -> None:
    out, data = base_run
    m = read_manifest(out)
    assert m.judge is None  # refmatch: no judge ran
    assert "prompt_templates" not in json.loads((out / "summary.json").read_text())
    assert m.settings["target"] == "refmatch" and m.settings["output_dir"] == str(out)
    assert m.input is not None and Path(m.input.path) == data.resolve()
    # the ids the run gave (generated ones included), not only those written in the file
    ran = {json.loads(p.read_text())["input"]["case_id"] for p in (out / "case_report").glob("*")}
    records = list(m.iter_records(out))
    assert [r.case_id for r in records if r.case_id in ran] == [r.case_id for r in records]
    assert {r.case_id for r in records} == ran
    paths = {o.path for o in m.iter_outputs(out)}
    assert {"summary.json", "report.html"} <= paths and any(p.startswith("case_report/") for p in paths)
    res = cli("verify", out, "--input", data)
    assert res.exit_code == 0, res.output
    assert "OK: everything matches the manifest" in res.output


def test_tampered_case_report_fails_naming_the_file(run_copy: tuple[Path, Path]) -> None:
    out, _ = run_copy
    case = sorted((out / "case_report").glob("*.json"))[3]
    report = json.loads(case.read_text())
    report["input"]["output"] = "edited after the run"
    case.write_text(json.dumps(report))
    assert f"case_report/{case.name}: changed" in verify_fails(out)


def test_changed_input_record_fails_naming_file_line_and_case(run_copy: tuple[Path, Path]) -> None:
    out, data = run_copy
    lines = data.read_text().splitlines()
    record = json.loads(lines[4])
    record["output"] = "a different answer"
    lines[4] = json.dumps(record)
    data.write_text("\n".join(lines) + "\n")
    assert (f"data.jsonl: record {record['case_id']} at line 5: changed"
            in verify_fails(out, "--input", data))


def test_changed_weight_file_fails_naming_the_file(
    run_copy: tuple[Path, Path], tiny_judge_dir: Path, tmp_path: Path
) -> None:
    """Judge facts collected by the run's own code (app.run_facts.collect_judge) from a copy of the
    tiny judge; then one weight file changes."""
    from nexagauge_local.app.run_facts import collect_judge
    from nexagauge_local.judge.factory import make_backend_factory

    out, data = run_copy
    weights = tmp_path / "tiny"
    shutil.copytree(tiny_judge_dir, weights)
    factory = make_backend_factory(str(weights), backend="hf", cache_dir=tmp_path / "cache")
    judge = collect_judge(factory, memo=None)
    assert judge.tokenizer_sha256 and judge.chat_template_sha256  # the fixture has both
    m = read_manifest(out)
    finalize_run(out, RunRecord(started_at=m.started_at, argv=m.argv, settings=m.settings,
                                input=hash_input(data, into=out), judge=judge))
    assert cli("verify", out, "--model", weights).exit_code == 0
    target = next(p for p in sorted(weights.iterdir()) if p.suffix == ".safetensors")
    blob = bytearray(target.read_bytes())
    blob[-1] ^= 0xFF
    target.write_bytes(bytes(blob))
    assert f"{target.name} (weights): changed" in verify_fails(out, "--model", weights)


def test_a_node_judges_weights_are_checked_by_node(
    run_copy: tuple[Path, Path], tiny_judge_dir: Path, tmp_path: Path
) -> None:
    """`--model NODE=PATH` checks the judge the manifest records for that node (a run with
    `--model redteam=PROFILE`), not the default judge; a node without its own judge says so."""
    from nexagauge_local.app.run_facts import collect_judge
    from nexagauge_local.judge.factory import make_backend_factory

    out, data = run_copy
    guard, default = tmp_path / "guard", tmp_path / "default"
    shutil.copytree(tiny_judge_dir, guard)
    shutil.copytree(tiny_judge_dir, default)
    target = next(p for p in sorted(default.iterdir()) if p.suffix == ".safetensors")
    target.write_bytes(target.read_bytes() + b"\0")  # the default judge differs from the guard

    def facts(path: Path):  # type: ignore[no-untyped-def]
        factory = make_backend_factory(str(path), backend="hf", cache_dir=tmp_path / "cache")
        return collect_judge(factory, memo=None)

    m = read_manifest(out)
    finalize_run(out, RunRecord(started_at=m.started_at, argv=m.argv, settings=m.settings,
                                input=hash_input(data, into=out), judge=facts(default),
                                node_judges={"redteam": facts(guard)}))
    assert cli("verify", out, "--model", default, "--model", f"redteam={guard}").exit_code == 0
    assert f"{target.name} (weights): changed" in verify_fails(out, "--model", f"redteam={default}")
    res = cli("verify", out, "--model", f"geval={guard}")
    assert "records no judge of its own for node geval" in " ".join(res.output.split())


def test_keys_new_writes_a_private_key_only_its_owner_reads(tmp_path: Path) -> None:
    res = cli("keys", "new", "--out", tmp_path / "k")
    assert res.exit_code == 0, res.output
    key = tmp_path / "k" / "nexagauge.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert "fingerprint:" in res.output and str(key) in res.output
    again = cli("keys", "new", "--out", tmp_path / "k")
    assert again.exit_code == 2 and "already exists" in again.output


def test_run_sign_then_verify_pubkey(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    run_refmatch(tmp_path / "out", tmp_path / "cache", SAMPLE, "--sign", key)
    assert (tmp_path / "out" / "manifest.json.sig").is_file()
    res = cli("verify", tmp_path / "out", "--pubkey", pub)
    assert res.exit_code == 0, res.output
    assert "signature: valid" in res.output
    html = (tmp_path / "out" / "report.html").read_text()
    assert "signed, not checked" in html  # the report cannot check a signature made after it


def test_bad_signature_fails_naming_the_signature(
    run_copy: tuple[Path, Path], keys: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _ = run_copy
    key, pub = keys
    other = cli("keys", "new", "--out", tmp_path / "other")
    assert other.exit_code == 0
    assert cli("sign", out, "--key", tmp_path / "other" / "nexagauge.key").exit_code == 0
    # signed with another key
    assert "manifest.json.sig: does not match manifest.json" in verify_fails(out, "--pubkey", pub)
    assert cli("sign", out, "--key", key).exit_code == 0
    assert cli("verify", out, "--pubkey", pub).exit_code == 0
    manifest = out / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"refmatch"', '"eval"', 1))
    assert "manifest.json.sig: does not match" in verify_fails(out, "--pubkey", pub)


def test_run_sign_with_a_bad_key_is_a_setup_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.key"
    bogus.write_text("not a key")
    res = cli("run", "refmatch", "--input", SAMPLE, "--output-dir", tmp_path / "out",
              "--cache-dir", tmp_path / "cache", "-q", "--sign", bogus)
    assert res.exit_code == 2 and "bogus.key" in res.output
    assert not (tmp_path / "out").exists()  # found before any work


def test_report_rerender_refinalizes_and_asks_for_a_new_signature(
    run_copy: tuple[Path, Path], keys: tuple[Path, Path]
) -> None:
    out, _ = run_copy
    key, pub = keys
    assert cli("sign", out, "--key", key).exit_code == 0
    (out / "report.html").write_text("stale")
    res = cli("report", out, "-q")
    assert res.exit_code == 0, res.output
    assert "renew it" in res.output and not (out / "manifest.json.sig").exists()
    assert cli("verify", out).exit_code == 0  # report.html re-rendered, manifest updated
    assert "renew the signature" in (out / "report.html").read_text()
    assert cli("sign", out, "--key", key).exit_code == 0
    assert cli("verify", out, "--pubkey", pub).exit_code == 0


def test_report_rerender_refuses_a_folder_that_no_longer_matches(run_copy: tuple[Path, Path]) -> None:
    out, _ = run_copy
    case = min((out / "case_report").glob("*.json"))
    case.write_text(case.read_text().replace("{", '{"x": 1, ', 1))
    before = (out / "manifest.json").read_bytes()
    res = cli("report", out, "-q")
    assert res.exit_code == 1
    assert f"case_report/{case.name}: changed" in res.output
    assert (out / "manifest.json").read_bytes() == before  # nothing laundered


def test_reproduce_refmatch_and_refuse_a_changed_input(
    run_copy: tuple[Path, Path], tmp_path: Path
) -> None:
    out, data = run_copy
    res = cli("reproduce", out, "--output-dir", tmp_path / "again")
    assert res.exit_code == 0, res.output
    assert "REPRODUCED" in res.output
    assert read_manifest(tmp_path / "again").settings["use_cache"] is False
    data.write_text(data.read_text().replace("photosynthesis", "fotosynthesis", 1))
    res = cli("reproduce", out, "--output-dir", tmp_path / "again2", "--input", data)
    assert res.exit_code == 1 and "not the input this run read" in res.output
    assert not (tmp_path / "again2").exists()


def test_prompt_sources_name_the_code_that_renders_each_prompt() -> None:
    from nexagauge_local.app.run_facts import prompt_sources, template_text

    grounding = {p.as_posix().split("nexagauge_local/")[-1] for p in prompt_sources("grounding")}
    assert {"nodes/grounding.py", "nodes/claim_check/prompt.py", "judge/prompts/base.py"} <= grounding
    assert "nodes/redteam/prompt.py" not in grounding
    redteam = {p.as_posix().split("nexagauge_local/")[-1] for p in prompt_sources("redteam")}
    assert "nodes/redteam/prompt.py" in redteam and "nodes/claim_check/prompt.py" not in redteam
    assert template_text("grounding") != template_text("relevance")


@pytest.mark.slow
def test_reproduce_a_demo_judge_run_exactly(tmp_path: Path, demo_cache: Path) -> None:
    """The demo judge (SmolLM2-135M GGUF) at temperature 0, re-run with no cache."""
    a, b, cache = tmp_path / "a", tmp_path / "b", demo_cache
    res = cli("run", "redteam", "--limit", 2, "--input", SAMPLE, "--output-dir", a,
              "--cache-dir", cache, "-q")
    assert res.exit_code == 0, res.output
    m = read_manifest(a)
    assert m.judge is not None and m.judge.demo and m.judge.weights
    assert [p.node for p in m.prompts] == ["redteam"] and m.schemas
    html = (a / "report.html").read_text()
    assert m.judge.weights_sha256 in html and m.prompts[0].template_sha256 in html
    summary = json.loads((a / "summary.json").read_text())
    assert summary["prompt_templates"] == {"redteam": m.prompts[0].template_sha256}
    assert cli("verify", a, "--model", "demo").exit_code == 0  # summary.json rewritten before it
    res = cli("reproduce", a, "--output-dir", b)
    assert res.exit_code == 0, res.output
    assert "REPRODUCED: 2 cases" in res.output


@pytest.mark.slow
def test_reproduce_checks_full_results_of_a_batch_invariant_judge(tmp_path: Path,
                                                                   demo_cache: Path) -> None:
    """A profile with `batch_invariant = true`: summary.json and the manifest say so, and
    `reproduce` compares the judge's free text too, and says it did."""
    from nexagauge_local.judge.profiles import shipped_profile_files

    demo = next(p for p in shipped_profile_files() if p.stem == "demo").read_text()
    profile = tmp_path / "demo-invariant.toml"
    profile.write_text(demo.replace('name = "demo"', 'name = "demo-invariant"')
                       + "\nbatch_invariant = true\n")
    a, b = tmp_path / "a", tmp_path / "b"
    res = cli("run", "redteam", "--limit", 1, "--input", SAMPLE, "--output-dir", a,
              "--cache-dir", demo_cache, "--model", profile, "-q")
    assert res.exit_code == 0, res.output
    judge = json.loads((a / "summary.json").read_text())["judge"]
    assert judge["batch_invariant"] is True and judge["fingerprint"].endswith("/batch-invariant")
    assert read_manifest(a).judge.batch_invariant  # type: ignore[union-attr]
    res = cli("reproduce", a, "--output-dir", b)
    assert res.exit_code == 0, res.output
    assert "REPRODUCED: 1 cases, identical full results, free text too" in res.output


def test_compare_keeps_run_b_manifest_true(run_copy: tuple[Path, Path], tmp_path: Path,
                                           keys: tuple[Path, Path]) -> None:
    """compare writes compare.json into RUN_B and re-renders its report: RUN_B's manifest now
    covers both, so `verify` passes a folder nobody tampered with (it used to fail it); a
    signature over the old manifest is removed with a line saying how to renew it."""
    out_a, _ = run_copy
    key, pub = keys
    shutil.copytree(out_a, tmp_path / "b")
    res = cli("sign", tmp_path / "b", "--key", key)
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["compare", str(out_a), str(tmp_path / "b"), "-q"])
    assert res.exit_code == 0, res.output
    assert "manifest.json.sig removed" in res.stderr and "sign " in res.stderr
    assert "compare.json" in {o.path for o in read_manifest(tmp_path / "b").iter_outputs(
        tmp_path / "b")}
    res = cli("verify", tmp_path / "b")
    assert res.exit_code == 0, res.output
    assert cli("sign", tmp_path / "b", "--key", key).exit_code == 0
    assert cli("verify", tmp_path / "b", "--pubkey", pub).exit_code == 0


def test_compare_into_a_tampered_run_leaves_its_manifest(run_copy: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    """A RUN_B whose case report was edited keeps its old manifest: compare never attests it."""
    out_a, _ = run_copy
    shutil.copytree(out_a, tmp_path / "b")
    victim = min((tmp_path / "b" / "case_report").glob("*.json"))
    victim.write_text(victim.read_text() + "\n")  # one byte more: no longer the attested file
    res = CliRunner().invoke(main, ["compare", str(out_a), str(tmp_path / "b"), "-q"])
    assert res.exit_code == 0, res.output
    assert "warning:" in res.stderr and "manifest was not updated" in res.stderr
    assert victim.name in verify_fails(tmp_path / "b")
