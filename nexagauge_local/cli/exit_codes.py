"""The command line's exit codes, in one table: every command exits with one of these.

Why one table: CI scripts branch on them (`gate` 1 = a rule failed, 2 = the gate could not
run), so a command must never invent its own number, and the same condition must read the
same everywhere.
"""

from __future__ import annotations

OK = 0
# A check answered no: a gate rule failed, verify found a difference, a run did not
# reproduce, an audited folder no longer matches its manifest.
CHECK_FAILED = 1
GATE_FAILED = CHECK_FAILED
BAD_INPUT = 2  # the input, a run folder, a policy or a set-up (--cluster, keys) cannot be used
JUDGE_FAILED = 3  # the judge failed on every request of a node; the report is written
# Stopped by a signal: 128 + its number, as a shell reports it (cli/signals.py). The run stops
# cleanly, the output folder is as it was, and what the judge answered is in its cache.
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
TERMINATED = 143  # SIGTERM (128 + 15): Slurm's scancel or time limit, systemctl stop, kill
HUNG_UP = 129  # SIGHUP (128 + 1): the terminal closed (under nohup the run goes on)
