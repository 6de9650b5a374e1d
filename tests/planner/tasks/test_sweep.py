"""fedplan sweep: JSON summary, tables written (Parquet/CSV), progress bar in runs, one-line errors."""

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from fedplan.planner.cli import main
from fedplan.planner.tasks.sweep import RunSweep

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "sweep_example.yaml"
CONFIG = {"algorithm": "fedbuff",
          "options": {"n_samples": 300, "n_features": 4, "clients": 4, "rounds": 5, "sample_rate": 0.1,
                      "clipping_norm": 1.0, "eval_every": 5},
          "grid": {"noise_multiplier": [0.5, 2.0], "buffer_size": [2, 3]}, "seeds": 3}


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    return path


def test_json_summary_and_a_parquet_table_sorted_by_run(capsys, config, tmp_path):
    out = tmp_path / "runs.parquet"
    code, stdout, err = run(capsys, "sweep", str(config), "--out", str(out), "--processes", "2", "--json")
    assert code == 0 and err == ""
    summary = json.loads(stdout)
    assert (summary["runs"], summary["cells"], summary["seeds"], summary["diverged"]) == (12, 4, [0, 1, 2], 0)
    assert summary["parameters"] == ["noise_multiplier", "buffer_size"] and summary["out"] == str(out)
    assert summary["backend"] == "2 processes" and "largest epsilon over the seeds" in summary["statement"]
    rows = pq.read_table(out).to_pylist()
    assert [row["run"] for row in rows] == list(range(12)) and not out.with_name("runs.parquet.partial.csv").exists()
    best = min(range(4), key=lambda cell: sum(row["final_loss"] for row in rows if row["cell"] == cell))
    assert summary["best"]["noise_multiplier"] == rows[3 * best]["noise_multiplier"]
    assert summary["best"]["max_epsilon"] == max(row["epsilon"] for row in rows if row["cell"] == best)
    assert json.loads(pq.read_schema(out).metadata[b"fedplan"])["config"] == CONFIG


def test_table_output_progress_bar_and_default_csv_name(capsys, config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run(capsys, "sweep", str(config), "--processes", "1")
    assert code == 0 and "12/12 runs" in err and err.endswith("\n")
    assert stdout.startswith("algorithm") and "best noise_multiplier" in stdout and "out  " in stdout
    with (tmp_path / "tiny.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["run"]) for row in rows] == list(range(12)) and rows[4]["buffer_size"] == "3"


def test_the_example_config_runs(capsys, tmp_path):
    code, stdout, _ = run(capsys, "sweep", str(EXAMPLE), "--out", str(tmp_path / "example.csv"), "--processes",
                          "1", "--json")
    summary = json.loads(stdout)
    assert code == 0 and (summary["runs"], summary["cells"], summary["diverged"]) == (60, 12, 0)
    assert 0.5 < summary["best"]["mean_final_accuracy"] <= 1


@pytest.mark.parametrize(("changes", "argv", "message"), [
    ({"grid": {"noise_multipler": [1]}}, (), "sweep config: grid.noise_multipler is not an option of fedplan "
                                             "simulate fedbuff (did you mean noise_multiplier?)"),
    ({"seeds": "all"}, (), "sweep config: seeds must be an integer"),
    ({}, ("--out", "runs.xlsx"), "out must end in .parquet or .csv; got 'runs.xlsx'"),
    ({}, ("--processes", "0"), "processes must be an integer in [1, 1e+12]; got 0"),
    ({}, ("--scheduler", "nope://x:1"), "cannot reach the Dask scheduler 'nope://x:1': unknown address scheme"),
    ({"grid": {"buffer_size": [2, 0]}}, ("--processes", "1"), "sweep config: grid.buffer_size[1] must be an integer in "
                                                                "[1, 1e+12]; got 0"),
    ({"grid": {"dataset": ["synthetic", "nope"]}}, ("--processes", "1"),
     "sweep config: cell 1 (dataset='nope'): dataset must be one of"),
])
def test_bad_input_is_one_line_on_stderr_with_exit_2(capsys, tmp_path, monkeypatch, changes, argv, message):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, **changes}, sort_keys=False))
    code, stdout, err = run(capsys, "sweep", str(path), "--json", *argv)
    assert code == 2 and stdout == ""
    assert err.startswith("fedplan: error: ") and message in err and err.count("\n") == 1


def test_a_missing_config_file_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "sweep", str(tmp_path / "none.yaml"))
    assert code == 2 and "config must name an existing file" in err and "none.yaml" in err and err.count("\n") == 1


def test_the_old_workers_spelling_works_with_a_note(capsys, config, tmp_path):
    code, stdout, err = run(capsys, "sweep", str(config), "--out", str(tmp_path / "t.csv"), "--workers", "1", "--json")
    assert code == 0 and json.loads(stdout)["backend"] == "this process"
    assert err == ("fedplan: note: --workers is deprecated here, use --processes (the old spelling goes in fedplan "
                   "0.3)\n")


def test_the_api_and_the_cli_give_the_same_message(capsys, config):
    with pytest.raises(ValueError) as raised:
        RunSweep(config=str(config), out="runs.xlsx")
    code, _, err = run(capsys, "sweep", str(config), "--out", "runs.xlsx")
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"


def test_the_api_reports_progress_in_runs_and_the_rows(config, tmp_path):
    seen = []
    report = RunSweep(config=str(config), out=str(tmp_path / "t.csv"), processes=1).run(
        progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 12) and seen[-1] == (12, 12) and len(report.result.rows) == 12
    assert report["out"] == str(tmp_path / "t.csv") and RunSweep.progress_unit == "runs"


def test_a_sweep_refused_before_its_first_run_leaves_no_file(capsys, config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "sweep", str(config), "--scheduler", "nope://x:1")
    assert code == 2 and "cannot reach the Dask scheduler 'nope://x:1'" in err
    assert list(tmp_path.glob("*.csv")) == []


@pytest.mark.parametrize("keep", [False, True])
def test_a_sweep_that_fails_while_running_removes_its_partial_table_unless_asked(capsys, config, tmp_path, monkeypatch,
                                                                                  keep):
    from fedplan.planner.simulate import sweep as sweeps
    from fedplan.planner.tasks.simulate import SimulateFedbuff

    real_run = SimulateFedbuff.run

    def failing_run(self, *, progress=None):  # run 5 fails; runs go data set (seed) by data set: 0, 3, 6, 9, 1, 4, …
        if self.seed == 2 and self.buffer_size == 3 and self.noise_multiplier == 0.5:
            raise ValueError("the run failed")
        return real_run(self, progress=progress)

    monkeypatch.setattr(SimulateFedbuff, "run", failing_run)
    assert sweeps.RUNNERS["fedbuff"] is SimulateFedbuff
    out = tmp_path / "t.csv"
    code, stdout, err = run(capsys, "sweep", str(config), "--out", str(out), "--processes", "1",
                            *(["--keep-partial"] if keep else []))
    assert code == 2 and stdout == ""
    last = err.splitlines()[-1]
    assert last.startswith("fedplan: error: run 5 (noise_multiplier=0.5, buffer_size=3, seed 2): the run failed")
    assert err.endswith("\n") and "\rsweep" not in last  # on its own line, after the bar's line
    partial = out.with_name("t.csv.partial.csv")
    assert not out.exists() and partial.exists() == keep
    if keep:
        streamed = sorted(int(row["run"]) for row in csv.DictReader(partial.open()))
        assert streamed == [0, 1, 2, 3, 4, 6, 7, 9, 10]  # seeds 0 and 1 whole, then seed 2's runs before run 5


def test_an_unknown_data_set_in_a_grid_is_refused_before_any_run(capsys, config, tmp_path):
    bad = yaml.safe_load(config.read_text())
    bad["grid"] = {"dataset": ["synthetic", "nope.libsvm"]}
    config.write_text(yaml.safe_dump(bad))
    code, _, err = run(capsys, "sweep", str(config), "--out", str(tmp_path / "t.csv"), "--processes", "1")
    assert code == 2 and err.startswith("fedplan: error: sweep config: cell 1 (dataset='nope.libsvm'): dataset must be")
    assert "\r" not in err and not list(tmp_path.glob("t.csv*"))
