"""Throughput of the deterministic pipeline: cases/s for refmatch and refalign, and peak memory.

Each target runs in its own subprocess over the same synthetic dataset, so peak RSS is that
target's alone. Reports both the end-to-end wall time (process start, model load, writing every
case report) and the nodes' own time from summary.json.

    python scripts/bench_pipeline.py            # 5,000 records
    python scripts/bench_pipeline.py --n 20000
    python scripts/bench_pipeline.py --rss 10000,100000,1000000   # memory at scale
    python scripts/bench_pipeline.py --rss 100000 --formats jsonl,parquet

`--rss` runs the real CLI (`run refmatch`: summary, metrics, report.html and manifest included)
once per size on records streamed to disk, and prints each process's peak RSS (wait4's
rusage) beside its wall time and output size: the peak must not grow with N. Beside it, the
peak of the process tree's summed PSS (the run, its scoring pool and its chart child, shared
pages counted once), sampled from /proc every 0.25 s: the memory the whole run really held.
`--formats` runs each size once per input format over the same records: jsonl (the default),
parquet (snappy, row groups of 10,000 rows, as pyarrow writes blocks), jsonl.gz, jsonl.zst,
json (one JSON array, a record per line) and json.gz.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"refmatch": 500.0, "refalign": 100.0}  # target cases/s on 2 cores

SUBJECTS = ["The committee", "Our model", "The river", "A new study", "The engine", "The city council",
            "The vaccine", "The satellite", "The company", "The library"]
VERBS = ["reported", "measured", "approved", "described", "announced", "rejected", "observed", "built"]
OBJECTS = ["a record harvest", "higher water levels", "the annual budget", "a faster algorithm",
           "new safety rules", "an unexpected result", "a larger bridge", "lower emissions"]
TAILS = ["last year.", "in the northern region.", "after a long review.", "despite early doubts.",
         "with broad support.", "for the first time.", "during the winter.", "under tight limits."]


def sentence(rng: random.Random) -> str:
    return " ".join([rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(TAILS)])


def make_records(n: int, seed: int = 0) -> list[dict]:
    """Answers of 2-6 sentences; references share some sentences, as real references do."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        ref = [sentence(rng) for _ in range(rng.randint(2, 4))]
        out = [s if rng.random() < 0.6 else sentence(rng) for s in ref] + [
            sentence(rng) for _ in range(rng.randint(0, 2))]
        records.append({"case_id": f"bench-{i}", "input": "Summarise the report.",
                        "output": " ".join(out), "reference": " ".join(ref)})
    return records


def worker(target: str, data: Path, out: Path, cache: Path) -> None:
    from nexagauge_local.dataset import Dataset
    from nexagauge_local.runner import Runner
    from nexagauge_local.settings import RunSettings

    t0 = time.perf_counter()
    settings = RunSettings(target=target, output_dir=out, cache_dir=cache, progress=False)
    outcome = Runner(settings).run(Dataset(data))
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    nodes = outcome.summary["nodes"]
    node_seconds = sum(u["wall_seconds"] for u in nodes.values())
    print(json.dumps({"cases": outcome.summary["cases"]["valid"], "wall": wall,
                      "node_seconds": node_seconds, "peak_mb": peak_kb / 1024,
                      "per_node": {k: v["wall_seconds"] for k, v in nodes.items()}}))


def write_records(path: Path, n: int, seed: int = 0) -> None:
    """make_records' records, streamed to disk in blocks so a million never sit in memory."""
    with path.open("w", encoding="utf-8") as fh:
        for start in range(0, n, 10_000):
            block = make_records(min(10_000, n - start), seed=seed + start)
            for i, rec in enumerate(block):
                rec["case_id"] = f"bench-{start + i}"
                fh.write(json.dumps(rec) + "\n")


FORMATS = ("jsonl", "parquet", "jsonl.gz", "jsonl.zst", "json", "json.gz")


def write_format(path: Path, n: int, fmt: str) -> Path:
    """write_records' records as `fmt`, streamed block by block (a million never in memory)."""
    jsonl = path.with_suffix(".jsonl")
    write_records(jsonl, n)
    if fmt == "jsonl":
        return jsonl
    out = path.with_suffix(f".{fmt}")
    if fmt == "parquet":
        write_parquet(jsonl, out)
    elif fmt == "json":
        write_array(jsonl, out)
    elif fmt == "json.gz":
        array = path.with_suffix(".json")
        write_array(jsonl, array)
        compress(array, out, "gzip")
        array.unlink()
    else:
        compress(jsonl, out, fmt.removeprefix("jsonl."))
    jsonl.unlink()
    return out


def write_parquet(jsonl: Path, out: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    with jsonl.open(encoding="utf-8") as fh:
        while block := [json.loads(line) for _, line in zip(range(10_000), fh)]:
            table = pa.Table.from_pylist(block)
            writer = writer or pq.ParquetWriter(out, table.schema)
            writer.write_table(table)
    if writer is not None:
        writer.close()


def write_array(jsonl: Path, out: Path) -> None:
    """The JSONL's records as one JSON array, one record per line, written line by line."""
    with jsonl.open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        dst.write("[\n")
        for i, line in enumerate(src):
            dst.write((",\n" if i else "") + line.rstrip("\n"))
        dst.write("\n]\n")


def compress(src_path: Path, out: Path, codec: str) -> None:
    import gzip

    import zstandard

    with src_path.open("rb") as src, out.open("wb") as raw:
        sink = (gzip.GzipFile(fileobj=raw, mode="wb") if codec == "gz"
                else zstandard.ZstdCompressor().stream_writer(raw))
        with sink:
            while chunk := src.read(1 << 20):
                sink.write(chunk)


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants now (Linux /proc; a process that just ended is skipped)."""
    out = [pid]
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            kids = children.read_text().split()
        except OSError:
            continue
        for kid in kids:
            out += process_tree(int(kid))
    return out


def pss_kb(pid: int) -> int:
    """A process's proportional set size: its private pages plus its share of shared ones."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_at_scale(sizes: list[int], formats: list[str]) -> None:
    print("bench_pipeline --rss: peak RSS of `nexagauge-local run refmatch` (whole process) by size")
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPU(s), python {platform.python_version()}\n")
    print(f"{'format':>10}{'records':>9}{'input MB':>10}{'wall s':>9}{'peak RSS MB':>13}"
          f"{'tree PSS MB':>13}{'output MB':>11}{'report MB':>11}")
    for n in sizes:
        for fmt in formats:
            rss_run(n, fmt)


def rss_run(n: int, fmt: str) -> None:
    """One `run refmatch` over n records in `fmt`: its row of the --rss table."""
    with tempfile.TemporaryDirectory() as tmp:
        data, out = write_format(Path(tmp) / "records", n, fmt), Path(tmp) / "out"
        cmd = [sys.executable, "-m", "nexagauge_local", "run", "refmatch", "--input", str(data),
               "--output-dir", str(out), "--no-cache", "--cache-dir", f"{tmp}/cache", "-q"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        tree_kb = 0
        while True:
            tree_kb = max(tree_kb, sum(pss_kb(pid) for pid in process_tree(proc.pid)))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.25)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"run failed at n={n}: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
        report = (out / "report.html").stat().st_size / 1e6
        print(f"{fmt:>10}{n:>9,}{data.stat().st_size / 1e6:>10.0f}{wall:>9.1f}"
              f"{usage.ru_maxrss / 1024:>13.0f}{tree_kb / 1024:>13.0f}"
              f"{size:>11.0f}{report:>11.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="synthetic records (default 5000)")
    ap.add_argument("--rss", default=None, help="comma list of sizes: peak RSS of the CLI at each")
    ap.add_argument("--formats", default="jsonl",
                    help=f"with --rss: comma list of input formats ({', '.join(FORMATS)})")
    ap.add_argument("--worker", nargs=4, metavar=("TARGET", "DATA", "OUT", "CACHE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss:
        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        unknown = [f for f in formats if f not in FORMATS]
        if unknown:
            ap.error(f"--formats: unknown {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
        rss_at_scale([int(x) for x in args.rss.split(",")], formats)
        return
    if args.worker:
        target, data, out, cache = args.worker
        worker(target, Path(data), Path(out), Path(cache))
        return

    print("bench_pipeline: deterministic nodes of nexagauge-local, each target in its own process")
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPU(s), python {platform.python_version()}")
    print(f"data: {args.n} synthetic records (2-6 sentence answers with a reference)\n")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "bench.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in make_records(args.n)))
        print(f"{'target':<10}{'cases':>7}{'wall s':>9}{'cases/s':>10}{'node s':>9}{'node cases/s':>14}"
              f"{'peak MB':>9}{'target':>9}")
        for target, goal in TARGETS.items():
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", target, str(data), f"{tmp}/out-{target}", f"{tmp}/cache"],
                capture_output=True, text=True, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            e2e = r["cases"] / r["wall"]
            node = r["cases"] / r["node_seconds"]
            verdict = "ok" if e2e >= goal else "BELOW"
            print(f"{target:<10}{r['cases']:>7}{r['wall']:>9.1f}{e2e:>10.0f}{r['node_seconds']:>9.1f}"
                  f"{node:>14.0f}{r['peak_mb']:>9.0f}{f'>={goal:.0f} {verdict}':>12}")
            print(f"{'':<10}per node seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in r["per_node"].items()))
    print("\ncases/s = cases / end-to-end wall (process start, model load, every case report written);"
          "\nnode cases/s = cases / seconds spent inside the nodes.")


if __name__ == "__main__":
    main()
