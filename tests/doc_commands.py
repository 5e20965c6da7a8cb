"""The `nexagauge-local` command lines of the documentation, and the CLI's own parser run over
them without running any command.

A fenced block (shell-like: no info string, `bash`, `sh`, `shell`, `console`, `text`) is read
as a shell script: backslash continuations are joined, `# comments` dropped, a `$ ` prompt
stripped, and each line cut at `|`, `&&`, `||`, `;` and redirections into simple commands; a
command starting with `nexagauge-local` (after `VAR=value` assignments) is a documented command
line. A process substitution `<(...)` stands for a file (`<(zcat x)` -> a path), and a
command substitution `$(nexagauge-local ...)` is a command line of its own.

A usage synopsis (`[--gpu 0]`, `dir|stats|clear`, `...`) is not a command a user types: only
its subcommands, its options' names and its choice alternatives are checked.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import click

from tests.doc_pages import Fence

PROGRAM = "nexagauge-local"
SHELL_INFOS = {"", "bash", "sh", "shell", "console", "text"}
_OPERATORS = {"|", "||", "&&", ";", "&"}
_REDIRECTS = {">", ">>", "<", ">&", "<&", ">|", "&>"}
_PROCESS_SUBSTITUTION = re.compile(r"<\(([^()]*)\)")
_COMMAND_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# a stand-in for the file a process substitution gives the command (its /dev/fd/N)
PIPE_FILE = "process-substitution.jsonl"


@dataclass(frozen=True)
class DocCommand:
    """One documented command line: its arguments after the program name, where it is, and
    whether it is a synopsis (checked by names only)."""

    argv: tuple[str, ...]
    where: str
    synopsis: bool = False

    def __str__(self) -> str:
        return f"{self.where}: {PROGRAM} {shlex.join(self.argv)}"


def _unquoted(line: str) -> str:
    """The line with quoted strings blanked and its comment dropped, to look at its notation."""
    bare = re.sub(r"'[^']*'|\"[^\"]*\"", "''", line)
    return re.sub(r"(^|\s)#.*$", "", bare)


def is_synopsis(line: str) -> bool:
    """Usage notation outside quotes: an optional part `[...]`, alternatives `a|b` (a shell
    pipe has a space on one side at least), a repetition `...`, or a placeholder word in
    capitals (`TARGET`, `OUTDIR`, `N`)."""
    bare = _unquoted(line)
    return bool(re.search(r"[\[\]]|\.\.\.|\S\|\S|(^|\s)[A-Z][A-Z0-9_]*(?=\s|$)", bare))


def _simple_commands(line: str) -> Iterator[list[str]]:
    """The simple commands of one shell line, redirections and their targets dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    current: list[str] = []
    skip_next = False
    for token in lexer:
        if skip_next:
            skip_next = False
        elif token in _OPERATORS:
            yield current
            current = []
        elif token in _REDIRECTS:
            skip_next = True
        else:
            current.append(token)
    yield current


def _program_args(words: list[str]) -> list[str] | None:
    """The arguments after `nexagauge-local` when WORDS run it, else None."""
    while words and (_ASSIGNMENT.match(words[0]) or words[0] == "env"):
        words = words[1:]
    if words and Path(words[0]).name == PROGRAM:
        return words[1:]
    return None


def commands_in_line(line: str, where: str) -> list[DocCommand]:
    line = line.strip()
    line = line.removeprefix("$ ")
    if PROGRAM not in line or line.startswith("#"):
        return []  # data, output or another program in a shell block
    found: list[DocCommand] = []
    for inner in _COMMAND_SUBSTITUTION.findall(line):
        found += commands_in_line(inner, where)
    line = _COMMAND_SUBSTITUTION.sub("command-substitution", line)
    line = _PROCESS_SUBSTITUTION.sub(PIPE_FILE, line)
    if is_synopsis(line):
        words = shlex.split(re.sub(r"[\[\]]|\.\.\.", " ", line), comments=True)
        args = _program_args(words)
        return found + ([DocCommand(tuple(args), where, synopsis=True)] if args is not None else [])
    for words in _simple_commands(line):
        args = _program_args(words)
        if args is not None:
            found.append(DocCommand(tuple(args), where))
    return found


def commands_in_fence(fence: Fence, page: str) -> list[DocCommand]:
    """The command lines of one fenced block, each named `PAGE:LINE` by its first line."""
    if fence.info.split(" ")[0] not in SHELL_INFOS:
        return []
    found: list[DocCommand] = []
    joined, first = "", 0
    for number, line in enumerate(fence.text.splitlines(), start=fence.line + 1):
        if not joined:
            first = number
        if line.rstrip().endswith("\\"):  # a continuation: joined with the next line
            joined += line.rstrip()[:-1] + " "
            continue
        found += _named(joined + line, f"{page}:{first}")
        joined = ""
    if joined:
        found += _named(joined, f"{page}:{first}")
    return found


def _named(line: str, where: str) -> list[DocCommand]:
    try:
        return commands_in_line(line, where)
    except ValueError as exc:  # shlex: an unclosed quote
        raise ValueError(f"{where}: {exc}: {line}") from None


# ------------------------------------------------------------------ parsing with the CLI's parser


def _subcommands(ctx: click.Context) -> list[str]:
    """What remains for a group's subcommand after the group parsed its own options."""
    return [*ctx._protected_args, *ctx.args]  # click keeps the subcommand's name apart here


@contextlib.contextmanager
def _existing_paths() -> Iterator[None]:
    """While parsing, a relative path that a `click.Path(exists=True)` parameter names is made
    in the current folder (empty: a folder where the parameter takes folders only, else a
    file) just before click checks it, so a documented `verify out` or `--sign keys/x.key`
    parses as it would where the user ran the commands before it. What is checked is the
    command line (names, choices, counts, types), not the user's files; an absolute path is
    left alone, so a documented one must exist."""
    convert = click.Path.convert

    def making(self: click.Path, value: Any, param: Any, ctx: Any) -> Any:
        if self.exists and isinstance(value, str) and value != "-" and not os.path.isabs(value):
            path = Path(value)
            if not path.exists():
                if self.file_okay:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                else:
                    path.mkdir(parents=True)
        return convert(self, value, param, ctx)

    with mock.patch.object(click.Path, "convert", making):
        yield


def parse(root: click.Command, argv: tuple[str, ...], workdir: Path) -> None:
    """Parse ARGV as `nexagauge-local ARGV` with click, group by group down to the command,
    in WORKDIR, without invoking anything: an unknown command or option, a bad choice or a
    bad value raises click's UsageError (BadParameter, NoSuchOption ...). An eager option
    that ends the parse on its own (`--help`, `--version`, `agreement --bundled-path`) ends it
    here too, as success."""
    with contextlib.chdir(workdir), _existing_paths(), contextlib.suppress(click.exceptions.Exit):
        ctx = root.make_context(PROGRAM, list(argv))
        command = root
        while isinstance(command, click.Group):
            name, sub, rest = command.resolve_command(ctx, _subcommands(ctx))
            if sub is None or name is None:
                raise click.UsageError(f"no such command {name!r}", ctx)
            ctx = sub.make_context(name, rest, parent=ctx)
            command = sub


def synopsis_problems(root: click.Command, argv: tuple[str, ...]) -> list[str]:
    """What a synopsis names that the CLI lacks: a subcommand, an option, a choice."""
    problems: list[str] = []
    ctx = click.Context(root, info_name=PROGRAM)
    command = root
    words = list(argv)
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        names = words.pop(0).split("|")
        known = command.list_commands(ctx)
        problems += [f"no command {n!r} under {ctx.command_path}" for n in names if n not in known]
        sub = command.get_command(ctx, names[0])
        if sub is None:
            return problems
        ctx = click.Context(sub, info_name=names[0], parent=ctx)
        command = sub
    options = {o: p for p in command.get_params(ctx) if isinstance(p, click.Option)
               for o in (*p.opts, *p.secondary_opts)}  # fmt: skip
    for i, word in enumerate(words):
        if not word.startswith("-") or word == "-":
            continue
        flag = word.split("=", 1)[0]
        param = options.get(flag)
        if param is None:
            problems.append(f"{ctx.command_path} has no option {flag}")
        elif isinstance(param.type, click.Choice) and i + 1 < len(words):
            offered = [v for v in words[i + 1].split("|") if v and not v.isupper()]
            choices = [str(c) for c in param.type.choices]
            problems += [f"{ctx.command_path} {flag}: {v!r} is not one of {choices}"
                         for v in offered if v not in choices]  # fmt: skip
    return problems
