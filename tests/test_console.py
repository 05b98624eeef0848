"""The console a person reads: the main summary at 80 columns with no cell cut, the width
taken from $COLUMNS also when piped, progress per phase, and an ETA that does not jump."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from recallbench.console import SmoothedRate, console_width, print_table
from recallbench.pipeline import Progress, start_run, tables
from recallbench.report.tables import Table
from recallbench.spec import AnsweringSpec, ModelChoice, RunSpec

BOX = "│┃"


def _render(shown: list[Table], width: int) -> str:
    out = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    for t in shown:
        print_table(t, out)
    return out.file.getvalue()  # type: ignore[attr-defined]


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:1] in BOX]


def _no_cell_cut(shown: list[Table], text: str, width: int) -> None:
    assert "…" not in text
    lines = _table_lines(text)
    assert lines and all(len(line) <= width for line in lines), max(map(len, lines))
    cells = {line_cell.strip() for line in lines for line_cell in line.strip(BOX).split("│")}
    cells |= {c.strip() for line in lines for c in line.strip(BOX).split("┃")}
    for t in shown:
        for value in (*t.columns, *(c for row in t.rows for c in row)):
            assert value in cells, (t.title, value)


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    tmp = tmp_path_factory.mktemp("console")
    spec = RunSpec(systems=("random", "bm25", "naive"), datasets=("sample",), k=(1, 5, 10))
    return start_run(spec, tmp, tmp / "out")


def test_the_main_summary_at_80_columns_cuts_no_cell(sample_run) -> None:  # noqa: ANN001
    shown = tables(sample_run)
    wide = _render(shown, 200)
    assert len(_table_lines(wide)[0]) > 80  # the retrieval table does need splitting
    narrow = _render(shown, 80)
    _no_cell_cut(shown, narrow, 80)
    assert "retrieval from gold evidence ids (part 1 of" in narrow
    # the ranking columns come apart from the cost columns
    for line in _table_lines(narrow):
        assert not ("hit@1" in line and "errors" in line)


@pytest.mark.slow
def test_glasshouse_core_summary_at_80_columns(shared_data: Path, tmp_path: Path) -> None:
    if not (shared_data / "glasshouse-v0.1" / "glasshouse_v0.1_core.jsonl").exists():
        pytest.skip("Glasshouse v0.1 files not in the shared data folder")
    spec = RunSpec(systems=("bm25", "naive"), datasets=("glasshouse-v0.1:core",), k=(1, 5, 10))
    shown = tables(start_run(spec, shared_data, tmp_path / "out"))
    _no_cell_cut(shown, _render(shown, 80), 80)


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_columns_is_honoured_also_when_piped() -> None:
    assert console_width(_Stream(False), {"COLUMNS": "80"}) == 80
    assert console_width(_Stream(True), {"COLUMNS": "100"}) == 100
    assert console_width(_Stream(True), {}) is None  # the terminal's own width
    assert console_width(_Stream(False), {}) == 160
    assert console_width(_Stream(False), {"COLUMNS": "wide"}) == 160


def test_the_eta_does_not_jump_when_items_finish_in_bursts() -> None:
    """Ten items every ten seconds (one a second on average), sampled each second: the
    smoothed ETA moves by at most a few seconds a second; the rate over the last second
    alone would swing between 'never' and ten times too fast."""
    total = 600
    rate = SmoothedRate()
    etas = []
    for second in range(1, 301):
        done = 10 * (second // 10)
        rate.update(float(second), done)
        eta = rate.remaining_s(done, total)
        if second > 30:
            assert eta is not None
            etas.append(eta)
    steps = [abs(b - a) for a, b in zip(etas, etas[1:], strict=False)]
    assert max(steps) < 0.1 * min(etas[:-1])
    assert abs(etas[-1] - (total - 300)) < 0.25 * (total - 300)  # and it is about right


def test_progress_has_a_task_per_phase(tmp_path: Path) -> None:
    started: list[tuple[str, str, int]] = []
    advanced: dict[int, int] = {}

    def start_phase(phase: str, what: str, total: int):  # noqa: ANN202
        started.append((phase, what, total))
        i = len(started) - 1
        advanced[i] = 0

        def tick(n: int) -> None:
            advanced[i] += n

        return tick

    spec = RunSpec(
        systems=("bm25",),
        datasets=("sample",),
        k=(1, 5),
        answering=AnsweringSpec(
            "answer", reader=ModelChoice("mock"), judge=ModelChoice("mock-judge")
        ),
    )
    start_run(spec, tmp_path, tmp_path / "out", Progress(start_phase=start_phase))
    assert [p for p, _, _ in started] == ["ingest", "search", "answer", "judge"]
    assert started[0] == ("ingest", "bm25 on sample", 30)  # the sample's 30 sessions
    assert started[1][2] == 50 and started[2][2] == 50 and started[3][2] == 50
    assert all(advanced[i] == total for i, (_, _, total) in enumerate(started))
