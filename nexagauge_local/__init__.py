"""nexagauge-local: offline LLM evaluation with an open-weights judge on your own hardware.

The library front door is `evaluate`; the CLI (`nexagauge-local`) is a thin layer over it.
`evaluate` is resolved on first use (PEP 562), so `import nexagauge_local` and the CLI's
`--help` do not pay for the run machinery they may never call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nexagauge_local.api import evaluate

__version__ = "0.1.0"
__all__ = ["__version__", "evaluate"]


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from nexagauge_local.api import evaluate

        return evaluate
    raise AttributeError(f"module 'nexagauge_local' has no attribute {name!r}")
