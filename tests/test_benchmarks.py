"""The benchmark script runs (one cheap grid point); it checks answers here, never timings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_benchmark():
    spec = importlib.util.spec_from_file_location("benchmark_accounting", ROOT / "benchmarks" / "accounting.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_accounting_benchmark_runs_and_agrees_with_dp_accounting(tmp_path, capsys):
    benchmark = load_benchmark()
    assert len(benchmark.GRID) == 27
    output = tmp_path / "result.json"
    assert benchmark.main(["--only", "1,0.01,10000", "--json", str(output)]) == 0
    (row,) = json.loads(output.read_text())["rows"]
    assert row["within_target"] and row["accountant"] == "pld"
    assert abs(row["relative_difference"]) < 5e-3
    assert "median speed ratio" in capsys.readouterr().out


def test_sweep_benchmark_runs_and_every_backend_gives_the_anchor_table(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("benchmark_sweep", ROOT / "benchmarks" / "sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    output = tmp_path / "result.json"
    assert module.main(["--repeat", "1", "--rounds", "5", "--json", str(output)]) == 0
    rows = json.loads(output.read_text())["rows"]
    assert [row["backend"] for row in rows] == ["1 process (anchor)", "2 processes"]
    assert all(row["same_table"] and row["runs"] == 60 for row in rows)
    assert "ratio" in capsys.readouterr().out
