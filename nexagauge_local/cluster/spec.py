"""What `--cluster` means: where the Ray cluster is and how to use it, parsed and validated.

One string carries it all so the CLI needs one option and RunSettings one field:

    auto                                  a Ray already running on this host (`ray start --head`)
    local                                 a throwaway single-host Ray started by this process
    HOST:PORT                             join a cluster's GCS as a driver (on the cluster network)
    ray://HOST:PORT                       Ray Client (driver outside the cluster; needs ray[client])

Tuning knobs ride as a query string, e.g. `auto?workers=2&cpus_per_worker=1&batch=64`. Why a
query string and not more flags: the knobs are rarely needed, and a single value is easy to put
in NEXAGAUGE_CLUSTER, a job file or a Makefile variable without touching the CLI.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, ValidationError

INSTALL_HINT = "pip install 'nexagauge-local[cluster]'"


class ClusterUnavailable(RuntimeError):
    """The cluster cannot be used (Ray missing, bad address, no worker could start). The
    message says what to do; the CLI prints it and exits 2."""


class ClusterSpec(BaseModel):
    """A parsed `--cluster` value. Every field but `address` has a default that fits a GPU
    cluster; the CPU/test knobs are there so a 2-core machine can run the same code path."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str = Field(description="auto, local, HOST:PORT or ray://HOST:PORT")
    workers: int | None = Field(default=None, ge=1, description="cap on actors (default: fill)")
    cpus_per_worker: int = Field(default=4, ge=1, description="CPUs per hf actor on CPU nodes")
    gpus_per_worker: int | None = Field(
        default=None, ge=1, description="GPUs per actor (default: the judge profile's `gpu_count`)"
    )
    batch: int = Field(default=256, ge=1, description="most requests in one shipped batch")
    batches_per_worker: int = Field(default=4, ge=1, description="batches per actor per node")
    retries: int = Field(default=2, ge=0, description="re-runs of a failed batch elsewhere")
    start_timeout: float = Field(default=900.0, gt=0, description="seconds for actors to load")
    namespace: str = "nexagauge-local"

    @property
    def is_client(self) -> bool:
        return self.address.startswith("ray://")

    def ray_init_kwargs(self) -> dict[str, Any]:
        """Arguments for `ray.init`: worker logs stay in Ray's log folder (they would interleave
        with the progress bars), and `local` starts no dashboard (nothing to serve it to)."""
        kw: dict[str, Any] = {
            "address": self.address,
            "namespace": self.namespace,
            "log_to_driver": False,
        }
        if self.address == "local":
            kw["include_dashboard"] = False
        return kw

    def describe(self) -> dict[str, Any]:
        return self.model_dump(exclude={"namespace"})


_INT_KEYS = {
    "workers",
    "cpus_per_worker",
    "gpus_per_worker",
    "batch",
    "batches_per_worker",
    "retries",
}


def parse_cluster(value: str) -> ClusterSpec:
    """`--cluster` text -> ClusterSpec; ClusterUnavailable naming the bad part otherwise."""
    text = value.strip()
    address, _, query = text.partition("?")
    if not address:
        raise ClusterUnavailable(
            "--cluster: empty address (use auto, local, HOST:PORT or ray://HOST:PORT)"
        )
    if address not in ("auto", "local"):
        hostport = address.removeprefix("ray://")
        host, sep, port = hostport.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ClusterUnavailable(
                f"--cluster {value!r}: expected auto, local, HOST:PORT or ray://HOST:PORT"
            )
    fields: dict[str, Any] = {"address": address}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ClusterUnavailable(f"--cluster {value!r}: bad option list after '?'") from None
    for key, raw in pairs:
        if key not in ClusterSpec.model_fields or key in ("address", "namespace"):
            known = ", ".join(sorted(_INT_KEYS | {"start_timeout"}))
            raise ClusterUnavailable(f"--cluster: unknown option {key!r} (known: {known})")
        fields[key] = raw
    try:
        return ClusterSpec.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ClusterUnavailable(f"--cluster option {loc}: {err['msg']}") from None


def import_ray() -> Any:
    """The `ray` module, or ClusterUnavailable naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise ClusterUnavailable(
            f"--cluster needs Ray, which is not installed. Install the extra: {INSTALL_HINT}"
        ) from None
    return ray


def ray_version() -> str | None:
    """The installed Ray's version, for summary.json; None without Ray."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ray")
    except PackageNotFoundError:
        return None
