"""The hf backend: transformers' `generate` under outlines' or llguidance's logits processor,
the fallback where vLLM does not run. Importing this package loads torch.
"""

from nexagauge_local.judge.hf.backend import HFBackend as HFBackend
