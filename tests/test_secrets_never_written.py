"""No credential reaches a file the tool writes, and each key goes only to its own server.

One distinct secret is planted through each way a credential comes in (--judge-api-key,
NEXAGAUGE_JUDGE_API_KEY, a run configuration's [run], a profile's api_key_env, a URL's
userinfo, a URL's query, and a server that echoes the key it was sent back in an error), the
CLI runs against the scripted OpenAI server (tests/endpoint_stub.py), and every byte of the
output folders, the exports and the cache (sqlite files included) is searched for each.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nexagauge_local.cli import main
from tests.endpoint_stub import Reply, StubServer

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"

SECRETS = {
    "flag": "sk-flag-7Qm2Lw9xKc",
    "env": "sk-env-4Hd8Rt1zVp",
    "config": "sk-config-9Jn3Bx6sMa",
    "config_url": "pw-config-url-5Gt8Hy2j",
    "profile": "sk-profile-2Wc5Yq8eTd",
    "password": "pw-userinfo-6Fk1Nz4uGh",
    "query": "sk-query-3Lp7Dv2cXb",
}
ECHOED_CASE = "Great Wall"  # the server answers this case's requests with an echo of its key


def records(tmp_path: Path, n: int = 3) -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:n]))
    return data


def echoing() -> StubServer:
    """A server that puts the credentials it was sent into its error text for one case."""
    def script(n: int, body: dict[str, object]) -> Reply:
        if ECHOED_CASE in json.dumps(body):
            return Reply(status=400, error=f"refused user bob:{SECRETS['password']} with "
                                           f"api-key {SECRETS['query']}")
        return Reply()
    return StubServer(script=script)


def leaks(*roots: Path) -> list[str]:
    """`secret-name in path` for every planted secret found in any file under `roots`."""
    found = []
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            data = path.read_bytes()
            found += [f"{name} in {path}" for name, value in SECRETS.items()
                      if value.encode() in data]
    return found


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args)


def with_creds(url: str) -> str:
    return (url.replace("http://", f"http://bob:{SECRETS['password']}@")
            + f"?api-key={SECRETS['query']}")


def test_no_planted_secret_reaches_any_written_file(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="httpx")  # it logs every request's URL
    monkeypatch.setenv("NEXAGAUGE_JUDGE_API_KEY", SECRETS["env"])
    monkeypatch.setenv("NODE_JUDGE_KEY", SECRETS["profile"])
    data, out, cache = records(tmp_path), tmp_path / "out", tmp_path / "cache"
    basic = "Basic " + base64.b64encode(f"bob:{SECRETS['password']}".encode()).decode()
    with echoing() as default, StubServer(models=("node-judge",)) as own:
        profile = tmp_path / "node-judge.toml"
        profile.write_text(f'backend = "endpoint"\nurl = "{own.url}"\n'
                           'api_key_env = "NODE_JUDGE_KEY"\n')
        config = tmp_path / "run.toml"
        config.write_text("[run]\njudge-concurrency = 2\n")
        url = with_creds(default.url)
        common = ["--input", str(data), "--cache-dir", str(cache), "-q", "--config",
                  str(config), "--judge-url", url, "--judge-api-key", SECRETS["flag"],
                  "--model", f"redteam={profile}"]
        result = invoke(["run", "eval", "--output-dir", str(out), *common])
        assert result.exit_code == 0, result.output
        # the URL's credentials went to its server: userinfo as basic auth, the query on
        # every request; the node's own server got its profile's key only
        assert {auth for _, _, auth in default.seen} == {basic}
        assert {q for _, q, _ in default.seen} == {f"api-key={SECRETS['query']}"}
        assert {auth for _, _, auth in own.seen} == {f"Bearer {SECRETS['profile']}"}
        errors = [json.loads(p.read_text()) for p in (out / "case_report").glob("*.json")]
        assert "[redacted]" in json.dumps(errors)  # the echo arrived, scrubbed
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["settings"]["judge_url"].startswith("http://***@127.0.0.1:")
        assert manifest["settings"]["judge_url"].endswith("/v1?api-key=***")
        summary = json.loads((out / "summary.json").read_text())
        assert summary["judge"]["endpoint"]["url"] == manifest["settings"]["judge_url"]

        exports = tmp_path / "exports"
        exports.mkdir()
        for fmt in ("csv", "jsonl"):
            done = invoke(["export", str(out), "--format", fmt, "--output",
                           str(exports / f"results.{fmt}")])
            assert done.exit_code == 0, done.output
        assert invoke(["report", str(out), "-q"]).exit_code == 0
        verified = invoke(["verify", str(out)])
        assert verified.exit_code == 0, verified.output

        # reproduce takes the whole URL (and the key) from the environment, never the manifest
        again = tmp_path / "again"
        refused = invoke(["reproduce", str(out), "--output-dir", str(again)])
        assert refused.exit_code == 2 and "NEXAGAUGE_JUDGE_URL" in refused.output
        monkeypatch.setenv("NEXAGAUGE_JUDGE_URL", url)
        reproduced = invoke(["reproduce", str(out), "--output-dir", str(again)])
        assert reproduced.exit_code == 0, reproduced.output
        outputs = " ".join(r.output for r in (result, verified, refused, reproduced))
    assert not leaks(out, again, exports, cache), leaks(out, again, exports, cache)
    assert not [name for name, value in SECRETS.items() if value in outputs + caplog.text]


@pytest.mark.parametrize("line, secret", [
    (f'judge-api-key = "{SECRETS["config"]}"', "config"),
    (f'judge-url = "http://bob:{SECRETS["config_url"]}@127.0.0.1:9/v1"', "config_url"),
])
def test_a_credential_in_a_run_configuration_is_refused(tmp_path: Path, line: str,
                                                        secret: str) -> None:
    """The manifest records the configuration's text whole: a key there is refused, in one
    line that names the environment variable to use and not the key, before any work."""
    config = tmp_path / "run.toml"
    config.write_text(f"[run]\n{line}\n")
    out = tmp_path / "out"
    result = invoke(["run", "eval", "--input", str(records(tmp_path)), "--output-dir", str(out),
                     "--cache-dir", str(tmp_path / "cache"), "-q", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert f"{config}:2: run." in result.output and "NEXAGAUGE_JUDGE_" in result.output
    assert SECRETS[secret] not in result.output and "Traceback" not in result.output
    assert not out.exists() or not leaks(out)


def test_an_error_line_naming_the_server_names_no_password(tmp_path: Path) -> None:
    with StubServer(models=("other",)) as stub:
        result = invoke(["run", "redteam", "--input", str(records(tmp_path)), "--output-dir",
                         str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "-q",
                         "--judge-url", with_creds(stub.url), "--judge-model-name", "absent"])
    assert result.exit_code == 2, result.output
    assert "judge server http://127.0.0.1:" in result.output  # the URL without credentials
    assert SECRETS["password"] not in result.output and SECRETS["query"] not in result.output


# ------------------------------------------------------------------ a key goes to its server


def run_with_node_server(tmp_path: Path, api_key_env: str | None, *extra: str
                         ) -> tuple[StubServer, StubServer, Result]:
    with StubServer() as default, StubServer(models=("node-judge",)) as own:
        profile = tmp_path / "node-judge.toml"
        profile.write_text(f'backend = "endpoint"\nurl = "{own.url}"\n'
                           + (f'api_key_env = "{api_key_env}"\n' if api_key_env else ""))
        result = invoke(["run", "eval", "--input", str(records(tmp_path, 2)), "--output-dir",
                         str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "-q",
                         "--judge-url", default.url, "--model", f"redteam={profile}", *extra])
    return default, own, result


def test_a_nodes_own_server_gets_its_profiles_key_not_the_command_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_JUDGE_KEY", SECRETS["profile"])
    default, own, result = run_with_node_server(tmp_path, "NODE_JUDGE_KEY",
                                                "--judge-api-key", SECRETS["flag"])
    assert result.exit_code == 0, result.output
    assert own.seen and {a for _, _, a in own.seen} == {f"Bearer {SECRETS['profile']}"}
    assert default.seen and {a for _, _, a in default.seen} == {f"Bearer {SECRETS['flag']}"}


def test_a_nodes_own_server_never_gets_the_environments_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXAGAUGE_JUDGE_API_KEY", SECRETS["env"])
    default, own, result = run_with_node_server(tmp_path, None)
    assert result.exit_code == 0, result.output
    assert own.seen and {a for _, _, a in own.seen} == {None}
    assert {a for _, _, a in default.seen} == {f"Bearer {SECRETS['env']}"}
