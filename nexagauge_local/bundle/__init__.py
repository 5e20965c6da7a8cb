"""Offline bundles: what a GPU host without network needs to run a real judge.

`nexagauge-local bundle build` (on a machine with PyPI) writes a folder with this project's
wheel, the vLLM release whose torch pin fits the target's torch, the dependencies the target
lacks, optionally the judge's weights, MANIFEST.json (sha256 of every file and part) and
install.sh; `bundle verify` checks such a folder wherever it is.

- `target`: the target host (Python, platform, torch, `pip freeze`) and pip's options for it.
- `fit`: vLLM release -> torch pin; the downloaded vLLM wheel's own pin is checked.
- `pip`: pip as resolver (dry-run report), downloader and wheel builder.
- `carry`: which resolved distributions the target lacks.
- `weights`: which weights `--with-weights` carries.
- `manifest`: MANIFEST.json's model, sha256 and splitting into parts.
- `joiner`: verify (every listed file, no unlisted one) and join (standard library only: it also runs on the target).
- `signature`: MANIFEST.json.sig, with the audit trail's keys (audit/signing.py).
- `install_script`: install.sh.
- `build`: the steps in order.
"""
