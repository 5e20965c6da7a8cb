"""Best-of-N augmentation: many randomly garbled copies of one probe.

Why: Hughes et al. ("Best-of-N Jailbreaking", 2024) found that a model's refusals are brittle
to meaningless surface noise, so sampling enough garbled copies of a request finds one that
slips through, with a success rate that grows predictably with N. An audit that sends N copies
and counts the probe as broken when any copy is answered measures that brittleness.

The three augmentations and their default strengths are the paper's: shuffle the inner letters
of words longer than three characters (probability 0.6 per word), flip the case of characters
(0.6 per character) and nudge printable ASCII characters one code point up or down (0.06 per
character). The N copies come from one generator seeded once, so best-of-8 is the first 8
copies of best-of-16 and a record's ``sample`` index and ``seed`` rebuild a copy exactly.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from nexagauge_local.redteam.attacks.strategy import Disguise, Turn

_FIRST_PRINTABLE, _LAST_PRINTABLE = 0x20, 0x7E


def scramble_words(text: str, rng: random.Random, p: float) -> str:
    """Shuffle the inner letters of each word longer than three characters, with
    probability ``p`` per word; the first and last letters stay (the text stays legible)."""
    out: list[str] = []
    for token in re.split(r"(\s+)", text):
        if len(token) > 3 and not token.isspace() and rng.random() < p:
            inner = list(token[1:-1])
            rng.shuffle(inner)
            token = token[0] + "".join(inner) + token[-1]
        out.append(token)
    return "".join(out)


def flip_case(text: str, rng: random.Random, p: float) -> str:
    """Swap the case of each character with probability ``p``."""
    return "".join(c.swapcase() if rng.random() < p else c for c in text)


def ascii_noise(text: str, rng: random.Random, p: float) -> str:
    """Move each printable ASCII character one code point up or down with probability ``p``,
    staying within printable ASCII."""

    def nudge(c: str) -> str:
        code = ord(c)
        if not _FIRST_PRINTABLE <= code <= _LAST_PRINTABLE or rng.random() >= p:
            return c
        moved = code + rng.choice((-1, 1))
        return chr(moved if _FIRST_PRINTABLE <= moved <= _LAST_PRINTABLE else 2 * code - moved)

    return "".join(nudge(c) for c in text)


@dataclass(frozen=True)
class BestOfN:
    """N randomly augmented copies of the probe, one disguise each."""

    n: int = 8
    scramble_p: float = 0.6
    case_p: float = 0.6
    noise_p: float = 0.06
    name: str = field(default="best-of-n", init=False)
    family: str = field(default="augmentation", init=False)
    summary: str = field(
        default="N copies with shuffled inner letters, flipped case and ASCII noise", init=False
    )

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"best-of-n needs at least one sample, got {self.n}")
        for p in (self.scramble_p, self.case_p, self.noise_p):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"a probability must lie in [0, 1], got {p}")

    def augment(self, prompt: str, rng: random.Random) -> str:
        text = scramble_words(prompt, rng, self.scramble_p)
        return ascii_noise(flip_case(text, rng, self.case_p), rng, self.noise_p)

    def disguise(self, prompt: str, seed: int) -> list[Disguise]:
        rng = random.Random(seed)
        return [
            Disguise(
                (Turn("user", self.augment(prompt, rng)),),
                {"sample": i, "n": self.n, "seed": seed},
            )
            for i in range(self.n)
        ]

    def decode_answer(self, answer: str) -> str | None:
        return None
