"""The application layer: what the commands do, as services returning typed results.

Each service takes plain arguments (or RunSettings), raises the typed errors in errors.py, and
never prints or parses options; the CLI (cli/) and the library API (api.py) sit on top. judge.py
is the assembly module that wires the judge, its cache and ledger, and the executor.
"""
