"""Facts about the judge's set-up a user should read in our own words.

Why: the model libraries' own log is off on the command line by default, and some facts were
never said at all. A judge whose profile asks for `auto` runs in float32 on a CPU without
native bfloat16 (judge/runtime/devices.resolve_dtype): its scores and speed then differ from
the same judge on a bf16 host, so the run says so in one line.
"""

from __future__ import annotations

from nexagauge_local.embed import cpu_has_native_bf16


def dtype_note(profile: str, requested: str, chosen: str, device: str,
               native_bf16: bool | None = None) -> str | None:
    """The line to print for the judge `profile`'s dtype, or None when there is nothing to
    say. `requested` is the profile's dtype, `chosen` what the run uses on `device`;
    `native_bf16` None: read this host's /proc/cpuinfo."""
    if device != "cpu" or chosen not in ("float32", "bfloat16"):
        return None
    if native_bf16 is None:
        native_bf16 = cpu_has_native_bf16()
    if native_bf16:
        return None
    if requested == "auto" and chosen == "float32":
        return (f"judge {profile} runs in float32: this CPU has no native bfloat16 (AVX512-BF16 "
                "or AMX), where bfloat16 is emulated and slower")
    if chosen == "bfloat16":
        return (f"judge {profile} runs in bfloat16, which this CPU emulates (no AVX512-BF16 or "
                "AMX): slower than float32, which dtype = \"auto\" in its profile would pick")
    return None
