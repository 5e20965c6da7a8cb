"""Comparing two finished runs: matched cases, paired deltas with bootstrap CIs, flipped cases."""

from nexagauge_local.compare.diff import compare_runs, max_regression
from nexagauge_local.compare.load import BadRunDir, RunDir

__all__ = ["BadRunDir", "RunDir", "compare_runs", "max_regression"]
