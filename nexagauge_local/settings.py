"""Run settings: the one source of truth for knobs a run can turn.

Values come from CLI flags (cli/run_cmds.py builds a RunSettings), from `evaluate(...)`'s
arguments (api.py) or from NEXAGAUGE_* environment variables, so the library API and the CLI
share defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "nexagauge-local"


# Structured-decoding engines (what each backend supports: judge/profiles.py BACKEND_GRAMMARS).
GrammarChoice = Literal["auto", "xgrammar", "guidance", "outlines"]
GRAMMAR_CHOICES: tuple[str, ...] = get_args(GrammarChoice)
# A judge request longer than the judge's window (judge/long_inputs.py).
LongInputsPolicy = Literal["fail", "truncate-middle"]
LONG_INPUTS_CHOICES: tuple[str, ...] = get_args(LongInputsPolicy)
# refalign's units (scoring/ng_units.py or nodes/chunk.py).
RefalignUnits = Literal["nexa-gauge", "sentences"]
REFALIGN_UNITS_CHOICES: tuple[str, ...] = get_args(RefalignUnits)


class ConfigSource(BaseModel):
    """A run configuration file (`--config run.toml`) as the run read it: the text is kept
    whole, so the manifest is evidence of the rubrics used and `reproduce` re-applies the same
    content even when the file has since moved or changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str  # as given on the command line (display only)
    sha256: str  # of the file's bytes
    text: str
    # the text as parsed (app/run_config.py: RunConfig, with the block models it was read
    # with), kept with the text so a run parses its configuration once; never dumped
    _parsed: Any = PrivateAttr(default=None)

    def remember(self, parsed: object) -> None:
        self._parsed = parsed

    def remembered(self) -> Any:
        return self._parsed


class EndpointOptions(BaseModel):
    """What the command line (or the library caller, or NEXAGAUGE_JUDGE_*) says of a judge
    server (judge/endpoint/, docs/judge-servers.md); None = the profile's value.
    With a URL they make an ad-hoc endpoint judge; with an endpoint profile they override its
    keys. The one list of the server's options: the --judge-* flags, the run configuration's
    keys and the settings' flat names (`judge_<field>`) are these fields. The API key is
    excluded from every dump: never in summary or manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None
    api_key: SecretStr | None = Field(default=None, exclude=True)
    model_name: str | None = None
    concurrency: int | None = Field(default=None, ge=1)
    revision: str | None = None
    gpus: int | None = Field(default=None, ge=1)

    def key(self) -> str | None:
        """The API key's text, for the one request header that carries it."""
        return self.api_key.get_secret_value() if self.api_key else None


# The flat names of the server's options: --judge-url ... as keyword arguments, environment
# variables (NEXAGAUGE_JUDGE_URL ...) and the manifest's recorded settings.
ENDPOINT_PREFIX = "judge_"
ENDPOINT_FIELDS: tuple[str, ...] = tuple(f"{ENDPOINT_PREFIX}{n}"
                                         for n in EndpointOptions.model_fields)


class _EndpointEnv(PydanticBaseSettingsSource):
    """NEXAGAUGE_JUDGE_URL, NEXAGAUGE_JUDGE_API_KEY, ...: the endpoint options' environment
    variables, kept under their flat names while the settings hold one nested value."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        env = {k.upper(): v for k, v in os.environ.items()}
        found = {n: env[f"NEXAGAUGE_{flat.upper()}"]
                 for n, flat in zip(EndpointOptions.model_fields, ENDPOINT_FIELDS)
                 if f"NEXAGAUGE_{flat.upper()}" in env}
        return {"endpoint": found} if found else {}


class RunSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="NEXAGAUGE_", extra="forbid")

    target: str = "eval"
    output_dir: Path | None = None
    # Replace an output folder that holds files no run wrote (app/output_folder.py).
    overwrite: bool = False
    limit: int | None = Field(default=None, ge=1)
    # a slice of the input's records as nexa-gauge's --start/--end (0-based, end exclusive);
    # `limit` counts from `start`: records [start:end][:limit] (dataset.py Dataset.stop)
    start: int = Field(default=0, ge=0)
    end: int | None = Field(default=None, ge=1)
    on_error: Literal["fail", "skip"] = "fail"
    field_map: dict[str, str] = Field(default_factory=dict)
    shard_size: int = Field(default=5000, ge=1)
    cache_dir: Path = Field(default_factory=default_cache_dir)
    use_cache: bool = True
    # judge
    model: str = "demo"
    # LLM node -> the judge profile that judges it instead of `model` (`--model NODE=PROFILE`,
    # nexa-gauge's `--llm-model NODE=MODEL`, a run configuration's [run.models]); nodes not
    # named here ask `model`'s judge
    node_models: dict[str, str] = Field(default_factory=dict)
    backend: Literal["auto", "hf", "vllm"] = "auto"
    # redteam metric -> its pass threshold, instead of the specification's 0.6 (`--threshold
    # METRIC=VALUE`, e.g. one `agreement` fitted for a guard judge's probabilities); beats the
    # judge profile's `thresholds`
    thresholds: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    gpu_ids: list[int] = Field(default_factory=list)  # `--gpu 0,1`
    gpu_hour_price: float | None = Field(default=None, ge=0)
    seed: int = 0
    # a judge request longer than the judge's window: fail it alone (default), or judge the
    # evaluated text with its middle cut and a visible marker (judge/long_inputs.py)
    long_inputs: LongInputsPolicy = "fail"
    # the structured-decoding engine: auto = the profile's setting, else the backend's default
    # (judge/profiles.py DEFAULT_GRAMMAR)
    grammar_backend: GrammarChoice = "auto"
    # embeddings (refiner/refalign): auto = bfloat16 on CUDA or a CPU with native bf16
    embed_dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    # the embedding cache (embed/cache.py, beside the judge cache; off with use_cache=False):
    # least recently used vectors past this many are deleted (~1.7 KB each on disk for MiniLM)
    embed_cache_max_entries: int = Field(default=500_000, ge=1)
    # refalign's units (scoring/ng_units.py): nexa-gauge's (100-token semchunk chunks, the
    # output MMR-refined to refalign_output_top_k, 0 = all) or this project's sentence groups
    refalign_units: RefalignUnits = "nexa-gauge"
    refalign_output_top_k: int = Field(default=3, ge=0)
    # scale-out: a Ray cluster for the judge work (cluster/spec.py: auto, local, HOST:PORT,
    # ray://HOST:PORT, with ?workers=..&batch=.. options); None = this process
    cluster: str | None = None
    progress: bool = True
    # the run configuration (`--config`): its [defaults] blocks apply to the records
    # (app/run_config.py); its [run] options are already folded into the fields above
    config: ConfigSource | None = None
    # a judge server: --judge-url and its companions as one typed value (EndpointOptions)
    endpoint: EndpointOptions = Field(default_factory=EndpointOptions)
    # judge requests the run is predicted to send, counted from its dataset by the run itself
    # (not a user setting): `--backend auto` on a CPU host decides with it (judge/cpu_auto.py)
    predicted_judgements: int | None = Field(default=None, ge=0)

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _EndpointEnv(settings_cls), dotenv_settings,
                file_secret_settings)

    @model_validator(mode="before")
    @classmethod
    def _nest_endpoint(cls, data: Any) -> Any:
        """`judge_url=...` and its companions (keyword arguments, a recorded manifest's
        settings) folded into `endpoint`, over what the environment gave."""
        if not isinstance(data, dict) or not any(k in ENDPOINT_FIELDS for k in data):
            return data
        data = dict(data)
        given = data.get("endpoint")
        nested = ({**given.model_dump(), "api_key": given.api_key}
                  if isinstance(given, EndpointOptions) else dict(given or {}))
        for flat in ENDPOINT_FIELDS:
            if flat in data:
                nested[flat[len(ENDPOINT_PREFIX):]] = data.pop(flat)
        data["endpoint"] = nested
        return data

    @model_serializer(mode="wrap")
    def _flat_endpoint(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Dumps (the manifest's recorded settings) keep the flat `judge_*` names, so a
        manifest reads as before and `reproduce` takes older ones unchanged."""
        out: dict[str, Any] = {}
        for key, value in handler(self).items():
            if key == "endpoint" and isinstance(value, dict):
                out.update({f"{ENDPOINT_PREFIX}{k}": v for k, v in value.items()})
            else:
                out[key] = value
        return out

    @model_validator(mode="after")
    def _slice_not_empty(self) -> Self:
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"--end {self.end} must be greater than --start {self.start}")
        return self

    def memo_dir(self, kind: str) -> Path | None:
        """Where a run keeps memoised run-level results of one kind (memo.py: observability
        blocks, chart SVGs), beside the judge cache; None under --no-cache, so a cold run
        computes everything it reports."""
        return self.cache_dir / "memo" / kind if self.use_cache else None
