from nexagauge_local.judge.hf.families import common_prefix, prefix_families, prefix_stats


def test_prefix_stats_on_hand_made_rows() -> None:
    rows = [[1, 2, 3, 4], [1, 2, 3, 5, 6], [1, 2, 7], [1, 2, 3, 4]]
    st = prefix_stats(rows)
    assert st.prompts == 4 and st.total_tokens == 16
    assert st.common_prefix_tokens == 2  # [1, 2] starts every row
    # trie: 1,2 | 3,4 | 5,6 | 7  -> 2 + 2 + 2 + 1 = 7 distinct tokens; the duplicate row is free
    assert st.unique_tokens == 7
    assert abs(st.reusable_share - (1 - 7 / 16)) < 1e-12
    assert abs(st.common_share - 2 * 4 / 16) < 1e-12


def test_prefix_stats_edge_cases() -> None:
    assert prefix_stats([]).reusable_share == 0.0
    one = prefix_stats([[5, 6, 7]])
    assert one.unique_tokens == 3 and one.reusable_share == 0.0 and one.common_prefix_tokens == 3
    assert prefix_stats([[1, 2], [3, 4]]).common_prefix_tokens == 0
    assert common_prefix([1, 2, 3], [1, 2]) == 2


def _prompt(rubric: list[int], case: int, length: int) -> list[int]:
    return [1, 2, 3] + rubric + [1000 + case] * length  # instructions, rubric, the case's text


def test_prefix_families_split_rubrics_that_share_only_the_instructions() -> None:
    bias, toxicity = list(range(10, 40)), list(range(50, 80))
    rows = []
    for case in range(5):  # interleaved as a node emits them: bias, toxicity, bias, ...
        rows += [_prompt(bias, case, 5 + case), _prompt(toxicity, case, 9 - case)]
    families = prefix_families(rows)
    assert sorted(i for f in families for i in f) == list(range(10))  # every row, once
    assert sorted(sorted(f) for f in families) == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]
    for family in families:  # each family shares instructions + its whole rubric
        members = [rows[i] for i in family]
        assert min(common_prefix(members[0], m) for m in members[1:]) >= 33


def test_prefix_families_keep_one_family_when_nothing_halves() -> None:
    rubric = list(range(10, 40))
    rows = [_prompt(rubric, case, 4) for case in range(6)]
    assert [sorted(f) for f in prefix_families(rows)] == [list(range(6))]
    assert prefix_families([]) == []
    assert prefix_families([[7, 8]]) == [[0]]
    # rows that share nothing stay one family (there is nothing to halve): batched by length
    assert [sorted(f) for f in prefix_families([[1, 2, 3], [4, 5, 6], [7, 8, 9]])] == [[0, 1, 2]]
