"""Encodings that hide a probe's words from a keyword-level safety filter.

Why these: a model that learnt to refuse "how do I pick a lock" may still answer the same
request in Base64, rot13, hex, leetspeak, look-alike letters, or with invisible or blank
characters between the letters, because its refusal training saw few such spellings.

Every encoding is a lossless pair: ``decode(encode(p)) == p`` for any string, so an attack
record can always be replayed and audited. That is why leetspeak and look-alikes *swap* pairs
of characters (an original digit 4 becomes ``a`` and back) instead of mapping one way, why
Base64 and hex carry lone surrogates through (``surrogatepass``), and why the zero-width and
spacing encodings put a separator after every code point, so that the strict decode is "every
other code point". A target's reply is another matter: ``read_answer`` is lenient and says None
when the reply is not written in the encoding at all.

This module is the pure pairs and reply readers; encoding_strategy.py puts them to the target.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from nexagauge_local.redteam.attacks.english import reads_better_decoded

_UTF8 = "utf-8"
_KEEP_SURROGATES = "surrogatepass"


def _looks_like_text(text: str) -> bool:
    """Decoded bytes that are words, not noise: printable, with at least one letter."""
    return any(c.isalpha() for c in text) and all(c.isprintable() or c in "\n\r\t" for c in text)


# ---------------------------------------------------------------- Base64


def encode_base64(text: str) -> str:
    return base64.b64encode(text.encode(_UTF8, _KEEP_SURROGATES)).decode("ascii")


def decode_base64(text: str) -> str:
    return base64.b64decode(text, validate=True).decode(_UTF8, _KEEP_SURROGATES)


_B64_BLOCK = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{8,}={0,2}(?![A-Za-z0-9+/=])")


def _b64_block(block: str) -> str | None:
    bare = block.rstrip("=")
    if len(bare) % 4 == 1:  # an answer cut at its token limit mid-quantum: its last character
        bare = bare[:-1]  # carries no whole byte, the rest still decodes
    try:
        text = decode_base64(bare + "=" * (-len(bare) % 4))
    except ValueError:
        return None
    return text if _looks_like_text(text) else None


def read_base64_answer(answer: str) -> str | None:
    """The whole answer decoded, or else each Base64 block in it decoded in place."""
    whole = _b64_block("".join(answer.split())) if answer.strip() else None
    return whole if whole is not None else _decode_blocks(_B64_BLOCK, _b64_block, answer)


def _decode_blocks(
    pattern: re.Pattern[str], decode: Callable[[str], str | None], answer: str
) -> str | None:
    found = False

    def replace(match: re.Match[str]) -> str:
        nonlocal found
        text = decode(match.group())
        found = found or text is not None
        return match.group() if text is None else text

    out = pattern.sub(replace, answer)
    return out if found else None


# ---------------------------------------------------------------- hex


def encode_hex(text: str) -> str:
    return text.encode(_UTF8, _KEEP_SURROGATES).hex()


def decode_hex(text: str) -> str:
    return binascii.unhexlify(text).decode(_UTF8, _KEEP_SURROGATES)


_HEX_BLOCK = re.compile(
    r"(?<![0-9A-Fa-f])(?:0x)?[0-9A-Fa-f]{2}(?:[ :]?(?:0x)?[0-9A-Fa-f]{2}){3,}(?![0-9A-Fa-f])"
)


def _hex_block(block: str) -> str | None:
    try:
        text = decode_hex(re.sub(r"0x|[\s:]", "", block))
    except ValueError:
        return None
    return text if _looks_like_text(text) else None


def read_hex_answer(answer: str) -> str | None:
    """The whole answer decoded, or else each run of hex byte pairs in it decoded in place."""
    whole = _hex_block(answer.strip()) if answer.strip() else None
    return whole if whole is not None else _decode_blocks(_HEX_BLOCK, _hex_block, answer)


# ---------------------------------------------------------------- character swaps


def _swap_table(pairs: str) -> Mapping[int, int]:
    """A read-only translation table that swaps each pair both ways: its own inverse."""
    table: dict[int, int] = {}
    for a, b in zip(pairs[::2], pairs[1::2], strict=True):
        table[ord(a)], table[ord(b)] = ord(b), ord(a)
    return MappingProxyType(table)


def encode_rot13(text: str) -> str:
    return codecs.encode(text, "rot13")


decode_rot13 = encode_rot13

_LEET = _swap_table("a4b8e3g9i1o0s5t7z2A@I|S$T+")


def encode_leetspeak(text: str) -> str:
    return text.translate(_LEET)


decode_leetspeak = encode_leetspeak

# Latin letters and a Cyrillic or Greek letter drawn the same in most fonts
_LOOKALIKE_PAIRS = (
    "a\u0430c\u0441d\u0501e\u0435h\u04bbi\u0456j\u0458o\u043ep\u0440s\u0455v\u03bdx\u0445y\u0443"
    "A\u0410B\u0412C\u0421E\u0415H\u041dI\u0406J\u0408K\u041aM\u041cN\u039dO\u041eP\u0420"
    "S\u0405T\u0422X\u0425Y\u03a5Z\u0396"
)
_LOOKALIKE = _swap_table(_LOOKALIKE_PAIRS)
LOOKALIKES: frozenset[str] = frozenset(_LOOKALIKE_PAIRS[1::2])


def encode_homoglyph(text: str) -> str:
    return text.translate(_LOOKALIKE)


decode_homoglyph = encode_homoglyph


def read_swapped(decode: Callable[[str], str]) -> Callable[[str], str | None]:
    """For encodings that leave an answer readable either way: decode when that reads as
    more English (english.py says why that is the test)."""

    def read(answer: str) -> str | None:
        decoded = decode(answer)
        return decoded if reads_better_decoded(answer, decoded) else None

    return read


def read_homoglyph_answer(answer: str) -> str | None:
    """Decoded when look-alike letters are present and decoding makes it read as English."""
    if not any(c in LOOKALIKES for c in answer):
        return None
    return read_swapped(decode_homoglyph)(answer)


# ---------------------------------------------------------------- interleaved separators

ZERO_WIDTH = "\u200b"
ZERO_WIDTH_CHARS: frozenset[str] = frozenset("\u200b\u200c\u200d\u2060\ufeff")


def _interleave(text: str, sep: str) -> str:
    return "".join(c + sep for c in text)


def _every_other(text: str, sep: str) -> str:
    if len(text) % 2 or any(c != sep for c in text[1::2]):
        raise ValueError(f"not every other character is {sep!r}")
    return text[::2]


def encode_zero_width(text: str) -> str:
    return _interleave(text, ZERO_WIDTH)


def decode_zero_width(text: str) -> str:
    return _every_other(text, ZERO_WIDTH)


def read_zero_width_answer(answer: str) -> str | None:
    """The strict decode when it applies, else the answer without its zero-width characters;
    None when it has none."""
    try:
        return decode_zero_width(answer) if answer else None
    except ValueError:
        pass
    if not any(c in ZERO_WIDTH_CHARS for c in answer):
        return None
    return "".join(c for c in answer if c not in ZERO_WIDTH_CHARS)


def encode_spacing(text: str) -> str:
    return _interleave(text, " ")


def decode_spacing(text: str) -> str:
    return _every_other(text, " ")


def read_spacing_answer(answer: str) -> str | None:
    """The strict decode when it applies; else, when most of the answer's space-separated
    tokens are single characters, each line collapsed (two or more spaces end a word)."""
    try:
        return decode_spacing(answer) if answer else None
    except ValueError:
        pass
    tokens = answer.split()
    if len(tokens) < 3 or sum(len(t) == 1 for t in tokens) < 0.8 * len(tokens):
        return None
    return "\n".join(
        " ".join(word.replace(" ", "") for word in re.split(r" {2,}", line.strip(" ")))
        for line in answer.split("\n")
    )
