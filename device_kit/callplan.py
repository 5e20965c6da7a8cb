"""The exact device `run` calls that carry a kit, install it and run the GPU work.

Why a printed plan: device time is scarce (30 minutes a session) and the machine is given
back 30 s after a call, taking the staging folder with it, so the calls must be decided
before the first one and made back to back. Each call carries one `calls/NN` folder of parts
(<= the part limit, leaving room in the 64 MiB per call for the working tree) and copies it
into /tmp/stage; the last staging call joins and verifies the kit, installs every wheel with
`pip install --no-index --no-deps --target`, probes the imports and runs the GPU tests; the
benchmark follows in its own calls (one for vLLM, one for the hf backend), each well inside
the 10-minute limit.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from device_kit.bundle import Manifest

STAGE = "/tmp/stage"
KIT = "/tmp/kit"
SITE = "/tmp/site"
BENCH_DIR = "/tmp/bench"
MAX_COMMAND = 2000  # the device tool's limit on one command line
MAX_CARRY = 8
TOKENIZER_TAR = "demo-tokenizer.tar.gz"

DEVICE_CHECK = (
    "nvidia-smi -L; python3 -c \"import sys, torch; print('python', sys.version.split()[0], "
    "'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))\""
)
IMPORT_PROBE = (
    'python3 -c "import vllm, xgrammar, outlines, openai; from vllm import LLM; '
    "import vllm.entrypoints.openai.api_server; print('vllm', vllm.__version__, 'imports ok')\""
)


# One benchmark call per engine start, each inside the 10-minute limit; results accumulate in
# BENCH_DIR (kept while the machine is warm) and every call returns the merged report.
# 200 cases (400 judgements): the first lease's `ours` took 89.6 s on them (+80 s engine start)
# with string maxLength in the grammar, so 1,000 would not fit a 10-minute call.
BENCH_CALLS = (
    ("probe,ours_caps", "--cases 200 --phase-timeout 280",
     "matmul/HBM probe + our vLLM backend as shipped (cheap grammar + string-caps processor)"),
    ("baseline", "--cases 200 --phase-timeout 560 --baseline-deadline 300",
     "per-request baseline: vLLM OpenAI server, 16 concurrent"),
    ("ours", "--cases 200 --phase-timeout 520",
     "our vLLM backend, string maxLength in the grammar (vllm_string_bounds = grammar)"),
    ("ours_clip", "--cases 200 --phase-timeout 520",
     "our vLLM backend, grammar without string maxLength and no caps"),
    ("ours_outlines", "--cases 200 --phase-timeout 520",
     "our vLLM backend with the outlines grammar engine"),
    ("hf", "--phase-timeout 560 --hf-cases 100", "hf backend on CUDA, same prompts, 100 cases"),
)  # fmt: skip


@dataclass(frozen=True)
class DeviceCall:
    purpose: str
    command: str
    carry: tuple[str, ...] = ()
    timeout_s: int = 600

    def run_args(self) -> dict[str, object]:
        """The arguments of the device tool's `run`, ready to pass as they are."""
        out: dict[str, object] = {"command": self.command, "timeout_s": self.timeout_s}
        if self.carry:
            out["carry"] = list(self.carry)
        return out


# flashinfer is not carried (wheels.DEFAULT_SKIP); vLLM 0.26's V2 model runner imports it for
# its sampler unless told not to, and the engine then fails to start (seen on the H100).
ENV = {"PYTHONPATH": SITE, "PYTHONUNBUFFERED": "1", "VLLM_USE_FLASHINFER_SAMPLER": "0"}


def _env() -> str:
    return "export " + " ".join(f"{k}={v}" for k, v in ENV.items())


def _stage(kit_rel: str, call: int) -> str:
    return f"mkdir -p {STAGE} && cp {kit_rel}/calls/{call:02d}/* {STAGE}/"


def install_commands(kit_rel: str, has_tokenizer: bool) -> list[str]:
    steps = [
        (
            f"python3 device_kit/bundle.py join --manifest {kit_rel}/manifest.json "
            f"--stage {STAGE} --into {KIT}"
        ),
        (
            f"python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade "
            f"--target {SITE} {KIT}/*.whl"
        ),
    ]
    if has_tokenizer:
        steps.append(
            f"mkdir -p {KIT}/tokenizer && tar -xzf {KIT}/{TOKENIZER_TAR} -C {KIT}/tokenizer"
        )
    return steps


def bench_command(phases: str, extra: str = "") -> str:
    tail = f" {extra}" if extra else ""
    return (
        f"set -o pipefail; {_env()}; python3 scripts/bench_gpu.py --tokenizer {KIT}/tokenizer "
        f"--workdir {BENCH_DIR} --phases {phases} --out $OUT/bench_gpu.json{tail} 2>&1 "
        f"| tee $OUT/bench_{phases.replace(',', '_')}.log"
    )


def plan_calls(manifest: Manifest, kit_rel: str = ".device_kit") -> list[DeviceCall]:
    """Staging calls 1..N (N also installs and tests), then the benchmark calls."""
    has_tok = any(f.kind == "tokenizer" for f in manifest.files)
    calls: list[DeviceCall] = []
    n = manifest.calls
    for k in range(1, n + 1):
        parts = len(manifest.parts_of_call(k))
        steps = ["set -e"]
        if k == 1:
            steps.append(DEVICE_CHECK)
        steps.append(_stage(kit_rel, k))
        steps.append(f"echo 'call {k}/{n}: staged {parts} parts'; ls {STAGE} | wc -l")
        carry: tuple[str, ...] = (f"{kit_rel}/calls/{k:02d}",)
        purpose = f"carry parts of call {k}/{n} into {STAGE}"
        if k == n:
            steps = [
                "set -eo pipefail",
                *steps[1:],
                *install_commands(kit_rel, has_tok),
                _env(),
                IMPORT_PROBE,
                # vLLM's logs would push pytest's verdict out of the reply's output tail
                (
                    "python3 -m pytest -q --maxfail=3 -m gpu tests/test_gpu_vllm.py"
                    " > $OUT/gpu_tests.log 2>&1 || echo 'GPU tests FAILED'"
                ),
                "grep -E '(passed|failed|error)( |,)' $OUT/gpu_tests.log | tail -3",
                "grep -m8 -E '(Error|error):' $OUT/gpu_tests.log | cut -c1-300 || true",
            ]
            carry += (f"{kit_rel}/manifest.json",)
            purpose += "; join + verify sha256; pip install --target; import probe; GPU tests"
        calls.append(DeviceCall(purpose, "; ".join(steps), carry, 600))
    for phases, extra, purpose in BENCH_CALLS:
        calls.append(DeviceCall(f"bench: {purpose}", bench_command(phases, extra)))
    for c in calls:
        check_call(c)
    return calls


def check_call(call: DeviceCall) -> None:
    if len(call.command) > MAX_COMMAND:
        raise ValueError(
            f"device command is {len(call.command)} chars, over {MAX_COMMAND}: {call.purpose}"
        )
    if len(call.carry) > MAX_CARRY:
        raise ValueError(f"device call carries {len(call.carry)} paths, over {MAX_CARRY}")
    if not 1 <= call.timeout_s <= 600:
        raise ValueError(f"timeout_s {call.timeout_s} outside 1..600")


def render(calls: list[DeviceCall], manifest: Manifest, tree_bytes: int) -> str:
    """The plan as text: one block per call with its exact `run` arguments as JSON."""
    mib = 1024 * 1024
    lines = [
        (
            f"Device calls: {len(calls)}. Make them back to back: the machine is given back 30 s "
            f"after a call and {STAGE} goes with it. Working tree ~{tree_bytes / mib:.1f} MiB "
            f"travels with every call (limit 64 MiB with the carried parts)."
        ),
    ]
    for i, call in enumerate(calls, 1):
        part_bytes = sum(p.size for p in manifest.parts_of_call(i)) if i <= manifest.calls else 0
        total = part_bytes + tree_bytes
        warn = "  OVER 64 MiB" if total > 64 * mib else ""
        lines.append(
            f"\n[{i}/{len(calls)}] {call.purpose}  (carries {part_bytes / mib:.1f} MiB "
            f"+ tree = {total / mib:.1f} MiB){warn}"
        )
        lines.append("run " + json.dumps(call.run_args()))
    return "\n".join(lines)


def calls_json(calls: list[DeviceCall]) -> str:
    return json.dumps([asdict(c) | {"run": c.run_args()} for c in calls], indent=2)
