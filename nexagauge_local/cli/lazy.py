"""A click group that imports a command's module only when that command runs.

Each command module pulls in its service (the runner and report stack, scipy for compare's
bootstrap, scikit-learn for the probe analytics...). Importing all of them to print `--help`
took 1.5 s on a 2-core host; listing the commands needs only their names and one-line helps,
which this group keeps as data. This is click's documented lazy-loading pattern ("Lazily
Loading Subcommands"), with the one-line helps stored so `--help` imports nothing; a test checks
each stored help against the real command's, so the two cannot drift.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives ("package.module:attribute") and its one-line help."""

    target: str
    short_help: str

    def load(self) -> click.Command:
        module, _, attr = self.target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.target} is not a click command")
        return command


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(self.lazy[cmd_name].load(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in self.commands:
                command = self.commands[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:
                # a bare Command truncates its help exactly as the real one would
                stand_in = click.Command(name, help=self.lazy[name].short_help)
                rows.append((name, stand_in.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
