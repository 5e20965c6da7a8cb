"""nexagauge-local: offline LLM evaluation with an open-weights judge on your own hardware.

The library front door is `evaluate`; the CLI (`nexagauge-local`) is a thin layer over it.
"""

from __future__ import annotations

from nexagauge_local.api import evaluate

__version__ = "0.1.0"
__all__ = ["__version__", "evaluate"]
