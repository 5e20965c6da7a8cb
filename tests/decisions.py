"""A judge decision for a backend a test builds by hand.

Why: the judge client reads the judge's identity (fingerprint, profile, demo) from its decision
alone, as a run's client does from the factory's; a test that hands the client its own backend
states that identity here instead of having the client build the backend to learn it.
"""

from __future__ import annotations

from nexagauge_local.judge import JudgeDecision

_ENGINE = {"hf": ("outlines", "cpu"), "vllm": ("xgrammar", "cpu"), "endpoint": ("server", "server")}


def decision_for(fingerprint: str, profile: str | None = None, *, demo: bool = False,
                 backend: str = "hf") -> JudgeDecision:
    """The decision of a judge known by `fingerprint` (its profile: the name before '@')."""
    grammar, device = _ENGINE[backend]
    return JudgeDecision.model_validate({
        "profile": profile or fingerprint.split("@", 1)[0], "backend": backend,
        "grammar": grammar, "dtype": "float32", "device": device, "demo": demo,
        "reason": "a backend built by hand in a test", "fingerprint": fingerprint})
