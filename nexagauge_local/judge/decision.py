"""Which engine judges a run, with which grammar engine, dtype and devices: decided once.

Why one value: the backend, grammar engine, dtype and devices used to be worked out again by
each part of a run that needed them (the engine that judged, the summary, the manifest, the
model-under-test responder). On a CPU host `--backend auto` weighs free memory
(judge/cpu_auto.py), which moves between two reads, so the manifest could name a backend
other than the one that judged. A JudgeDecision is resolved once per judge profile per run,
before any weights load, and every part of the run reads that same value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nexagauge_local.judge.cpu_auto import cpu_backend, mem_available_gb
from nexagauge_local.judge.endpoint.config import ServerIdentity
from nexagauge_local.judge.profiles import (
    BACKEND_GRAMMARS,
    DEFAULT_GRAMMAR,
    DEFAULT_JUDGE_FORMAT,
    JudgeProfile,
    WeightsMissing,
    fingerprint,
)
from nexagauge_local.judge.runtime import (
    devices,
    resolve_dtype,
    visible_device_ids,
    vllm_importable,
)

Engine = Literal["hf", "vllm", "endpoint"]
# "server": the judge server's own JSON-schema decoding; "none": free text (the responder)
Grammar = Literal["outlines", "xgrammar", "guidance", "server", "none"]
Device = Literal["cpu", "cuda", "server"]
# How the manifest names each grammar engine (the --grammar-backend value where there is one)
GRAMMAR_ENGINE_NAMES: dict[str, str] = {"server": "server (response_format json_schema)"}


class GrammarUnsupported(ValueError):
    """A grammar engine the chosen backend cannot use (a set-up error, exit 2)."""


class NoLocalEngine(ValueError):
    """A profile served by a judge server asked to run on a local engine (a set-up error)."""


class NoGPU(ValueError):
    """`--gpu` on a host where torch sees no CUDA device (a set-up error, exit 2)."""


# ------------------------------------------------------------------ the host's GPUs


def host_cuda() -> bool:
    """Whether torch sees a GPU on this host: the one reading of the host's probe
    (runtime/devices.py host_gpus, asked once per process). The decision, the `--gpu` check,
    CPU-auto's workload count and a directly built engine's device all ask it here, so they
    cannot disagree and a test fakes the probe alone."""
    return devices.host_gpus().visible


def check_gpu_request(gpu_ids: Sequence[int | str]) -> None:
    """`--gpu` names GPUs, so the host must show torch one: else NoGPU, before any work, not a
    silent CPU run whose summary says "gpus [0]" beside CPU device-seconds."""
    if gpu_ids and not host_cuda():
        ids = ",".join(str(g) for g in gpu_ids)
        raise NoGPU(f"--gpu {ids}: no CUDA device is visible on this host; run without --gpu "
                    "to use the CPU, or check the driver and CUDA_VISIBLE_DEVICES")


def cpu_auto_open(backend: str) -> bool:
    """Whether `--backend auto` will weigh the run's workload (judge/cpu_auto.py): asked for
    auto, on a host without a GPU, where vLLM could judge instead of hf."""
    return backend == "auto" and not host_cuda() and vllm_importable()


def torch_device(gpu_ids: Sequence[int | str]) -> str:
    """The torch device for a single-device engine built without a decision (a benchmark, a
    test): `cuda:N` for the first requested GPU, plain `cuda` when none was requested, `cpu`
    without a visible GPU. The GPU id travels as this string, never through
    CUDA_VISIBLE_DEVICES in the calling process."""
    if not host_cuda():
        return "cpu"
    return f"cuda:{gpu_ids[0]}" if gpu_ids else "cuda"


class JudgeDecision(BaseModel):
    """What will run for one judge profile, and why; immutable once resolved. The judge's
    identity (fingerprint, device, dtype, the GPUs its engine holds, a server's identity) is
    made here and nowhere else: backends, client, cluster, manifest and summary read it.

    `gpu_ids` are the GPU ids the engine uses (not merely those --gpu named: the hf engine
    holds one device, so `--backend hf --gpu 0,1` decides ("0",) and says so in `notes`;
    vLLM takes every --gpu id, else the GPUs this process may use); empty on a CUDA device
    means torch's current device (the hf backend without --gpu) or, on a cluster worker, the
    GPUs Ray gave that worker."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: str
    backend: Engine
    grammar: Grammar
    dtype: str
    device: Device
    gpu_ids: tuple[str, ...] = ()
    batch_invariant: bool = False
    demo: bool = False
    reason: str
    fingerprint: str
    server: dict[str, Any] | None = None  # an endpoint judge's summary block (no API key)
    identity: ServerIdentity | None = None  # an endpoint judge: what its server serves
    notes: tuple[str, ...] = ()  # what the user asked that the engine does otherwise, one line each
    # how the judge is asked: our rubric JSON, or a guard family's own format (judge/formats)
    judge_format: str = DEFAULT_JUDGE_FORMAT
    thresholds: dict[str, float] = {}  # the profile's fitted pass thresholds per metric
    # the part of each of its GPUs' memory a vLLM engine reserves: 1 alone, 1/N when N local
    # engines of one command are alive on the same GPUs at once (shared_by)
    gpu_share: float = Field(default=1.0, gt=0.0, le=1.0)

    @property
    def devices(self) -> list[str]:
        """The devices in words, as the manifest records them: cpu, cuda:N..., server."""
        if self.device != "cuda":
            return [self.device]
        return [f"cuda:{g}" for g in self.gpu_ids] or ["cuda"]

    @property
    def grammar_engine(self) -> str:
        return GRAMMAR_ENGINE_NAMES.get(self.grammar, self.grammar)

    @property
    def torch_device(self) -> str:
        """A single-device engine's torch device: cuda:N for the first GPU id, plain cuda
        without one, cpu."""
        if self.device != "cuda":
            return "cpu"
        return f"cuda:{self.gpu_ids[0]}" if self.gpu_ids else "cuda"

    @property
    def gpu_indices(self) -> list[int]:
        """The engine's GPUs as the summary lists them (ids that are indices; a UUID from
        CUDA_VISIBLE_DEVICES is left out)."""
        return [int(g) for g in self.gpu_ids if g.isdigit()] if self.device == "cuda" else []

    def shared_by(self, engines: int, what: str) -> JudgeDecision:
        """This decision when `engines` local engines of one command hold the same GPUs at
        once (`what` names them for the note). vLLM reserves a fixed share of a GPU's *total*
        memory at start and will not start when less is free, so two at its default cannot
        both start on one GPU; each then takes 1/N of it. An hf engine reserves nothing and a
        CPU or server judge holds no GPU: those stay as they are."""
        if engines <= 1 or self.device != "cuda" or self.backend != "vllm":
            return self
        from nexagauge_local.judge.vllm.host import VLLM_GPU_MEMORY_UTILIZATION

        share = 1.0 / engines
        note = (f"{what} share the GPUs: each vLLM engine reserves "
                f"{VLLM_GPU_MEMORY_UTILIZATION * share:.0%} of each one's memory")  # fmt: skip
        return self.model_copy(update={"gpu_share": share, "notes": (*self.notes, note)})

    def unpinned(self) -> JudgeDecision:
        """This decision on a cluster worker: Ray sets the worker's CUDA_VISIBLE_DEVICES, so
        the driver's GPU ids mean nothing there."""
        return self.model_copy(update={"gpu_ids": ()})


# ------------------------------------------------------------------ the parts of a decision


def backend_choice(requested: str, profile: JudgeProfile,
                   judgements: int | None = None, cuda: bool | None = None) -> tuple[str, str]:
    """(backend, why). `auto` (from the flag, else the profile) -> vllm when importable and a
    GPU is visible (`cuda`, else the host's probe); on a CPU host the engine that judges
    `judgements` requests sooner."""
    if requested != "auto":
        return requested, f"--backend {requested}"
    if profile.backend != "auto":
        return profile.backend, f"judge profile {profile.name!r} sets backend = {profile.backend}"
    if not (host_cuda() if cuda is None else cuda):
        return cpu_backend(judgements, vllm_importable(), mem_available_gb(),
                           hf_peak_gb(profile))
    if vllm_importable():
        return "vllm", "auto: vLLM is installed and a GPU is visible"
    return "hf", ("auto: a GPU is visible but vLLM is not installed (pip install "
                  "'nexagauge-local[vllm]')")


def hf_peak_gb(profile: JudgeProfile) -> float:
    """What the hf backend holds at its peak on a CPU, from the weights' size: about 3x the
    weights in memory plus 1 GB (the demo judge: 1.8 GB estimated, 1.96 GB measured). A GGUF
    file is dequantised to 4-bit -> 32-bit sizes (its 98 MB become 517 MB of float32)."""
    try:
        path = profile.weights_path()
    except WeightsMissing:
        return 2.0
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    size = sum(f.stat().st_size for f in files) / 1e9
    if profile.is_gguf:
        size *= 5.3 / 2  # dequantised, then held in bfloat16 or float32: count the middle
    return 1.0 + 3 * size


def choose_grammar(requested: str, profile: JudgeProfile, backend: str) -> str:
    """`auto` (from the flag, else the profile) -> the backend's DEFAULT_GRAMMAR."""
    choice = requested if requested != "auto" else profile.grammar_backend
    if choice == "auto":
        return DEFAULT_GRAMMAR[backend]
    supported = BACKEND_GRAMMARS[backend]
    if choice not in supported and backend == "endpoint":
        raise GrammarUnsupported(f"--grammar-backend {choice}: an endpoint judge decodes with "
                                 "its server's own grammar engine; drop --grammar-backend")
    if choice not in supported:
        raise GrammarUnsupported(
            f"--grammar-backend {choice}: the {backend} backend decodes with "
            f"{' or '.join(supported)}; use --backend vllm for xgrammar"
        )
    return choice


def placement(backend: str, profile: JudgeProfile, gpu_ids: Sequence[int | str],
              cuda: bool) -> tuple[Device, tuple[str, ...], tuple[str, ...]]:
    """(device, the GPU ids the engine uses, notes): --gpu when given, all of it on vLLM and
    its first id on hf (one device: the note says so); without --gpu vLLM takes the profile's
    count of the GPUs this process may use and hf torch's current device; none on a CPU host."""
    if not cuda:
        return "cpu", (), ()
    ids = tuple(str(g) for g in gpu_ids)
    if backend == "hf" and len(ids) > 1:
        note = (f"--gpu {','.join(ids)}: the hf backend uses one GPU, cuda:{ids[0]}; "
                "--backend vllm uses them all")
        return "cuda", ids[:1], (note,)
    if ids:
        return "cuda", ids, ()
    if backend == "vllm":
        return "cuda", visible_device_ids(profile.gpu_count), ()
    return "cuda", (), ()


# ------------------------------------------------------------------ the decision


def decide(
    profile: JudgeProfile,
    *,
    backend: str = "auto",
    grammar_backend: str | None = "auto",
    gpu_ids: Sequence[int] = (),
    judgements: int | None = None,
) -> JudgeDecision:
    """The decision for a local engine (raises GrammarUnsupported). `judgements`: the run's
    predicted judge requests, which `auto` weighs on a CPU host; `grammar_backend` None: the
    engine decodes free text (the model under test). Reads the host (GPU, memory, CPU
    features) once; loads no weights."""
    cuda = host_cuda()
    chosen, reason = backend_choice(backend, profile, judgements, cuda)
    if chosen not in ("hf", "vllm"):
        raise NoLocalEngine(f"profile {profile.name!r} is served by a judge server "
                            f"(backend = {chosen}), not a local engine")
    grammar = "none" if grammar_backend is None else choose_grammar(
        grammar_backend, profile, chosen)
    device, ids, notes = placement(chosen, profile, gpu_ids, cuda)
    return local_decision(profile, chosen, device=device, gpu_ids=ids, grammar=grammar,
                          reason=reason, notes=notes)


def local_decision(profile: JudgeProfile, backend: str, *, device: Device,
                   grammar: str, reason: str, dtype: str | None = None,
                   gpu_ids: Sequence[str] = (), notes: Sequence[str] = (),
                   string_caps: bool = True) -> JudgeDecision:
    """A local engine's decision once its backend, device and grammar engine are known: the
    dtype resolved and the fingerprint computed, here only. `decide` ends here; so does a
    backend built directly (a benchmark, a test) from its own arguments. `string_caps` False:
    vLLM with its string caps switched off to measure them (judge/profiles.py fingerprint)."""
    dtype = resolve_dtype(dtype or profile.dtype, device)
    return JudgeDecision(
        profile=profile.name, backend=backend, grammar=grammar,
        dtype=dtype, device=device, gpu_ids=tuple(gpu_ids) if device == "cuda" else (),
        batch_invariant=profile.batch_invariant, demo=profile.demo, reason=reason,
        judge_format=profile.judge_format, thresholds=profile.thresholds, notes=tuple(notes),
        fingerprint=fingerprint(profile, backend, dtype, None if grammar == "none" else grammar,
                                string_caps),
    )


def device_of(torch_device: str) -> tuple[Device, tuple[str, ...]]:
    """A torch device string (cpu, cuda, cuda:N) as a decision's device and GPU ids."""
    if not torch_device.startswith("cuda"):
        return "cpu", ()
    _, _, index = torch_device.partition(":")
    return "cuda", (index,) if index else ()


def decide_endpoint(profile: JudgeProfile, *, grammar_backend: str, reason: str,
                    identity: ServerIdentity, server: dict[str, Any]) -> JudgeDecision:
    """The decision for a judge behind a server: its own engine, grammar and devices; its
    fingerprint the server's identity's."""
    return JudgeDecision(
        profile=profile.name, backend="endpoint",
        grammar=choose_grammar(grammar_backend, profile, "endpoint"),
        dtype=profile.dtype, device="server", batch_invariant=profile.batch_invariant,
        demo=profile.demo, reason=reason, fingerprint=identity.fingerprint, server=server,
        identity=identity, judge_format=profile.judge_format, thresholds=profile.thresholds,
    )
