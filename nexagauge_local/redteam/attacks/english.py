"""A crude "is this English?" measure for telling whether an answer is still encoded.

Why so crude: a target asked a rot13, leetspeak or look-alike question may reply in plain
English or in the encoding. Both read as text, so the only cheap tell is which of the two
readings, as given or decoded, holds more everyday English words. A frequency list of the
commonest words settles it for any reply longer than a few words, offline and in microseconds.

The list deliberately holds no pair of words that are each other's rot13 (``be``/``or``), so
decoding English can never look just as English as the original.
"""

from __future__ import annotations

import re

COMMON_WORDS: frozenset[str] = frozenset(
    (
        "the", "be", "to", "of", "and", "a", "in", "that", "have", "i", "it", "for", "not", "on",
        "with", "he", "as", "you", "do", "at", "this", "but", "his", "by", "from", "they", "we",
        "say", "her", "she", "an", "will", "my", "one", "all", "would", "there", "their", "what",
        "so", "up", "out", "if", "about", "who", "get", "which", "go", "me", "when", "make", "can",
        "like", "time", "no", "just", "him", "know", "take", "people", "into", "year", "your",
        "good", "some", "could", "them", "see", "other", "than", "then", "now", "look", "only",
        "come", "its", "over", "think", "also", "back", "after", "use", "two", "how", "our",
        "work", "first", "well", "way", "even", "new", "want", "because", "any", "these", "give",
        "day", "most", "us", "is", "are", "was", "were", "has", "had", "been", "am", "did", "does",
        "said", "should", "may", "must", "here", "where", "why", "very", "much", "more", "many",
        "such", "own", "same", "too", "can't", "don't", "i'm", "it's", "help", "sorry", "cannot",
        "step", "steps", "need", "sure", "yes", "please", "answer", "question",
    )
)

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def count_common_words(text: str) -> int:
    """How many of the text's words are on the common-word list (case-insensitive)."""
    return sum(w.lower() in COMMON_WORDS for w in _WORD.findall(text.replace("\u2019", "'")))


def reads_better_decoded(answer: str, decoded: str) -> bool:
    """True when decoding brings out strictly more common English words than the answer had."""
    return count_common_words(decoded) > count_common_words(answer)
