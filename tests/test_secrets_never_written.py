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


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def forms(value: str) -> dict[str, bytes]:
    """Each way a secret can travel: as itself, as an Authorization header's Bearer token, and
    as a password in Basic's base64 of `user:password` (where the value itself never shows)."""
    return {"": value.encode(), " as Bearer": f"Bearer {value}".encode(),
            " as Basic": basic("bob", value).encode()}


def leaks(*roots: Path) -> list[str]:
    """`secret-name [form] in path` for every planted secret found, in any of its forms, in any
    file under `roots`."""
    found = []
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            data = path.read_bytes()
            found += [f"{name}{form} in {path}" for name, value in SECRETS.items()
                      for form, needle in forms(value).items() if needle in data]
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
    userinfo = "Basic " + basic("bob", SECRETS["password"])
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
        assert {auth for _, _, auth in default.seen} == {userinfo}  # not the flag's key
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


@pytest.mark.parametrize("text, where", [
    (f'[run]\ncluster = "ray://bob:{SECRETS["config_url"]}@10.0.0.5:10001"\n', ":2: run.cluster:"),
    (f'[run]\nhost-api-token = "{SECRETS["config"]}"\n', ":2: run.host-api-token:"),
    (('[defaults.redteam]\n[[defaults.redteam.metrics]]\nname = "m"\nrubric = { goal = "Answers '
      f'as https://wiki.example/x?sig={SECRETS["config_url"]} says" }}\n'),
     ":4: defaults.redteam.metrics.0.rubric.goal:"),
    (f'[defaults.redteam]\nscoring_mode = "http://bob:{SECRETS["config_url"]}@h/v1"\n',
     ":2: defaults.redteam.scoring_mode:"),
])
def test_any_credential_anywhere_in_a_run_configuration_is_refused(tmp_path: Path, text: str,
                                                                   where: str) -> None:
    """Not only [run]'s judge keys: a URL with a userinfo or a secret parameter in any value,
    or a value named like a key, is refused once, by its line, and echoed by no other check
    (a bad scoring_mode would otherwise be quoted in its own error)."""
    config = tmp_path / "run.toml"
    config.write_text(text)
    out = tmp_path / "out"
    result = invoke(["run", "eval", "--input", str(records(tmp_path)), "--output-dir", str(out),
                     "--cache-dir", str(tmp_path / "cache"), "-q", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert f"{config}{where}" in result.output and "not kept in a run configuration" in result.output
    assert "1 problem(s)" in result.output and "Traceback" not in result.output
    assert not [name for name, value in SECRETS.items() if value in result.output]
    assert not out.exists() or not leaks(out)


def test_a_url_without_credentials_in_a_run_configuration_is_kept(tmp_path: Path) -> None:
    from nexagauge_local.app.run_config import read_run_config

    config = tmp_path / "run.toml"
    config.write_text('[run]\ncluster = "ray://10.0.0.5:10001"\n[defaults.redteam]\n'
                      '[[defaults.redteam.metrics]]\nname = "m"\n'
                      'rubric = { goal = "Cites https://wiki.example/x?page=2 only" }\n')
    assert "ray://10.0.0.5:10001" in read_run_config(config).source.text


def test_an_error_line_naming_the_server_names_no_password(tmp_path: Path) -> None:
    with StubServer(models=("other",)) as stub:
        result = invoke(["run", "redteam", "--input", str(records(tmp_path)), "--output-dir",
                         str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "-q",
                         "--judge-url", with_creds(stub.url), "--judge-model-name", "absent"])
    assert result.exit_code == 2, result.output
    assert "judge server http://127.0.0.1:" in result.output  # the URL without credentials
    assert SECRETS["password"] not in result.output and SECRETS["query"] not in result.output


# ------------------------------------------------------------------ a key goes to its server


def echoing_auth() -> tuple[StubServer, list[str]]:
    """A server that answers one case with the Authorization header it was sent, as a careless
    server's error text would; the echoes it sent are listed."""
    echoes: list[str] = []

    def script(n: int, body: dict[str, object]) -> Reply:
        if ECHOED_CASE in json.dumps(body):
            echoes.append(f"refused Authorization: {server.seen[-1][2]}")
            return Reply(status=401, error=echoes[-1])
        return Reply()
    server = StubServer(script=script)
    return server, echoes


def run_with_node_server(tmp_path: Path, api_key_env: str | None, *extra: str
                         ) -> tuple[StubServer, StubServer, Result]:
    """`run eval` with the default judge server (answering one case with an echo of its
    Authorization header) and a node's own server; the caller scans what it wrote."""
    echo, echoes = echoing_auth()
    with echo as default, StubServer(models=("node-judge",)) as own:
        profile = tmp_path / "node-judge.toml"
        profile.write_text(f'backend = "endpoint"\nurl = "{own.url}"\n'
                           + (f'api_key_env = "{api_key_env}"\n' if api_key_env else ""))
        result = invoke(["run", "eval", "--input", str(records(tmp_path, 2)), "--output-dir",
                         str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "-q",
                         "--judge-url", default.url, "--model", f"redteam={profile}", *extra])
    assert echoes and all("Bearer " in e for e in echoes)  # the key came back in an error
    return default, own, result


def test_a_nodes_own_server_gets_its_profiles_key_not_the_command_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_JUDGE_KEY", SECRETS["profile"])
    default, own, result = run_with_node_server(tmp_path, "NODE_JUDGE_KEY",
                                                "--judge-api-key", SECRETS["flag"])
    assert result.exit_code == 0, result.output
    assert own.seen and {a for _, _, a in own.seen} == {f"Bearer {SECRETS['profile']}"}
    assert default.seen and {a for _, _, a in default.seen} == {f"Bearer {SECRETS['flag']}"}
    # the flag's key was sent (no userinfo replaced it) and echoed back: written nowhere
    assert not leaks(tmp_path / "out", tmp_path / "cache"), leaks(tmp_path / "out",
                                                                  tmp_path / "cache")
    assert not [name for name, value in SECRETS.items() if value in result.output]


def test_a_nodes_own_server_never_gets_the_environments_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXAGAUGE_JUDGE_API_KEY", SECRETS["env"])
    default, own, result = run_with_node_server(tmp_path, None)
    assert result.exit_code == 0, result.output
    assert own.seen and {a for _, _, a in own.seen} == {None}
    assert {a for _, _, a in default.seen} == {f"Bearer {SECRETS['env']}"}
    assert not leaks(tmp_path / "out", tmp_path / "cache"), leaks(tmp_path / "out",
                                                                  tmp_path / "cache")
