"""Which of the distributions pip resolved the target lacks.

A walk from the roots along each distribution's requirements (markers evaluated for the
target), stopping at every release the target already has: what that release needs is on the
target too. Without a freeze only torch is known to be there, so torch's own CUDA libraries
are not carried either.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from nexagauge_local.bundle.pip import Resolved
from nexagauge_local.bundle.target import Target


def to_carry(resolved: Sequence[Resolved], roots: Iterable[str], target: Target) -> list[Resolved]:
    """The resolved distributions reachable from ROOTS without passing one TARGET has."""
    by_name: dict[str, Resolved] = {canonicalize_name(r.name): r for r in resolved}
    env = target.marker_env()
    pending: list[tuple[str, frozenset[str]]] = [(canonicalize_name(n), frozenset()) for n in roots]
    seen: dict[str, set[str]] = {}
    while pending:
        name, extras = pending.pop()
        dist = by_name.get(name)
        if dist is None or target.has(dist.name, dist.version):
            continue
        done = seen.get(name)
        if done is not None and extras <= done:
            continue
        seen.setdefault(name, set()).update(extras)
        for line in dist.requires_dist:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            active = req.marker is None or any(
                req.marker.evaluate({**env, "extra": e}) for e in ("", *sorted(extras))
            )
            if active:
                pending.append((canonicalize_name(req.name), frozenset(req.extras)))
    return [by_name[n] for n in sorted(seen)]
