"""What an endpoint judge is: the server, the model it serves, and how hard to try.

Kept apart from the HTTP code so the factory can carry an EndpointConfig (and the fingerprint
it implies) without opening a connection, and so a per-node profile can name a server too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nexagauge_local.redact import redact_url
from nexagauge_local.settings import EndpointOptions  # the run's --judge-* options, typed once

__all__ = [
    "JUDGE_SERVER",
    "EndpointConfig",
    "EndpointOptions",
    "EndpointUnusable",
    "RetryPolicy",
    "ServerIdentity",
    "ServerRole",
]

# One line a user reads when the server cannot judge (exit 2 before any record is judged).


class EndpointUnusable(RuntimeError):
    """The judge server cannot be used as configured: unreachable, wrong model, a refused
    API key, or a server that rejects or ignores the JSON-schema parameter."""


@dataclass(frozen=True)
class ServerRole:
    """How a set-up failure names the server and the options that fix it: the same checks
    (GET /models, a refused key, an unknown model) serve the judge's server and the model
    under test's, and each message must point at the flags of the command that was run."""

    label: str = "judge server"
    url_option: str = "--judge-url"
    key_options: str = "--judge-api-key, NEXAGAUGE_JUDGE_API_KEY or the profile's api_key_env"
    model_options: str = "--judge-model-name or the profile's served_model"


JUDGE_SERVER = ServerRole()


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries of one request: at most `attempts` tries and `total_seconds` of
    sleeping and waiting between the first try and the last, so a dead server costs a bounded
    time and ends in a counted error, never a hang."""

    attempts: int = 5
    base_seconds: float = 0.5  # first back-off; doubles each time, with jitter
    max_sleep_seconds: float = 30.0  # longest single back-off (and Retry-After honoured up to it)
    total_seconds: float = 300.0


@dataclass(frozen=True)
class ServerIdentity:
    """What a judge server says it serves, and what the user says of it: the part of an
    endpoint judge that names its answers. The URL is not part of it: the same model moved to
    another host is the same judge."""

    model: str  # the id the server reports in GET /models
    revision: str = ""  # stated by the user (--judge-revision or the profile's)
    root: str | None = None  # the weights the server says that id serves
    max_model_len: int | None = None  # the window it reports

    @property
    def fingerprint(self) -> str:
        """The judge part of cache keys: the server's model id, the stated revision, the
        grammar route (the server's JSON-schema decoding with the schema's own bounds) and what
        the server says it serves (root and window; `?` where it does not say). Other weights
        behind the same id are another judge when the server reports another root; weights
        changed in place under the same root are so only when the revision changes."""
        served = f"root={self.root or '?'},max_model_len={self.max_model_len or '?'}"
        return f"endpoint:{self.model}@{self.revision or 'unrevised'}/json_schema[{served}]"


@dataclass(frozen=True)
class EndpointConfig:
    """A resolved endpoint judge. `model` is the id the server reports in GET /models; `root`
    the weights it says that id serves (vLLM's `root`: the path or hub name it loaded, which
    `--served-model-name` hides behind the id) and `max_model_len` the window it reports (vLLM
    does); both None when the server does not say."""

    url: str  # the OpenAI base URL, ending in /v1
    model: str
    api_key: str | None = field(default=None, repr=False)
    concurrency: int = 16
    revision: str = ""
    gpus: int | None = None  # the server's GPUs, as stated by the user; None = unknown
    timeout_seconds: float = 600.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_model_len: int | None = None
    root: str | None = None

    @property
    def identity(self) -> ServerIdentity:
        return ServerIdentity(model=self.model, revision=self.revision, root=self.root,
                              max_model_len=self.max_model_len)

    @property
    def fingerprint(self) -> str:
        """The identity's fingerprint (ServerIdentity.fingerprint): a view, not another
        formula."""
        return self.identity.fingerprint

    def reuse_notice(self) -> str | None:
        """What a run without a revision says once: what its cached verdicts are reused by,
        so a user who swapped weights in place knows the cache cannot see it."""
        if self.revision:
            return None
        by = (f"model id {self.model!r} and root {self.root!r}" if self.root else
              f"model id {self.model!r} alone (the server reports no root)")
        return (f"judge server: no --judge-revision, so cached verdicts are reused by {by}; "
                "give --judge-revision when other weights are served under the same name")

    def describe(self) -> dict[str, object]:
        """The `endpoint` part of summary.json's judge block (no API key)."""
        return {
            "url": redact_url(self.url),  # no userinfo or secret parameter
            "served_model": self.model,
            "root": self.root,
            "max_model_len": self.max_model_len,
            "revision": self.revision or None,
            "concurrency": self.concurrency,
            "server_gpus": self.gpus,
            "device_seconds": (
                f"wall time x {self.gpus} server GPU(s) (--judge-gpus), split over requests "
                "by tokens" if self.gpus else
                "unknown: the server's GPUs were not stated (--judge-gpus N); gpu_seconds is null"
            ),
        }
