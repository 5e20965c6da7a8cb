"""The hf backend: transformers weights decoded by our own grammar-constrained loop.

Why our own loop (decode.py) and not `generate()`: one compiled grammar per schema
(grammar.py), every prompt of a call decoded against prefix families computed and held once
(families.py, cascade.py, kv_cache.py), batches cut by a KV-token budget (batches.py), and
each answer handed to the cache the step its row ends. Importing this package loads torch.
"""

from nexagauge_local.judge.hf.backend import HFBackend

__all__ = ["HFBackend"]
