"""Device kit: split/join/verify round trip, manifest schema, wheel choice, the call plan.

No network: pip is replaced by fake resolvers, wheels are fabricated zip files.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from device_kit import assemble, bundle, callplan, wheels
from device_kit import cli as kit_cli
from device_kit.bundle import BundleError, Manifest

ROOT = Path(__file__).resolve().parents[1]
KiB = 1024


def random_file(path: Path, size: int, seed: int) -> Path:
    path.write_bytes(random.Random(seed).randbytes(size))
    return path


@pytest.fixture()
def kit(tmp_path: Path) -> tuple[Path, Manifest, list[Path]]:
    """A kit of 4 MB of random data: one file over several parts, small ones, an empty one."""
    src = tmp_path / "src"
    src.mkdir()
    files = [
        random_file(src / "big-0.1-py3-none-any.whl", 2_600 * KiB, 1),
        random_file(src / "mid-1.0-py3-none-any.whl", 900 * KiB, 2),
        random_file(src / "small-2.0-py3-none-any.whl", 300 * KiB, 3),
        random_file(src / "empty-0.0-py3-none-any.whl", 0, 4),
        random_file(src / callplan.TOKENIZER_TAR, 200 * KiB, 5),
    ]
    kinds: list[tuple[Path, bundle.FileKind]] = [(f, "wheel") for f in files[:-1]]
    kinds.append((files[-1], "tokenizer"))
    out = tmp_path / "kit"
    manifest = bundle.build(kinds, out, limit=1024 * KiB, notes={"vllm": {"version": "9.9"}})
    return out, manifest, files


def stage_all(out: Path, manifest: Manifest, stage: Path) -> None:
    """What the device calls do: copy each call's folder into one staging folder."""
    stage.mkdir(parents=True, exist_ok=True)
    for call in range(1, manifest.calls + 1):
        for part in bundle.call_dir(out, call).iterdir():
            (stage / part.name).write_bytes(part.read_bytes())


# ---------------------------------------------------------------- split / pack


@pytest.mark.parametrize(("size", "limit", "want"), [
    (0, 10, [(0, 0)]), (10, 10, [(0, 10)]), (11, 10, [(0, 10), (10, 1)]),
    (25, 10, [(0, 10), (10, 10), (20, 5)]),
])  # fmt: skip
def test_chunk_ranges(size: int, limit: int, want: list[tuple[int, int]]) -> None:
    assert bundle.chunk_ranges(size, limit) == want


def test_pack_calls_respects_limit_and_fills_calls() -> None:
    sizes = [55, 55, 30, 20, 5, 5, 1, 54]
    calls = bundle.pack_calls(sizes, 55)
    loads: dict[int, int] = {}
    for s, c in zip(sizes, calls, strict=True):
        loads[c] = loads.get(c, 0) + s
    assert all(v <= 55 for v in loads.values())
    assert sorted(loads) == list(range(1, len(loads) + 1))
    assert len(loads) == 5  # 225 bytes: 55+55+54+(30+20+5)+ (5+1)
    with pytest.raises(ValueError, match="over the 55-byte limit"):
        bundle.pack_calls([56], 55)


# ---------------------------------------------------------------- round trip


def test_round_trip_parts_within_limit_and_sha256_verified(kit, tmp_path: Path) -> None:
    out, manifest, files = kit
    limit = manifest.part_limit
    for f in manifest.files:
        assert all(p.size <= limit for p in f.parts)
        assert sum(p.size for p in f.parts) == f.size
    for call in range(1, manifest.calls + 1):
        on_disk = list(bundle.call_dir(out, call).iterdir())
        assert sum(p.stat().st_size for p in on_disk) <= limit
        assert {p.name for p in on_disk} == {p.name for p in manifest.parts_of_call(call)}
    big = next(f for f in manifest.files if f.name.startswith("big"))
    assert len(big.parts) == 3
    stage, into = tmp_path / "stage", tmp_path / "joined"
    stage_all(out, manifest, stage)
    joined = bundle.join(manifest, stage, into)
    assert [p.name for p in joined] == [f.name for f in files]
    for original, result in zip(files, joined, strict=True):
        assert result.read_bytes() == original.read_bytes()
    for entry in manifest.files:
        assert entry.sha256 == hashlib.sha256((into / entry.name).read_bytes()).hexdigest()


def test_corrupt_missing_or_short_part_is_named(kit, tmp_path: Path) -> None:
    out, manifest, _ = kit
    stage = tmp_path / "stage"
    stage_all(out, manifest, stage)
    victim = manifest.files[0].parts[1]
    data = bytearray((stage / victim.name).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (stage / victim.name).write_bytes(bytes(data))
    with pytest.raises(BundleError, match=f"{victim.name}: sha256 mismatch"):
        bundle.join(manifest, stage, tmp_path / "j1")
    (stage / victim.name).write_bytes(bytes(data[:-1]))
    with pytest.raises(BundleError, match=f"{victim.name}: .* bytes, manifest says"):
        bundle.verify_parts(manifest, stage)
    (stage / victim.name).unlink()
    with pytest.raises(BundleError, match=f"{victim.name}: missing .*call {victim.call}"):
        bundle.verify_parts(manifest, stage)


def test_joined_file_checked_against_whole_sha(kit, tmp_path: Path) -> None:
    """Parts that each verify but belong to a different file version are still caught."""
    out, manifest, _ = kit
    stage = tmp_path / "stage"
    stage_all(out, manifest, stage)
    first = manifest.files[0]
    forged = Manifest.from_json(manifest.dump().replace(first.sha256, "0" * 64, 1))
    with pytest.raises(BundleError, match=f"{first.name}: joined file does not match"):
        bundle.join(forged, stage, tmp_path / "j")


def test_bundle_runs_on_the_device_with_the_standard_library_only(kit, tmp_path: Path) -> None:
    """`python -S` (no site-packages): the device joins the kit before anything is installed."""
    out, manifest, files = kit
    stage = tmp_path / "stage"
    stage_all(out, manifest, stage)
    script = ROOT / "device_kit" / "bundle.py"
    into = tmp_path / "device_kit"
    run = [sys.executable, "-S", str(script), "join", "--manifest", str(out / "manifest.json"),
           "--stage", str(stage), "--into", str(into)]  # fmt: skip
    ok = subprocess.run(run, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert f"{len(files)} files joined and verified" in ok.stdout
    (stage / manifest.files[1].parts[0].name).write_bytes(b"tampered")
    bad = subprocess.run(run, capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and manifest.files[1].parts[0].name in bad.stderr


# ---------------------------------------------------------------- manifest schema


def test_manifest_schema(kit) -> None:
    out, manifest, _ = kit
    doc = json.loads((out / "manifest.json").read_text())
    assert set(doc) == {"schema", "part_limit", "calls", "files", "notes"}
    assert doc["schema"] == bundle.MANIFEST_SCHEMA and doc["part_limit"] == 1024 * KiB
    assert doc["notes"] == {"vllm": {"version": "9.9"}}
    entry = doc["files"][0]
    assert set(entry) == {"name", "kind", "size", "sha256", "parts"}
    assert set(entry["parts"][0]) == {"name", "offset", "size", "sha256", "call"}
    assert [f["kind"] for f in doc["files"]].count("tokenizer") == 1
    assert Manifest.from_json((out / "manifest.json").read_text()) == manifest


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("files"), "files is missing"),
    (lambda d: d.update(schema="other/2"), "schema must be"),
    (lambda d: d["files"][0].update(sha256="XYZ"), r"files\[0\].sha256 must be 64"),
    (lambda d: d["files"][0]["parts"][0].update(call=0), r"files\[0\].parts\[0\].call must be"),
    (lambda d: d["files"][0].update(kind="movie"), r"files\[0\].kind must be one of"),
    (lambda d: d["files"][0].update(name="../etc/passwd"), "plain file name"),
])  # fmt: skip
def test_bad_manifest_names_the_field(kit, edit, message: str) -> None:
    out, _, _ = kit
    doc = json.loads((out / "manifest.json").read_text())
    edit(doc)
    with pytest.raises(BundleError, match=message):
        Manifest.from_json(json.dumps(doc), "m.json")


# ---------------------------------------------------------------- the call plan


def test_plan_stages_every_part_then_installs_and_runs(kit) -> None:
    _, manifest, _ = kit
    calls = callplan.plan_calls(manifest, ".device_kit")
    n = manifest.calls
    assert len(calls) == n + len(callplan.BENCH_CALLS)
    for k, call in enumerate(calls[:n], 1):
        assert call.carry[0] == f".device_kit/calls/{k:02d}"
        assert f"cp .device_kit/calls/{k:02d}/* {callplan.STAGE}/" in call.command
        assert len(call.command) <= callplan.MAX_COMMAND and call.timeout_s <= 600
    assert "nvidia-smi" in calls[0].command  # the first call checks what the plan relies on
    last = calls[n - 1].command
    assert calls[n - 1].carry == (f".device_kit/calls/{n:02d}", ".device_kit/manifest.json")
    order = ["bundle.py join --manifest .device_kit/manifest.json",
             "pip install -q --no-index --no-deps", f"--target {callplan.SITE}",
             "tar -xzf", "VLLM_USE_FLASHINFER_SAMPLER=0", "import vllm", "pytest -q --maxfail=3 -m gpu"]  # fmt: skip
    positions = [last.index(s) for s in order]
    assert positions == sorted(positions)
    bench = [c.command for c in calls[n:]]
    assert all("scripts/bench_gpu.py" in c and "$OUT/bench_gpu.json" in c for c in bench)
    assert [c.split("--phases ")[1].split()[0] for c in bench] == [
        "probe,ours_caps", "baseline", "ours", "ours_clip", "ours_outlines", "hf"]


def test_plan_command_prints_runnable_calls(kit, monkeypatch: pytest.MonkeyPatch) -> None:
    out, manifest, _ = kit
    monkeypatch.setattr(kit_cli, "ROOT", out.parent)  # the kit sits in the repo root
    result = CliRunner().invoke(kit_cli.main, ["plan", "--out", str(out)])
    assert result.exit_code == 0, result.output
    runs = [json.loads(line[4:]) for line in result.output.splitlines() if line.startswith("run ")]
    assert runs == [c["run"] for c in json.loads((out / "calls.json").read_text())]
    assert runs[0]["carry"] == ["kit/calls/01"]
    assert f"Device calls: {manifest.calls + len(callplan.BENCH_CALLS)}" in result.output
    missing = CliRunner().invoke(kit_cli.main, ["plan", "--out", str(out / "nope")])
    assert missing.exit_code == 2 and "manifest not found" in missing.output


def test_missing_kinds_file_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        kit_cli.main, ["resolve", "--kinds", str(tmp_path / "KINDS.md"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "KINDS.md: not found" in result.output and "--kinds" in result.output


# ---------------------------------------------------------------- the device and its wheels

KINDS_EXCERPT = """
| pip list, as a session saw it | 2026-11, in sessions' own output there: python3 is Python 3.12.3, \
at /opt/torch/.venv/bin/python3. One session's pip list, filtered by the names it asked for: \
accelerate 1.15.0, numpy 2.5.2, torch 2.11.0, transformers 5.17.0, triton 3.6.0 |

## Python packages already there

nvidia-h100-x1: their image holds these. Packages: accelerate, Jinja2, numpy, torch, \
transformers, triton, typing-extensions, requests.
"""


@pytest.fixture()
def device() -> wheels.DeviceEnv:
    return wheels.parse_kinds(KINDS_EXCERPT)


def test_parse_kinds(device: wheels.DeviceEnv) -> None:
    assert device.python == "3.12" and device.python_full == "3.12.3"
    assert device.torch == "2.11.0" and device.versions["transformers"] == "5.17.0"
    assert device.has("jinja2") and device.has("Typing_Extensions") and not device.has("vllm")
    with pytest.raises(ValueError, match="no 'Packages:"):
        wheels.parse_kinds("nothing here")


def test_markers_are_evaluated_for_the_device_not_this_host(device) -> None:
    reqs = ['six>=1.16; python_version > "3.11"', 'av; extra == "audio"',
            'torch==2.11.0', 'pywin32; sys_platform == "win32"']  # fmt: skip
    names = [r.name for r in wheels.runtime_requirements(reqs, device.marker_env())]
    assert names == ["six", "torch"]
    with_audio = wheels.runtime_requirements(reqs, device.marker_env(), extras=["audio"])
    assert [r.name for r in with_audio] == ["six", "av", "torch"]
    assert wheels.torch_pin(reqs, device.marker_env()) == "2.11.0"
    assert wheels.same_release("2.11.0+cu130", "2.11.0")
    assert not wheels.same_release("2.13.0", "2.11.0")


def _dist(name: str, version: str, *requires: str) -> wheels.Dist:
    return wheels.Dist(name, version, f"{name}-{version}-py3-none-any.whl",
                       f"https://x/{name}", tuple(requires))  # fmt: skip


def test_pick_vllm_takes_the_newest_release_pinning_the_device_torch(device) -> None:
    meta = {
        "0.33.0": _dist("vllm", "0.33.0", "torch==2.14.0"),
        "0.27.0": None,  # no wheel for the platform
        "0.26.0": _dist("vllm", "0.26.0", "torch==2.11.0", "transformers>=6"),
        "0.25.0": _dist("vllm", "0.25.0", "torch==2.11.0", "transformers>=5.5"),
        "0.20.0": _dist("vllm", "0.20.0", "torch==2.11.0"),
    }
    asked: list[str] = []

    def fetch(v: str) -> wheels.Dist | None:
        asked.append(v)
        return meta[v]

    choice = wheels.pick_vllm([*meta, "0.34.0rc1", "0.11.0"], fetch, device)
    assert choice.dist.version == "0.25.0"
    assert asked == ["0.33.0", "0.27.0", "0.26.0", "0.25.0"]
    assert "pins torch 2.14.0" in choice.tried[0] and "no wheel" in choice.tried[1]
    assert "transformers>=6 (device has 5.17.0)" in choice.tried[2]
    with pytest.raises(LookupError, match="no vLLM release pins"):
        wheels.pick_vllm(["0.33.0"], fetch, device)


def test_walk_stops_at_the_device_and_the_skip_list(device) -> None:
    index = {
        "vllm==0.26.0": _dist("vllm", "0.26.0", "torch==2.11.0", "numpy<2.4", "xgrammar>=0.2",
                              "fastapi[standard]>=0.1", "flashinfer-python==0.6",
                              'six; python_version > "3.11"'),
        "xgrammar>=0.2": _dist("xgrammar", "0.2.8", "transformers>=4", "ninja"),
        "fastapi>=0.1": _dist("fastapi", "0.136", "starlette", 'uvicorn; extra == "standard"'),
        "six": _dist("six", "1.17"),
        "ninja": _dist("ninja", "1.13"),
        "starlette": _dist("starlette", "1.0", "anyio"),
        "uvicorn": _dist("uvicorn", "0.5"),
        "anyio": _dist("anyio", "4.0"),
    }  # fmt: skip
    calls: list[list[str]] = []

    def resolve(specs):
        calls.append(list(specs))
        return {s: index[s] for s in specs}

    c = wheels.walk(["vllm==0.26.0"], device, resolve, skip={"flashinfer-python": "lazy"})
    assert sorted(c.carry) == ["anyio", "fastapi", "ninja", "six", "starlette", "uvicorn",
                               "vllm", "xgrammar"]  # fmt: skip
    assert c.skipped == {"flashinfer-python": "lazy"}
    assert c.on_device["torch"] == "2.11.0" and "transformers" in c.on_device
    assert c.problems == ["vllm needs numpy<2.4, device has 2.5.2"]
    assert len(calls) == 4  # one resolve per level of the walk
    assert c.extras["fastapi"] == {"standard"}


def test_walk_adds_extras_requested_later(device) -> None:
    index = {"a": _dist("a", "1", "b", "c"), "b": _dist("b", "1", "d[x]"),
             "c": _dist("c", "1", "d"), "d": _dist("d", "1", 'e; extra == "x"'),
             "e": _dist("e", "1")}  # fmt: skip
    c = wheels.walk(["a"], device, lambda specs: {s: index[s] for s in specs}, skip={})
    assert sorted(c.carry) == ["a", "b", "c", "d", "e"]


def fake_wheel(path: Path, requires: list[str], cudart: str | None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        meta = "Metadata-Version: 2.1\nName: vllm\nVersion: 0.26.0\n"
        meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
        zf.writestr("vllm-0.26.0.dist-info/METADATA", meta)
        if cudart:
            zf.writestr(
                "vllm/_C_stable_libtorch.abi3.so",
                b"\x7fELF...libtorch.so\0" + f"libcudart.so.{cudart}\0".encode(),
            )
        zf.writestr("vllm/__init__.py", "")
    return path


def test_vllm_wheel_rechecked_from_its_own_metadata(device, tmp_path: Path) -> None:
    good = fake_wheel(tmp_path / "good.whl", ["torch==2.11.0", 'av; extra == "audio"'], "13")
    info = assemble.verify_vllm_wheel(good, device, "13")
    assert info == {"version": "0.26.0", "torch_pin": "2.11.0", "libcudart": ["13"]}
    wrong_torch = fake_wheel(tmp_path / "t.whl", ["torch==2.13.0"], "13")
    with pytest.raises(ValueError, match="pins torch 2.13.0"):
        assemble.verify_vllm_wheel(wrong_torch, device, "13")
    wrong_cuda = fake_wheel(tmp_path / "c.whl", ["torch==2.11.0"], "12")
    with pytest.raises(ValueError, match=r"libcudart.so.\['12'\]"):
        assemble.verify_vllm_wheel(wrong_cuda, device, "13")


def test_export_tokenizer_tar_packs_saved_files(tmp_path: Path) -> None:
    import tarfile

    class Tok:
        def save_pretrained(self, folder: str) -> None:
            Path(folder, "tokenizer.json").write_text("{}")
            Path(folder, "tokenizer_config.json").write_text("{}")

    tar = assemble.export_tokenizer_tar(Tok(), tmp_path / "t" / callplan.TOKENIZER_TAR)
    with tarfile.open(tar) as tf:
        assert sorted(tf.getnames()) == ["tokenizer.json", "tokenizer_config.json"]
