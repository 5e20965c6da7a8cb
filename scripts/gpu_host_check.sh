#!/usr/bin/env bash
# Check an air-gapped GPU host end to end, in one command, from a bundle carried to it.
#
# Why one script: on a host with no network the useful work is a fixed sequence (install the
# bundle, prove the stack imports, measure the judge, run the CLI, run the GPU tests), and a
# typo found half-way costs a second trip. Each step runs in its own process group with a time
# limit taken from one overall deadline, writes its log as it goes and a line to steps.tsv
# when it ends, and refreshes one archive of the results: a run cut short still hands back
# every finished step. Run it on a CPU machine first with --device cpu (vLLM's CPU build, a
# tiny model, install.sh --dry-run): the same commands, so the GPU run cannot fail on a
# missing import or a wrong path.
set -uo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/gpu_host_check.sh --results DIR [options]

Runs, in order, the steps named by --steps (default: all), each bounded by what is left of
--deadline, and records each one's exit code and seconds in DIR/steps.tsv:
  host       nvidia-smi, the Python in use and its freeze (DIR/target-freeze.txt, the file
             `nexagauge-local bundle build --freeze` takes to carry only what this host lacks)
  install    bash BUNDLE/install.sh --target SITE (verify every sha256, join parts, install);
             with --device cpu, install.sh --dry-run (verify and join only)
  imports    torch, vLLM, xgrammar, outlines, pydantic and this package import; CUDA is seen
  bench      scripts/bench_gpu.py --phases PHASES --cases N (DIR/bench_gpu.json)
  cli        nexagauge-local run redteam on the bundled sample with --gpu 0 (DIR/run/)
  gpu-tests  pytest -m gpu tests/test_gpu_vllm.py (DIR/gpu-tests.xml)
  attacks    scripts/bench_attacks.py: multi-turn escalation of the bundled harmful probes,
             round-synchronous batched against one conversation at a time, the demo model
             as attacker, target and judge on the same GPU (DIR/bench_attacks.json)

Options:
  --results DIR       where logs and figures go (required; created)
  --bundle DIR        the bundle folder (MANIFEST.json, install.sh, wheels/); needed by install
  --site DIR          install target, put first on PYTHONPATH for later steps [/tmp/nexagauge-site]
  --steps LIST        comma-separated subset of host,install,imports,bench,cli,gpu-tests,
                      attacks [all, in that order: what the deadline leaves no time for is
                      recorded as skipped]
  --phases LIST       bench phases [probe,ours_caps,baseline]
  --cases N           bench cases (x 2 metrics = judgements) [200]
  --attack-probes N   attacks: harmful probes of the bundled suite (at most 64) [64]
  --deadline S        seconds for the whole run; each step gets what is left [3600]
  --archive FILE      refresh FILE (.tgz of DIR, without model files) after every step
  --device cuda|cpu   cpu: rehearse on a machine without a GPU [cuda]
  -h, --help          this text

Exit code: 0 every step passed; 1 a step failed or ran out of time (steps.tsv says which);
2 bad arguments.
EOF
}

RESULTS="" BUNDLE="" SITE=/tmp/nexagauge-site STEPS=host,install,imports,bench,cli,gpu-tests,attacks
PHASES=probe,ours_caps,baseline CASES=200 DEADLINE=3600 ARCHIVE="" DEVICE=cuda ATTACK_PROBES=64
while [ $# -gt 0 ]; do
  case "$1" in
    --results) RESULTS="${2:?--results needs a folder}"; shift 2 ;;
    --bundle) BUNDLE="${2:?--bundle needs a folder}"; shift 2 ;;
    --site) SITE="${2:?--site needs a folder}"; shift 2 ;;
    --steps) STEPS="${2:?--steps needs a list}"; shift 2 ;;
    --phases) PHASES="${2:?--phases needs a list}"; shift 2 ;;
    --cases) CASES="${2:?--cases needs a number}"; shift 2 ;;
    --attack-probes) ATTACK_PROBES="${2:?--attack-probes needs a number}"; shift 2 ;;
    --deadline) DEADLINE="${2:?--deadline needs seconds}"; shift 2 ;;
    --archive) ARCHIVE="${2:?--archive needs a file}"; shift 2 ;;
    --device) DEVICE="${2:?--device needs cuda or cpu}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_host_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
fail_args() { echo "gpu_host_check: $1" >&2; exit 2; }
[ -n "$RESULTS" ] || fail_args "--results DIR is required (see --help)"
case "$DEVICE" in cuda|cpu) ;; *) fail_args "--device $DEVICE: cuda or cpu" ;; esac
[[ "$CASES" =~ ^[1-9][0-9]*$ ]] || fail_args "--cases $CASES: a positive whole number"
[[ "$ATTACK_PROBES" =~ ^[1-9][0-9]*$ ]] || fail_args "--attack-probes $ATTACK_PROBES: a positive whole number"
[[ "$DEADLINE" =~ ^[1-9][0-9]*$ ]] || fail_args "--deadline $DEADLINE: whole seconds"
IFS=, read -r -a WANT <<<"$STEPS"
for s in "${WANT[@]}"; do
  case "$s" in host|install|imports|bench|cli|gpu-tests|attacks) ;;
    *) fail_args "--steps: unknown step '$s' (host,install,imports,bench,cli,gpu-tests,attacks)" ;;
  esac
done
if [[ ",$STEPS," == *",install,"* ]]; then
  [ -f "$BUNDLE/install.sh" ] || fail_args "--bundle '$BUNDLE': no install.sh there (the install step needs the bundle folder)"
fi

ROOT="$(cd "$(dirname "$0")/.." && pwd)"   # the checkout: its code runs, not an older copy
cd "$ROOT" || exit 2
mkdir -p "$RESULTS" || fail_args "--results $RESULTS: cannot create it"
RESULTS="$(cd "$RESULTS" && pwd)"
PY="${PYTHON:-python3}"
STARTED=$SECONDS
REAP_GRACE=15   # seconds a timed-out step gets between SIGTERM and SIGKILL
printf 'step\texit\tseconds\tlimit_s\n' >"$RESULTS/steps.tsv"
FAILED=0

# A vLLM server or engine that left the step's group (it starts its own session) still names a
# file under this run's folder on its command line; this script's own processes are spared.
reap() {
  local p own
  own="$(ps -o pgid= -p $$ | tr -d ' ')"
  for p in $(pgrep -f -- "$RESULTS/"); do
    [ "$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ')" = "$own" ] || kill "-$1" "$p" 2>/dev/null
  done
}

pack() {
  [ -n "$ARCHIVE" ] || return 0
  tar czf "$ARCHIVE.tmp" --exclude='*/model' --exclude='*/cache' --exclude='*.safetensors' \
    -C "$(dirname "$RESULTS")" "$(basename "$RESULTS")" 2>/dev/null && mv "$ARCHIVE.tmp" "$ARCHIVE"
}

# step NAME CAP_S COMMAND...: run COMMAND in its own process group for at most CAP_S seconds
# (and never past the deadline), log to RESULTS/NAME.log, record the outcome.
step() {
  local name="$1" cap="$2"; shift 2
  local left=$(( DEADLINE - (SECONDS - STARTED) - REAP_GRACE ))
  local limit=$(( cap < left ? cap : left ))
  if [ "$limit" -le 5 ]; then
    printf '%s\tskipped\t0\t%s\n' "$name" "$limit" >>"$RESULTS/steps.tsv"
    echo "== $name: skipped, the deadline is reached" >&2
    FAILED=1; pack; return 1
  fi
  echo "== $name (at most ${limit} s)" >&2
  local t0=$SECONDS
  setsid "$@" >"$RESULTS/$name.log" 2>&1 &
  local pid=$! rc
  ( sleep "$limit"; kill -TERM -- "-$pid"; sleep "$REAP_GRACE"; kill -KILL -- "-$pid"
  ) >/dev/null 2>&1 &   # (not holding the caller's stdout open once it is ended)
  local watch=$!
  wait "$pid"; rc=$?
  pkill -P "$watch" 2>/dev/null; kill "$watch" 2>/dev/null; wait "$watch" 2>/dev/null
  reap TERM; sleep 1; reap KILL
  local took=$(( SECONDS - t0 ))
  [ "$took" -ge "$limit" ] && rc="timeout"
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$took" "$limit" >>"$RESULTS/steps.tsv"
  echo "== $name: exit $rc in ${took} s" >&2
  tail -n 3 "$RESULTS/$name.log" | cut -c1-240 >&2
  [ "$rc" = 0 ] || FAILED=1
  pack
  [ "$rc" = 0 ]
}

run_host() {
  echo "date: $(date -u +%FT%TZ)"; uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi || echo "nvidia-smi: not found"
  "$PY" -c 'import platform as p; print("# python:", p.python_version()); print("# platform: manylinux_%s_%s" % (p.libc_ver()[1].replace(".", "_"), p.machine()))' >"$RESULTS/target-freeze.txt"
  # a package installed from a URL is frozen with it, user:token@ included: never written
  "$PY" -m pip freeze | sed -E 's#(://)[^/@[:space:]]+@#\1#' >>"$RESULTS/target-freeze.txt"
  echo "freeze: $(grep -vc '^#' "$RESULTS/target-freeze.txt") packages in target-freeze.txt"
}

run_imports() {
  "$PY" - "$RESULTS/imports.json" <<'EOF'
import importlib, json, sys
out = {}
for name in ("torch", "vllm", "xgrammar", "outlines", "pydantic", "transformers", "nexagauge_local"):
    try:
        mod = importlib.import_module(name)
        out[name] = {"version": getattr(mod, "__version__", "?"), "file": getattr(mod, "__file__", "")}
    except Exception as exc:  # every failure is reported, not only the first
        out[name] = {"error": f"{type(exc).__name__}: {exc}"}
import torch
out["cuda"] = torch.cuda.is_available()
out["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps(out, indent=1))
bad = [k for k, v in out.items() if isinstance(v, dict) and "error" in v]
sys.exit(1 if bad else 0)
EOF
}

if [ "$DEVICE" = cpu ]; then GPU_ARGS=(--backend vllm); GPU_ID=""; else GPU_ARGS=(--gpu 0); GPU_ID=0; fi
use_site() { export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"; }
# an earlier run's install (a second call on the same host) serves the later steps
[ "$DEVICE" = cuda ] && [ -n "$(ls -A "$SITE" 2>/dev/null)" ] && use_site
for s in "${WANT[@]}"; do
  case "$s" in
    host) step host 60 bash -c "$(declare -f run_host); PY='$PY' RESULTS='$RESULTS' run_host" ;;
    install)
      if [ "$DEVICE" = cpu ]; then
        step install 300 bash "$BUNDLE/install.sh" --dry-run --target "$SITE"
      else
        step install 300 bash "$BUNDLE/install.sh" --target "$SITE" --python "$PY" && use_site
      fi ;;
    imports) step imports 120 bash -c "$(declare -f run_imports); PY='$PY' RESULTS='$RESULTS' run_imports" ;;
    bench)
      step bench 1800 env PYTHONUNBUFFERED=1 "$PY" scripts/bench_gpu.py --device "$DEVICE" \
        --phases "$PHASES" --cases "$CASES" --workdir "$RESULTS/bench" \
        --out "$RESULTS/bench_gpu.json" --phase-timeout 420 ;;
    cli)
      step cli 900 env PYTHONUNBUFFERED=1 "$PY" -m nexagauge_local run redteam \
        --input nexagauge_local/data/sample.jsonl --output-dir "$RESULTS/run" "${GPU_ARGS[@]}" ;;
    gpu-tests)
      step gpu-tests 600 "$PY" -m pytest -m gpu tests/test_gpu_vllm.py -q -p no:cacheprovider \
        --junitxml "$RESULTS/gpu-tests.xml" ;;
    attacks)
      step attacks 900 env PYTHONUNBUFFERED=1 "$PY" scripts/bench_attacks.py --backend vllm \
        --gpu "$GPU_ID" --probes "$ATTACK_PROBES" --turns 3 --sequential-sample 8 \
        --json "$RESULTS/bench_attacks.json" ;;
  esac
done
echo "== done in $(( SECONDS - STARTED )) s; steps in $RESULTS/steps.tsv" >&2
column -t -s $'\t' "$RESULTS/steps.tsv" >&2 2>/dev/null || cat "$RESULTS/steps.tsv" >&2
exit "$FAILED"
