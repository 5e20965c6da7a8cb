"""The shapes every static attack strategy shares.

Why a module of its own: the audit loop, the attack record and the CLI's strategy listing all
handle strategies without knowing which kind they hold (an encoding, a template, an augmenter,
a user's template file). They meet on these types only, so a new strategy is one new class and
no caller changes.

"Static" means model-free: a strategy rewrites a probe from the probe and a seed alone, with no
attacker model in the loop, so every disguise can be rebuilt exactly from the attack record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol

Role = Literal["system", "user", "assistant"]
ParamValue = str | int | float | bool

FAMILIES: tuple[str, ...] = ("encoding", "template", "augmentation")


@dataclass(frozen=True)
class Turn:
    """One chat turn sent to, or received from, the model under test."""

    role: Role
    text: str


@dataclass(frozen=True)
class Disguise:
    """What one strategy made of one probe: the conversation the target sees.

    The conversation ends on a user turn because the target's next turn is the answer that
    gets judged; a disguise that ended elsewhere would have the target continue the wrong
    speaker. ``params`` is copied into a read-only mapping so a record written from it cannot
    change under the caller.
    """

    turns: tuple[Turn, ...]
    params: Mapping[str, ParamValue] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not self.turns or self.turns[-1].role != "user":
            raise ValueError("a disguise must end on a user turn")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @property
    def prompt(self) -> str:
        """The last user turn: the disguised probe itself."""
        return self.turns[-1].text


def user_turn(text: str, **params: ParamValue) -> list[Disguise]:
    """The common case: one disguise of one user turn."""
    return [Disguise((Turn("user", text),), params)]


class StaticStrategy(Protocol):
    """A model-free way of disguising a probe.

    The attributes are read-only properties so that frozen dataclasses (which most strategies
    are, being immutable values) satisfy the protocol.
    """

    @property
    def name(self) -> str:
        """CLI name, lowercase with hyphens (``base64``, ``many-shot``, ``template:dan-11``)."""
        ...

    @property
    def family(self) -> str:
        """One of ``FAMILIES``: what ``--attack encoding`` and friends select on."""
        ...

    @property
    def summary(self) -> str:
        """One line for the strategy listing."""
        ...

    def disguise(self, prompt: str, seed: int) -> list[Disguise]:
        """The probe disguised; usually one disguise, best-of-n gives several."""
        ...

    def decode_answer(self, answer: str) -> str | None:
        """The answer decoded back when the target wrote it in the strategy's encoding, else
        None (always None for strategies that encode nothing)."""
        ...
