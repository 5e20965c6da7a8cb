from scripts.benchlib.prefix import common_prefix, prefix_stats


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

