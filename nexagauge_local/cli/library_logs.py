"""The model libraries' own output on the command line: off by default, back with -v.

vLLM, transformers, torch, Triton and the hub client each talk on their own: INFO lines about
every engine detail, a Triton line and torch deprecation warnings on import, a C++ NUMA note
from torch's CPU worker, weight-loading and GGUF de-quantising bars. None of it is something a
user of an evaluation acts on, and it buries our judge line and progress bars. Errors stay:
vLLM and transformers still print at ERROR, torch's C++ layer too, and an engine's exception
reaches the user through the command's own error line (cli/errors.py) whatever is set here.

Why here and why environment variables: each library reads its setting once, when it is first
imported, which happens lazily after option parsing; the CLI process is the right scope (a
library caller of nexagauge_local keeps its own logging, since only the commands call this).
A value the user set explicitly in the environment is always kept.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Mapping

# Read at import by each library; spawned engine processes inherit them.
QUIET_ENV: Mapping[str, str] = {
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TORCH_CPP_LOG_LEVEL": "ERROR",  # torch's C++ warnings ("[W... utils.cpp] NUMA binding")
    "HF_HUB_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # the hub's and transformers' bars
    "TQDM_DISABLE": "1",  # bars drawn with tqdm itself (transformers' GGUF de-quantising)
}

# -v: each library's own default, except vLLM, whose engine module defaults to ERROR for
# library callers (judge/vllm/engine.py): INFO is vLLM's own default.
VERBOSE_ENV: Mapping[str, str] = {"VLLM_LOGGING_LEVEL": "INFO"}

# Loggers that may log with no handler of their own (vLLM's Triton check runs while `vllm`
# is imported, before vLLM installs its handler): without a level their warnings reach
# Python's last-resort handler as bare lines. vLLM's own level follows VLLM_LOGGING_LEVEL.
LIBRARY_LOGGERS: tuple[str, ...] = ("torch", "triton", "accelerate", "xgrammar", "outlines",
                                    "llguidance", "sentence_transformers")

# The modules whose warnings are noise on the command line. A warning is attributed to the
# module its stacklevel names, which for a deprecation is often the library calling another
# (vLLM calling torch), so the callers are listed too.
WARNING_MODULES = (r"(torch|transformers|vllm|triton|accelerate|huggingface_hub|gguf|xgrammar|"
                   r"outlines|llguidance|sentence_transformers|ray)(\.|$)")
WARNING_CATEGORIES: tuple[type[Warning], ...] = (FutureWarning, DeprecationWarning, UserWarning)


def configure_library_output(verbose: bool) -> None:
    """Silence the model libraries' logging, bars and warnings (verbose False), or leave each
    library its own default (verbose True). Call once per command, before any model library
    is imported."""
    if verbose:
        for key, value in VERBOSE_ENV.items():
            os.environ.setdefault(key, value)
        return
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if os.environ["VLLM_LOGGING_LEVEL"].upper() == "ERROR" and "vllm" not in sys.modules:
        # what vLLM sets itself once configured; until then its import-time lines obey it
        logging.getLogger("vllm").setLevel(logging.ERROR)
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.ERROR)
    for category in WARNING_CATEGORIES:
        warnings.filterwarnings("ignore", category=category, module=WARNING_MODULES)
