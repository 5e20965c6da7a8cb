"""Start-up stays cheap: the CLI, `--help` and node discovery import no heavy library.

Time limits would be fragile on a shared CI host, so these tests assert structure instead: which
modules a fresh interpreter has loaded after each entry point.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from nexagauge_local.cli import LAZY, main

HEAVY = ("torch", "transformers", "nltk", "sklearn", "scipy", "matplotlib", "sentence_transformers")


def _loaded_after(code: str) -> set[str]:
    probe = code + f"\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import nexagauge_local",
        "import nexagauge_local.cli",
        "import nexagauge_local.graph",
        # --help exits through SystemExit; what it imported is still in sys.modules
        (
            "import contextlib, io\nfrom nexagauge_local.cli import main\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['--help'])"
        ),
    ],
    ids=["package", "cli", "graph", "--help"],
)
def test_entry_points_import_no_heavy_library(code: str) -> None:
    assert _loaded_after(code) == set()


def test_evaluate_is_still_the_front_door() -> None:
    import nexagauge_local
    from nexagauge_local.api import evaluate

    assert nexagauge_local.evaluate is evaluate
    with pytest.raises(AttributeError):
        _ = nexagauge_local.no_such_name  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(LAZY))
def test_lazy_entry_matches_the_real_command(name: str) -> None:
    """The stored one-line help is the command's own, so `--help` cannot drift from it."""
    command = LAZY[name].load()
    assert isinstance(command, click.Command)
    assert command.get_short_help_str(10**6) == LAZY[name].short_help


def test_help_lists_every_command_and_subcommand_help_works() -> None:
    from click.testing import CliRunner

    runner = CliRunner()
    top = runner.invoke(main, ["--help"])
    assert top.exit_code == 0
    for name in LAZY:
        assert f"\n  {name} " in top.output
        sub = runner.invoke(main, [name, "--help"])
        assert sub.exit_code == 0, (name, sub.output)
        assert "Usage:" in sub.output


def test_nltk_loads_without_its_optional_scipy_and_sklearn() -> None:
    code = (
        "from nexagauge_local.scoring.lexical import LexicalScorer\n"
        "s = LexicalScorer()\n"
        "assert s.rouge('the cat sat', 'the cat sat')['rouge1']['fmeasure'] == 1.0\n"
    )
    loaded = _loaded_after(code)
    assert "nltk" in loaded
    assert not {"scipy", "sklearn"} & loaded
    # the hidden names are restored: both import normally afterwards
    assert {"scipy", "sklearn"} <= _loaded_after(code + "import scipy.stats, sklearn\n")
