"""The red-team wing: everything an audit of a model under attack needs, in one place.

Why one package: an auditor's loop (pick probes, run the model under test on them, disguise
them with attacks, judge, read the outcomes) used to be spread over half a dozen folders. Each
sub-package is one step of that loop:

- ``suites``: the bundled probe suite, public suites and a user's own file, read into probes;
- ``target``: the model under test (local weights or a server), answering probes in batches;
- ``attacks``: strategies that disguise a probe (encodings, templates, augmentation) and the
  attack record that keeps every turn;
- ``heuristics``: the free, deterministic risk layer (patterns, per-case scores, run
  aggregates, observability);
- ``outcomes``: the judge's and the heuristic's rates with their coverage and intervals;
- ``service``: the audit loop's services that the CLI and scripts call.

The node that judges answers stays in ``nodes/redteam``; guard-model formats stay with the
judge (``judge/formats``).
"""
