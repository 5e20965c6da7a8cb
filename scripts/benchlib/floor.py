"""The compute floor of a batch of judgements on one GPU: the time no engine can beat.

Why a floor and not a peer's number: "within 3x of the floor" says how much of the GPU the
judge uses, on any model size, without a second system to compare with. The arithmetic:

- prefill: 2 FLOPs per weight per computed prompt token (multiply + add), for the decoder
  layers; the LM head (vocab x hidden) runs once per request, on its last prompt token only
  (vLLM computes logits only where it samples). The input embedding is a gather, not a matmul.
  Prompt tokens served from the prefix cache cost nothing, so the strict floor counts computed
  tokens only; `prefill_all_s` also gives the floor for every prompt token (no caching).
- decode: each step reads every weight once (bytes / HBM bandwidth) and serves at most
  `max_num_seqs` sequences, so steps >= output tokens / max_num_seqs and >= the longest
  answer; each output token also costs 2 FLOPs per weight. The decode floor is the larger of
  the weight-read time and the decode compute time.
- floor = prefill + decode, at the matmul rate and bandwidth *measured* on the GPU
  (bench_gpu.py measures both; a dry run uses the assumed figures below and says so).

The attention score FLOPs and KV-cache reads are left out: they only raise the true floor, so
leaving them out keeps this a lower bound for the part that depends on model size.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# H100 SXM5 datasheet: 989 TFLOP/s dense BF16 (1979 is the 2:4-sparse figure), 3.35 TB/s HBM3.
H100_DATASHEET_BF16_FLOPS = 989e12
H100_DATASHEET_HBM_BYTES_S = 3.35e12
# What an H100 measured (2026-11-13): 8192^3 bf16 matmul at
# 798 TFLOP/s; a device-to-device copy at about 3.0 TB/s counting bytes read and written.
# Used by --dry-run only, as *assumed* measured figures; a GPU run measures its own.
ASSUMED_H100_MATMUL_FLOPS = 798e12
ASSUMED_H100_HBM_BYTES_S = 3.0e12


class LlamaShape(BaseModel):
    """The shape of a Llama-family decoder; enough to write config.json and count weights."""

    model_config = ConfigDict(frozen=True)

    hidden: int = Field(gt=0)
    intermediate: int = Field(gt=0)
    layers: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    vocab: int = Field(gt=0)
    max_positions: int = 8192
    rope_theta: float = 500000.0
    tied_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


# Meta-Llama-3-8B's config.json shape (hidden 4096, 32 layers, GQA 32/8, 128256 vocab).
LLAMA3_8B = LlamaShape(
    hidden=4096, intermediate=14336, layers=32, heads=32, kv_heads=8, vocab=128256
)

# A Llama of the same family small enough for vLLM's CPU build: `--device cpu` runs every phase
# with it to check the benchmark end to end before a GPU host is at hand (its figures mean
# nothing). Head size 64, which vLLM-CPU's attention supports; the vocabulary stays the 8B's, so
# grammar masks cost what they cost on the GPU.
TINY_LLAMA = LlamaShape(hidden=128, intermediate=256, layers=2, heads=2, kv_heads=1, vocab=128256)


class ParamCounts(BaseModel):
    embedding: int
    per_layer: int
    layers: int
    final_norm: int
    lm_head: int

    @property
    def total(self) -> int:
        return self.embedding + self.layers + self.final_norm + self.lm_head

    @property
    def read_per_step(self) -> int:
        """Weights read once per decode step: all but the embedding table (rows gathered)."""
        return self.layers + self.final_norm + self.lm_head


def param_counts(shape: LlamaShape) -> ParamCounts:
    h, kv = shape.hidden, shape.kv_heads * shape.head_dim
    attn = h * h + 2 * h * kv + h * h  # q, k, v, o projections (no biases in Llama)
    mlp = 3 * h * shape.intermediate  # gate, up, down
    per_layer = attn + mlp + 2 * h  # two RMSNorm weight vectors
    emb = shape.vocab * h
    return ParamCounts(
        embedding=emb,
        per_layer=per_layer,
        layers=per_layer * shape.layers,
        final_norm=h,
        lm_head=0 if shape.tied_embeddings else emb,
    )


def hf_config(
    shape: LlamaShape, bos_id: int, eos_id: int, dtype: str = "bfloat16"
) -> dict[str, Any]:
    """A transformers/vLLM config.json for `shape` (no weights: vLLM's load_format="dummy")."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": shape.hidden,
        "intermediate_size": shape.intermediate,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "vocab_size": shape.vocab,
        "max_position_embeddings": shape.max_positions,
        "rope_theta": shape.rope_theta,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": shape.tied_embeddings,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "torch_dtype": dtype,
    }


class Workload(BaseModel):
    """Token totals of one batch of judgements (measured, or estimated by a dry run)."""

    requests: int = Field(ge=1)
    prompt_tokens: int = Field(ge=0)
    cached_prompt_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    longest_output: int = Field(ge=0)

    @property
    def computed_prompt_tokens(self) -> int:
        return max(0, self.prompt_tokens - self.cached_prompt_tokens)


class Hardware(BaseModel):
    matmul_flops: float = Field(gt=0, description="bf16 matmul FLOP/s")
    hbm_bytes_s: float = Field(gt=0, description="HBM bytes/s")
    source: str = Field(description="'measured on <device>' or 'assumed: ...'")


class Floor(BaseModel):
    prefill_s: float
    prefill_all_s: float
    decode_read_s: float
    decode_compute_s: float
    decode_steps: int
    seconds: float
    seconds_no_cache: float

    def per_1000(self, judgements: int) -> float:
        return self.seconds * 1000.0 / judgements


def compute_floor(
    shape: LlamaShape,
    work: Workload,
    hw: Hardware,
    max_num_seqs: int,
    bytes_per_param: int = 2,
) -> Floor:
    p = param_counts(shape)
    head = 2.0 * p.lm_head * work.requests
    prefill = (2.0 * p.layers * work.computed_prompt_tokens + head) / hw.matmul_flops
    prefill_all = (2.0 * p.layers * work.prompt_tokens + head) / hw.matmul_flops
    steps = max(math.ceil(work.output_tokens / max(1, max_num_seqs)), work.longest_output)
    read = steps * p.read_per_step * bytes_per_param / hw.hbm_bytes_s
    dcompute = 2.0 * (p.layers + p.lm_head) * work.output_tokens / hw.matmul_flops
    decode = max(read, dcompute)
    return Floor(
        prefill_s=prefill,
        prefill_all_s=prefill_all,
        decode_read_s=read,
        decode_compute_s=dcompute,
        decode_steps=steps,
        seconds=prefill + decode,
        seconds_no_cache=prefill_all + decode,
    )


def explain(
    shape: LlamaShape, work: Workload, hw: Hardware, floor: Floor, max_num_seqs: int
) -> str:
    """The floor arithmetic as lines a reader can redo by hand."""
    p = param_counts(shape)
    return "\n".join(
        [
            (
                f"params: total {p.total / 1e9:.3f} B = embedding {p.embedding / 1e9:.3f} B + "
                f"{shape.layers} layers x {p.per_layer / 1e6:.2f} M + LM head {p.lm_head / 1e9:.3f} B"
            ),
            (
                f"rates ({hw.source}): matmul {hw.matmul_flops / 1e12:.0f} TFLOP/s, "
                f"HBM {hw.hbm_bytes_s / 1e12:.2f} TB/s"
            ),
            (
                f"prefill: 2 x {p.layers / 1e9:.3f} B x {work.computed_prompt_tokens:,} computed prompt "
                f"tokens (of {work.prompt_tokens:,}; {work.cached_prompt_tokens:,} from the prefix "
                f"cache) + 2 x {p.lm_head / 1e9:.3f} B x {work.requests:,} requests "
                f"= {floor.prefill_s:.3f} s  (no cache: {floor.prefill_all_s:.3f} s)"
            ),
            (
                f"decode: max({work.output_tokens:,} tokens / {max_num_seqs} seqs, longest answer "
                f"{work.longest_output}) = {floor.decode_steps:,} steps x "
                f"{p.read_per_step * 2 / 1e9:.2f} GB of weights read = {floor.decode_read_s:.3f} s; "
                f"compute {floor.decode_compute_s:.3f} s; take the larger"
            ),
            (
                f"floor: {floor.seconds:.3f} s for {work.requests:,} judgements = "
                f"{floor.per_1000(work.requests):.3f} GPU-s per 1,000 "
                f"(every prompt token computed: {floor.seconds_no_cache:.3f} s)"
            ),
        ]
    )
