"""The endpoint judge's configuration: profile keys, the fingerprint rule, the API key's
sources and its absence from what a run writes."""

from __future__ import annotations

import email.utils
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from nexagauge_local.app.run_facts import redact_secrets
from nexagauge_local.judge import make_backend_factory
from nexagauge_local.judge.endpoint import EndpointConfig, EndpointOptions, EndpointUnusable
from nexagauge_local.judge.endpoint.http import retry_after
from nexagauge_local.judge.endpoint.setup import api_key
from nexagauge_local.judge.profiles import JudgeProfile, ProfileInvalid, resolve_profile
from tests.endpoint_stub import StubServer


def test_an_endpoint_profile_needs_a_url_and_no_weights(tmp_path: Path) -> None:
    good = tmp_path / "team.toml"
    good.write_text('backend = "endpoint"\nurl = "http://127.0.0.1:1/v1"\n')
    prof = resolve_profile(str(good))
    assert prof.is_endpoint and prof.weights == "" and prof.concurrency == 16
    bad = tmp_path / "nourl.toml"
    bad.write_text('backend = "endpoint"\n')
    with pytest.raises(ProfileInvalid, match="needs url"):
        resolve_profile(str(bad))
    local = tmp_path / "noweights.toml"
    local.write_text('backend = "hf"\n')
    with pytest.raises(ProfileInvalid, match="weights is required"):
        resolve_profile(str(local))


def test_fingerprint_names_model_revision_and_what_is_served_not_the_url() -> None:
    a = EndpointConfig(url="http://a:8000/v1", model="qwen-7b", revision="r1", root="/m/q",
                       max_model_len=4096)
    b = EndpointConfig(url="http://b:9000/v1", model="qwen-7b", revision="r1", root="/m/q",
                       max_model_len=4096)
    assert a.fingerprint == b.fingerprint == \
        "endpoint:qwen-7b@r1/json_schema[root=/m/q,max_model_len=4096]"
    for other in (replace(a, model="qwen-14b"), replace(a, root="/m/llama"),
                  replace(a, max_model_len=8192), replace(a, revision="r2")):
        assert other.fingerprint != a.fingerprint, other
    assert EndpointConfig(url="http://a/v1", model="m").fingerprint == \
        "endpoint:m@unrevised/json_schema[root=?,max_model_len=?]"
    assert "zzz" not in repr(EndpointConfig(url="http://a/v1", model="m", api_key="zzz"))
    assert a.reuse_notice() is None and "'/m/q'" in (replace(a, revision="").reuse_notice() or "")


def test_factory_asks_the_server_for_its_model(tmp_path: Path) -> None:
    with StubServer(models=("only-one",), max_model_len=2048) as stub:
        factory = make_backend_factory("demo", cache_dir=tmp_path,
                                       endpoint=EndpointOptions(url=stub.url, revision="v2"))
    assert factory.decision.backend == "endpoint" and factory.decision.grammar == "server"
    assert factory.decision.fingerprint == \
        "endpoint:only-one@v2/json_schema[root=/weights/stub-judge,max_model_len=2048]"
    assert factory.profile.max_model_len == 2048  # the server's window
    assert not factory.device_seconds_known
    with StubServer() as stub, pytest.raises(EndpointUnusable, match="drop --backend"):
        make_backend_factory("demo", backend="vllm", cache_dir=tmp_path,
                             endpoint=EndpointOptions(url=stub.url))


def test_api_key_sources_in_order() -> None:
    prof = JudgeProfile(name="t", backend="endpoint", url="http://x/v1", api_key_env="TEAM_KEY")
    env = {"TEAM_KEY": "team", "NEXAGAUGE_JUDGE_API_KEY": "general"}
    assert api_key(prof, EndpointOptions(api_key="flag"), env) == "flag"
    assert api_key(prof, EndpointOptions(), env) == "team"
    # NEXAGAUGE_JUDGE_API_KEY reaches the judge as the options' key (RunSettings reads it) and
    # only for the default judge's server: read here, it would go to a node's own server too
    assert api_key(prof, EndpointOptions(), {"NEXAGAUGE_JUDGE_API_KEY": "general"}) is None
    assert api_key(prof, EndpointOptions(), {}) is None


def test_redacted_command_line() -> None:
    argv = ["nexagauge-local", "run", "--judge-api-key", "k1", "--judge-api-key=k2", "--model", "x"]
    assert redact_secrets(argv) == ["nexagauge-local", "run", "--judge-api-key", "***",
                                    "--judge-api-key=***", "--model", "x"]
    with_url = ["run", "--judge-url", "http://bob:pw@h:8000/v1?api-key=k3&api-version=2",
                "--judge-url=https://tok@h/v1"]
    assert redact_secrets(with_url) == ["run", "--judge-url",
                                        "http://***@h:8000/v1?api-key=***&api-version=2",
                                        "--judge-url=https://***@h/v1"]


def test_retry_after_seconds_and_dates() -> None:
    req = httpx.Request("GET", "http://x")
    assert retry_after(httpx.Response(429, headers={"Retry-After": "3"}, request=req)) == 3.0
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    got = retry_after(httpx.Response(429, headers={"Retry-After": when}, request=req))
    assert got is not None and 3.0 < got <= 5.0
    assert retry_after(httpx.Response(429, request=req)) is None
    assert retry_after(httpx.Response(429, headers={"Retry-After": "soon"}, request=req)) is None


def test_the_server_options_are_one_typed_value_under_their_flat_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RunSettings holds the --judge-* options as one EndpointOptions; keyword arguments,
    NEXAGAUGE_JUDGE_* variables and a recorded manifest keep their flat judge_* names, and the
    API key is in no dump."""
    import json

    from nexagauge_local.settings import RunSettings

    monkeypatch.setenv("NEXAGAUGE_JUDGE_API_KEY", "from-env")
    nested = RunSettings(endpoint={"url": "http://h/v1", "concurrency": 4})
    flat = RunSettings(judge_url="http://h/v1", judge_concurrency=4)
    assert nested.endpoint == flat.endpoint == EndpointOptions(
        url="http://h/v1", concurrency=4, api_key="from-env")
    assert nested.endpoint.key() == "from-env"
    dump = nested.model_dump(mode="json")
    assert (dump["judge_url"], dump["judge_concurrency"]) == ("http://h/v1", 4)
    assert "endpoint" not in dump and "from-env" not in json.dumps(dump)
    assert RunSettings.model_validate(dump).endpoint == nested.endpoint  # reproduce's way back


def test_each_server_option_is_one_judge_flag() -> None:
    """The --judge-* flags are EndpointOptions' fields, no more and no fewer: a field added
    there without a flag (or a flag without a field) fails here, not in a user's run."""
    import click

    from nexagauge_local.cli.options import endpoint_options
    from nexagauge_local.settings import ENDPOINT_FIELDS

    def command(**values: object) -> None:
        pass

    flags = click.command()(endpoint_options(command))
    assert sorted(p.name or "" for p in flags.params) == sorted(ENDPOINT_FIELDS)
