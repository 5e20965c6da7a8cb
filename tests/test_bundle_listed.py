"""A bundle holds only what its manifest lists, install.sh installs the listed wheels by name,
and the manifest can be signed with the audit trail's keys (`bundle build --sign`,
`bundle verify --pubkey`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.audit.signing import new_keypair
from nexagauge_local.bundle import joiner
from nexagauge_local.bundle.build import BuildRequest, build
from nexagauge_local.cli import main
from tests.test_bundle import TARGET, FakePip, make_wheel

WHEELS = ["nexagauge_local-0.1.0-py3-none-any.whl", "tinydep-1.2-py3-none-any.whl",
          "vllm-0.26.0-py3-none-any.whl"]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return new_keypair(tmp_path_factory.mktemp("keys"))


def _bundle(tmp_path: Path, sign_key: Path | None = None) -> Path:
    project = make_wheel(tmp_path / "proj", "nexagauge-local", "0.1.0", ["tinydep>=1"])
    out = tmp_path / "bundle"
    signed = {"sign_key": sign_key} if sign_key else {}
    build(BuildRequest(target=TARGET, output=out, project_wheel=project, **signed),
          FakePip(project), lambda _: None)
    return out


def _verify(bundle: Path, *extra: str) -> tuple[int, list[str]]:
    res = CliRunner().invoke(main, ["bundle", "verify", str(bundle), *extra])
    return res.exit_code, res.output.strip().splitlines()


def test_verify_fails_on_files_the_manifest_does_not_list(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    assert _verify(bundle)[0] == 0
    make_wheel(bundle / "wheels", "tinydep", "9.9")  # pip --find-links would prefer it
    (bundle / "notes.txt").write_text("mine")
    code, lines = _verify(bundle)
    assert code == 1, lines
    named = [ln for ln in lines if "not listed in MANIFEST.json" in ln]
    assert named == [("not listed in MANIFEST.json: notes.txt, wheels/tinydep-9.9-py3-none-any.whl"
                      " (a bundle holds only what it lists)")]
    # install.sh runs the same check: nothing is installed
    proc = subprocess.run(["bash", str(bundle / "install.sh"), "--python", sys.executable,
                           "--dry-run"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "tinydep-9.9" in proc.stderr and "would run" not in proc.stdout


def test_install_sh_installs_the_manifest_wheels_by_name(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    script = (bundle / "install.sh").read_text()
    assert "*.whl" not in script  # a glob installs whatever else is in wheels/
    target_line = next(ln for ln in script.splitlines() if "--target \"$TARGET\"" in ln)
    assert target_line.endswith(" ".join(f'"$HERE"/wheels/{w}' for w in WHEELS))


def test_install_sh_is_listed_so_a_changed_script_is_named(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    files = {f["path"]: f for f in json.loads((bundle / "MANIFEST.json").read_text())["files"]}
    assert files["install.sh"]["kind"] == "script"
    script = bundle / "install.sh"
    script.write_text(script.read_text().replace("set -euo pipefail", "set -eu; curl x | sh"))
    code, lines = _verify(bundle)
    assert code == 1 and "install.sh: " in lines[0], lines


def test_a_signed_manifest_verifies_under_its_key_only(
    tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    private, public = keys
    bundle = _bundle(tmp_path, sign_key=private)
    assert (bundle / "MANIFEST.json.sig").is_file()
    code, lines = _verify(bundle, "--pubkey", str(public))
    assert code == 0 and "signature valid (key " in lines[-1], lines
    code, lines = _verify(bundle)
    assert code == 0 and "MANIFEST.json.sig not checked (pass --pubkey)" in lines[-1]
    # another key, an edited manifest, no signature: exit 1, one line naming the signature
    _, other = new_keypair(tmp_path / "other")
    code, lines = _verify(bundle, "--pubkey", str(other))
    assert code == 1 and "MANIFEST.json.sig: does not match MANIFEST.json" in lines[0], lines
    manifest = bundle / "MANIFEST.json"
    manifest.write_text(manifest.read_text().replace('"vllm": "0.26.0"', '"vllm": "0.27.0"'))
    code, lines = _verify(bundle, "--pubkey", str(public))
    assert code == 1 and "does not match MANIFEST.json" in lines[0], lines
    (bundle / "MANIFEST.json.sig").unlink()
    code, lines = _verify(bundle, "--pubkey", str(public))
    assert code == 1 and "no signature (sign with `bundle build --sign KEYFILE`)" in lines[0]


def test_a_rebuild_does_not_keep_an_old_signature(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    bundle = _bundle(tmp_path, sign_key=keys[0])
    _bundle(tmp_path)  # the same --output, unsigned this time
    assert not (bundle / "MANIFEST.json.sig").exists()


def test_build_with_a_bad_sign_key_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("not a key")
    res = CliRunner().invoke(main, [
        "bundle", "build", "--python", "3.12", "--platform", "manylinux_2_28_x86_64",
        "--torch", "2.11.0", "--sign", str(bad), "--output", str(tmp_path / "b"),
    ])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "not a readable unencrypted PEM private key" in lines[0]
    assert not (tmp_path / "b").exists()


def test_unlisted_names_parts_and_links(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (bundle / "wheels" / "mirror").symlink_to(tmp_path / "proj", target_is_directory=True)
    assert joiner.unlisted(bundle, joiner.read_manifest(bundle)) == ["wheels/mirror"]
