"""Turn the GPU benchmark's per-phase measurements into its figures and verdicts.

Pure arithmetic over the JSON each phase writes, so the figures a GPU run reports can be
recomputed (and are tested) without a GPU. GPU-seconds are wall seconds x GPUs held (one here).
A baseline cut short by its deadline is extrapolated linearly from the requests it finished,
and the report says so; the synthetic cases are drawn independently, so the per-request rate
of the finished ones is the rate of the rest.
"""

from __future__ import annotations

from typing import Any

from benchlib.floor import Hardware, LlamaShape, Workload, compute_floor, explain

TARGET_RATIO = 5.0  # ours >= 5x faster than the per-request baseline
TARGET_FLOOR = 3.0  # GPU-seconds within 3x of the compute floor


def _per_1000(seconds: float, n: int) -> float:
    return seconds * 1000.0 / n if n else float("nan")


def summarise(phases: dict[str, dict[str, Any]], shape: LlamaShape) -> dict[str, Any]:
    """Figures from whichever phases ran (probe, ours_caps, ours, ours_clip, ours_outlines,
    baseline, hf). `ours` in the summary is the product's policy, `ours_caps` (the cheap
    grammar with the string-caps processor), or the bounds in the grammar where it did not run."""
    out: dict[str, Any] = {}
    probe = phases.get("probe")
    policy = "ours_caps" if "ours_caps" in phases else "ours"
    ours = phases.get(policy)
    base, hf = phases.get("baseline"), phases.get("hf")
    if probe:
        out["device"] = probe.get("device", "?")
    if ours:
        n, wall = ours["requests"], ours["wall_s"]
        out["ours"] = {
            "requests": n,
            "wall_s": wall,
            "gpu_s_per_1000": _per_1000(wall, n),
            "prompt_tok_s": ours["prompt_tokens"] / wall,
            "output_tok_s": ours["output_tokens"] / wall,
            "prefix_cache_hit_share": ours["cached_tokens"] / max(1, ours["prompt_tokens"]),
            "mean_output_tokens": ours["output_tokens"] / n,
            "valid": ours["valid"],
            "load_s": ours.get("load_s"),
            "phase": policy,
        }
    if probe and ours:
        work = Workload(
            requests=ours["requests"],
            prompt_tokens=ours["prompt_tokens"],
            cached_prompt_tokens=ours["cached_tokens"],
            output_tokens=ours["output_tokens"],
            longest_output=ours["longest_output"],
        )
        hw = Hardware(
            matmul_flops=probe["matmul_flops"],
            hbm_bytes_s=probe["hbm_bytes_s"],
            source=f"measured on {probe.get('device', 'the GPU')}",
        )
        seqs = int(ours.get("max_num_seqs") or 1024)
        floor = compute_floor(shape, work, hw, seqs)
        out["floor"] = floor.model_dump() | {
            "gpu_s_per_1000": floor.per_1000(work.requests),
            "ratio": ours["wall_s"] / floor.seconds,
            "ratio_no_cache_floor": ours["wall_s"] / floor.seconds_no_cache,
            "explain": explain(shape, work, hw, floor, seqs),
        }
    if base:
        done = base["completed"]
        total = base["requests"]
        seconds = base["wall_s"] * total / done if done else float("nan")
        out["baseline"] = {
            "requests": total,
            "completed": done,
            "wall_s": base["wall_s"],
            "seconds_all": seconds,
            "extrapolated": done < total,
            "gpu_s_per_1000": _per_1000(seconds, total),
            "output_tok_s": base["output_tokens"] / base["wall_s"] if base["wall_s"] else 0.0,
            "valid": base["valid"],
            "concurrency": base.get("concurrency"),
        }
        if ours:
            out["ratio"] = seconds / ours["wall_s"]
    outl = phases.get("ours_outlines")
    if outl and ours:
        out["grammar"] = {
            "xgrammar_wall_s": ours["wall_s"],
            "outlines_wall_s": outl["wall_s"],
            "outlines_over_xgrammar": outl["wall_s"] / ours["wall_s"],
            "valid": {"xgrammar": ours["valid"], "outlines": outl["valid"]},
            "requests": ours["requests"],
        }
    out.update(string_bounds(phases))
    if hf:
        out["hf"] = {
            "requests": hf["requests"],
            "wall_s": hf["wall_s"],
            "gpu_s_per_1000": _per_1000(hf["wall_s"], hf["requests"]),
            "prompt_tok_s": hf["prompt_tokens"] / hf["wall_s"],
            "output_tok_s": hf["output_tokens"] / hf["wall_s"],
            "mean_output_tokens": hf["output_tokens"] / max(1, hf["requests"]),
            "valid": hf["valid"],
            "load_s": hf.get("load_s"),
        }
    out["targets"] = targets(out, phases)
    return out


def string_bounds(phases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The bounds in the grammar (`ours`) against the grammar without them, with nothing
    ending the strings (`ours_clip`) and with the caps processor (`ours_caps`)."""
    grammar = phases.get("ours")
    others = {k: phases[p] for k, p in (("clip", "ours_clip"), ("caps", "ours_caps"))
              if p in phases}  # fmt: skip
    if not grammar or not others:
        return {}
    runs = {"grammar": grammar, **others}
    out: dict[str, Any] = {f"{k}_wall_s": r["wall_s"] for k, r in runs.items()}
    out |= {f"grammar_over_{k}": grammar["wall_s"] / r["wall_s"] for k, r in others.items()}
    out["valid"] = {k: r["valid"] for k, r in runs.items()}
    out["mean_output_tokens"] = {k: r["output_tokens"] / max(1, r["requests"])
                                 for k, r in runs.items()}  # fmt: skip
    return {"string_bounds": out}


def targets(summary: dict[str, Any], phases: dict[str, dict[str, Any]]) -> dict[str, bool | None]:
    """The benchmark's three targets; None where the phase that decides it did not run."""
    valid: bool | None = None
    judged = [p for p in ("ours_caps", "ours", "ours_clip", "ours_outlines", "baseline", "hf")
              if p in phases]  # fmt: skip
    if judged:
        valid = all(
            phases[p]["valid"] == phases[p].get("completed", phases[p]["requests"]) for p in judged
        )
    ratio = summary.get("ratio")
    floor = summary.get("floor", {}).get("ratio")
    return {
        "every_output_schema_valid": valid,
        "ours_at_least_5x_baseline": None if ratio is None else ratio >= TARGET_RATIO,
        "within_3x_of_floor": None if floor is None else floor <= TARGET_FLOOR,
    }


def lines(summary: dict[str, Any]) -> list[str]:
    """The human-readable report, one figure per line."""
    out = [f"device: {summary.get('device', '(probe phase not run)')}"]
    o = summary.get("ours")
    if o:
        out.append(
            f"ours (vLLM, one engine, step loop): {o['requests']} judgements in {o['wall_s']:.2f} s = "
            f"{o['gpu_s_per_1000']:.2f} GPU-s per 1,000; prompt {o['prompt_tok_s']:,.0f} tok/s, "
            f"output {o['output_tok_s']:,.0f} tok/s; prefix-cache hits "
            f"{o['prefix_cache_hit_share']:.1%}; mean answer {o['mean_output_tokens']:.0f} tok; "
            f"valid {o['valid']}/{o['requests']}; engine load {o['load_s'] or 0:.1f} s"
        )
    f = summary.get("floor")
    if f:
        out.append(f["explain"])
        out.append(
            f"ours / floor = {f['ratio']:.2f}x (target <= {TARGET_FLOOR:.0f}x); against the "
            f"floor that computes every prompt token: {f['ratio_no_cache_floor']:.2f}x"
        )
    b = summary.get("baseline")
    if b:
        how = f"extrapolated from {b['completed']}/{b['requests']}" if b["extrapolated"] else "all"
        out.append(
            f"baseline (OpenAI server, {b['concurrency']} concurrent, one request per case x "
            f"metric): {b['seconds_all']:.2f} s ({how}) = {b['gpu_s_per_1000']:.2f} GPU-s per "
            f"1,000; output {b['output_tok_s']:,.0f} tok/s; valid {b['valid']}/{b['completed']}"
        )
    if "ratio" in summary:
        out.append(
            f"ratio {summary['ratio']:.1f}  (baseline seconds / ours; target >= {TARGET_RATIO:.0f})"
        )
    g = summary.get("grammar")
    if g:
        out.append(
            f"grammar engine (same {g['requests']} requests, same engine settings): xgrammar "
            f"{g['xgrammar_wall_s']:.2f} s, outlines {g['outlines_wall_s']:.2f} s = "
            f"{g['outlines_over_xgrammar']:.2f}x; valid {g['valid']['xgrammar']} / "
            f"{g['valid']['outlines']}"
        )
    b = summary.get("string_bounds")
    for k, name in (("clip", "clip"), ("caps", "clip+caps")):
        if b and f"{k}_wall_s" in b:
            tok = b["mean_output_tokens"]
            out.append(
                f"string bounds (same requests, xgrammar): in the grammar "
                f"{b['grammar_wall_s']:.2f} s, {name} {b[f'{k}_wall_s']:.2f} s = "
                f"{b[f'grammar_over_{k}']:.2f}x; valid {b['valid']['grammar']} / "
                f"{b['valid'][k]}; mean answer {tok['grammar']:.0f} / {tok[k]:.0f} tok"
            )
    h = summary.get("hf")
    if h:
        out.append(
            f"hf (transformers + outlines on CUDA): {h['requests']} judgements in "
            f"{h['wall_s']:.2f} s = {h['gpu_s_per_1000']:.2f} GPU-s per 1,000; prompt "
            f"{h['prompt_tok_s']:,.0f} tok/s, output {h['output_tok_s']:,.0f} tok/s; mean answer "
            f"{h['mean_output_tokens']:.0f} tok; valid {h['valid']}/{h['requests']}; load "
            f"{h['load_s'] or 0:.1f} s"
        )
    t = summary["targets"]
    out.append(
        "targets: "
        + ", ".join(
            f"{k}={'n/a' if v is None else ('met' if v else 'MISSED')}" for k, v in t.items()
        )
    )
    return out
