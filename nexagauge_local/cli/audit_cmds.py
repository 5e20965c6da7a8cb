"""`keys new`, `sign`, `verify` and `reproduce`: the audit trail on the command line.

Parsing and printing only; the work is in app/signing.py (keys, signing, verifying) and in
app/rerun_check.py. Exit codes: 0 ok, 1 a check failed (verify found a difference, a run did
not reproduce, its input or weights are not the manifest's), 2 set-up (no key, no manifest).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nexagauge_local.cli.errors import cli_errors
from nexagauge_local.cli.exit_codes import CHECK_FAILED, OK
from nexagauge_local.cli.options import parse_model_items, verbose_option

RUN_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
KEY_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("keys")
def keys_group() -> None:
    """Ed25519 signing keys for run manifests.

    \b
    Example:
      nexagauge-local keys new --out keys/
    """


@keys_group.command("new")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the key pair (created if needed).")
def keys_new_cmd(out_dir: Path) -> None:
    """Write a new key pair: nexagauge.key (private, mode 0600) and nexagauge.pub (public).

    Keep the .key with whoever signs runs; give the .pub to whoever verifies them. An
    existing key is never overwritten.

    \b
    Example:
      nexagauge-local keys new --out ~/.config/nexagauge-local/keys
    """
    from nexagauge_local.app.signing import new_keys

    with cli_errors():
        keys = new_keys(out_dir)
    click.echo(f"private key: {keys.private}")
    click.echo(f"public key:  {keys.public}")
    click.echo(f"fingerprint: {keys.fingerprint}")


@click.command("sign")
@click.argument("out_dir", type=RUN_DIR, metavar="OUTDIR")
@click.option("--key", "key", type=KEY_FILE, required=True, help="Ed25519 private key (keys new).")
def sign_cmd(out_dir: Path, key: Path) -> None:
    """Sign OUTDIR/manifest.json: writes OUTDIR/manifest.json.sig (replacing an old one).

    \b
    Example:
      nexagauge-local sign out/run1 --key keys/nexagauge.key
    """
    from nexagauge_local.app.signing import sign

    with cli_errors():
        sig = sign(out_dir, key)
    click.echo(str(sig))


@click.command("verify")
@click.argument("out_dir", type=RUN_DIR, metavar="OUTDIR")
@click.option("--input", "input_path", type=click.Path(path_type=Path),
              help="The dataset (a file, a dataset folder or a pipe): checked against the "
                   "manifest, record by record when its bytes differ.")
@click.option("--model", "models", metavar="[NODE=]PATH", multiple=True,
              help="Judge weights (a folder, a .gguf file or a profile name): checked file by "
                   "file against the default judge's; NODE=PATH checks the judge that judged "
                   "that node (runs with --model NODE=PROFILE). Repeatable.")
@click.option("--pubkey", type=KEY_FILE, help="Public key: check manifest.json.sig with it.")
@click.option("--config", "config", type=click.Path(dir_okay=False, path_type=Path),
              help="A run configuration file: must be the one the run read (--config), byte "
                   "for byte. The text the manifest keeps is always checked against its hash.")
def verify_cmd(out_dir: Path, input_path: Path | None, models: tuple[str, ...],
               pubkey: Path | None, config: Path | None) -> None:
    """Check OUTDIR against its manifest.json: every output file, and optionally the input,
    the judge weights and the signature. With --config, also the run configuration file.
    Prints each difference with the file it is about; exits 0 when everything matches, 1
    otherwise.

    \b
    Examples:
      nexagauge-local verify out/run1
      nexagauge-local verify out/run1 --input data.jsonl --model ~/models/qwen2.5-7b-instruct \\
          --pubkey keys/nexagauge.pub
      nexagauge-local verify out/run1 --config run.toml
      nexagauge-local verify out/run1 --model demo --model redteam=~/models/llama-guard-3-8b
    """
    from nexagauge_local.app.signing import verify

    with cli_errors():
        model, node_models = parse_model_items(models)
        report = verify(out_dir, input_path, model, pubkey, config, node_models)
    for line in report.lines():
        click.echo(line)
    sys.exit(OK if report.ok else CHECK_FAILED)


@click.command("reproduce")
@click.argument("out_dir", type=RUN_DIR, metavar="OUTDIR")
@click.option("--output-dir", "new_dir", type=click.Path(file_okay=False, path_type=Path),
              required=True, help="Where the re-run writes (a new folder).")
@click.option("--input", "input_path", type=click.Path(path_type=Path),
              help="The dataset, when it is no longer where the manifest says it was, or when "
                   "the run read a pipe or records in memory: a file, folder or pipe with the "
                   "same bytes or the same records.")
@click.option("--tolerance", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Absolute score tolerance (0: scores must be identical).")
@verbose_option
def reproduce_cmd(out_dir: Path, new_dir: Path, input_path: Path | None, tolerance: float) -> None:
    """Re-run OUTDIR's run from its manifest into a new folder, without the judge cache, and
    compare every case's scores and verdicts. Exits 0 when the run reproduces, 1 when it does
    not (or when the input or judge weights are not the manifest's). A judge server's key
    comes from NEXAGAUGE_JUDGE_API_KEY, and a --judge-url that carried credentials (recorded
    as http://***@host/v1) from NEXAGAUGE_JUDGE_URL: the manifest keeps neither.

    \b
    Example:
      nexagauge-local reproduce out/run1 --output-dir out/run1-again
    """
    from nexagauge_local.app.rerun_check import reproduce
    from nexagauge_local.cli.progress import RichEvents

    with cli_errors():
        done = reproduce(out_dir, new_dir, input_path=input_path, tolerance=tolerance,
                         events=RichEvents())
    for line in done.report.lines():
        click.echo(line)
    sys.exit(OK if done.report.reproduced else CHECK_FAILED)
