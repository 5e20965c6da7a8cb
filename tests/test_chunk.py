from nexagauge_local.nodes.chunk import chunk_text, group_sentences, sentences


def _slow(text: str, max_chars: int) -> list[str]:
    """The grouping without the short-text shortcut."""
    return group_sentences(sentences(text), max_chars)


def test_short_text_is_one_chunk_equal_to_the_grouped_sentences() -> None:
    for text in [
        "Dr. Smith arrived at 5 p.m. He left early.",
        "First line.\nSecond line is here.",
        "One sentence only",
        "  padded.  ",
    ]:
        assert chunk_text(text) == _slow(text, 320), text
    assert chunk_text("") == [] and chunk_text(" \n ") == []


def test_long_text_splits_on_sentence_boundaries_within_the_limit() -> None:
    sents = [f"Sentence number {i} talks about topic {i} in some detail." for i in range(12)]
    text = " ".join(sents)
    chunks = chunk_text(text, max_chars=120)
    assert chunks == _slow(text, 120)
    assert len(chunks) > 1 and all(len(c) <= 120 for c in chunks)
    assert " ".join(chunks) == text  # nothing lost, no sentence split


def test_a_sentence_longer_than_the_limit_stands_alone() -> None:
    long = "word " * 80 + "end."
    chunks = chunk_text(f"Short one. {long} Another short one.", max_chars=100)
    assert long.strip() in chunks
