"""An endpoint judge resolved from its profile and the command line: the server asked which
model it serves (GET /models), before any record is read."""

from __future__ import annotations

import os
from collections.abc import Mapping

from nexagauge_local.judge.endpoint.config import EndpointConfig, EndpointOptions, EndpointUnusable
from nexagauge_local.judge.endpoint.http import EndpointHTTP
from nexagauge_local.judge.endpoint.server import pick_model, probe_schema, served_models
from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.redact import redact_url


def endpoint_profile(options: EndpointOptions) -> JudgeProfile:
    """The ad-hoc profile of `--judge-url` (no profile file)."""
    return JudgeProfile(name="endpoint", backend="endpoint", url=options.url or "")


def api_key(profile: JudgeProfile, options: EndpointOptions,
            env: Mapping[str, str] | None = None) -> str | None:
    """The key of the server these options and this profile name: `options.api_key` (the
    run's --judge-api-key or NEXAGAUGE_JUDGE_API_KEY, given only for the default judge's
    server), else the profile's api_key_env. Nothing else is read: a node's own judge
    (`--model NODE=PROFILE`) gets no options key, so the default server's key never goes to
    another server."""
    env = os.environ if env is None else env
    if options.api_key:
        return options.key()
    if profile.api_key_env and env.get(profile.api_key_env):
        return env[profile.api_key_env]
    return None


def resolve_endpoint(profile: JudgeProfile, options: EndpointOptions,
                     env: Mapping[str, str] | None = None) -> EndpointConfig:
    """The profile's server with the command line's overrides, its model id asked of the
    server (raises EndpointUnusable: unreachable, refused key, unknown model)."""
    url = (options.url or profile.url).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise EndpointUnusable(f"judge server URL {redact_url(url)!r}: expected "
                               "http(s)://HOST:PORT/v1")
    key = api_key(profile, options, env)
    http = EndpointHTTP(url, key, timeout_seconds=10.0, connections=1)
    try:
        served = pick_model(http.url, served_models(http), options.model_name or profile.served_model)
    finally:
        http.close()
    return EndpointConfig(
        url=url,
        model=served.id,
        api_key=key,
        concurrency=options.concurrency or profile.concurrency,
        revision=options.revision if options.revision is not None else profile.revision,
        gpus=options.gpus or profile.server_gpus,
        timeout_seconds=profile.request_timeout,
        max_model_len=served.max_model_len,
        root=served.root,
    )


def check_endpoint(config: EndpointConfig) -> None:
    """Pre-flight's last step: one probe request only an enforcing grammar answers right."""
    http = EndpointHTTP(config.url, config.api_key, timeout_seconds=10.0, connections=1)
    try:
        probe_schema(http, config.model)
    finally:
        http.close()
