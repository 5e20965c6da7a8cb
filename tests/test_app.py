"""The application layer: typed errors instead of exits, the judge assembly closes what it opens,
and the library API goes through the same run service as the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexagauge_local.app import judge as app_judge
from nexagauge_local.app.errors import ClusterSetupError, InputError, JudgeSetupError
from nexagauge_local.app.inputs import open_dataset
from nexagauge_local.cluster import ClusterUnavailable
from nexagauge_local.settings import RunSettings


class _Client:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_judge_clients_close_every_client_they_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_judge, "open_client", lambda settings, factory: _Client())
    with pytest.raises(RuntimeError), app_judge.JudgeClients(RunSettings()) as clients:
        first, second = clients(), clients()
        raise RuntimeError("a node crashed")
    assert (first.closed, second.closed) == (1, 1)  # type: ignore[attr-defined]


def test_preflight_reports_missing_weights_and_unreachable_cluster(
    tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = RunSettings(model=str(tmp_path / "absent" / "judge.gguf"), cache_dir=tmp_path)
    with pytest.raises(JudgeSetupError, match="weights not found"):
        app_judge.preflight(missing)

    def unreachable(value: str) -> None:
        raise ClusterUnavailable(f"--cluster {value}: cannot connect to Ray")

    monkeypatch.setattr(app_judge, "connect_cluster", unreachable)
    settings = RunSettings(
        model=str(tiny_judge_dir), backend="hf", cache_dir=tmp_path, cluster="head:6379"
    )
    with pytest.raises(ClusterSetupError, match="cannot connect"):
        app_judge.preflight(settings)
    assert app_judge.preflight(settings.model_copy(update={"cluster": None})).decision.backend == "hf"


def test_open_dataset_raises_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        open_dataset(str(tmp_path / "none.jsonl"), (), None, tmp_path)
    with pytest.raises(InputError, match="LOGICAL=COLUMN"):
        open_dataset(str(tmp_path / "none.jsonl"), ("output",), None, tmp_path)


def test_evaluate_shares_the_run_service(monkeypatch: pytest.MonkeyPatch) -> None:
    from nexagauge_local import api
    from nexagauge_local.app import run as app_run

    seen: list[str] = []
    real = app_run.run

    def spy(settings: RunSettings, open_input, **kw):  # type: ignore[no-untyped-def]
        seen.append(settings.target)
        return real(settings, open_input, **kw)

    monkeypatch.setattr(api, "run", spy)
    out = api.evaluate([{"output": "Paris.", "reference": "Paris"}], target="refmatch")
    assert seen == ["refmatch"]
    assert len(out.case_reports) == 1 and out.summary["cases"]["valid"] == 1
