"""benchmarks/simulate.py runs on a tiny setting; it checks answers, never timings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_simulation_benchmark_runs_and_reports_both_ratios(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("benchmark_simulate", ROOT / "benchmarks" / "simulate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    output = tmp_path / "result.json"
    assert module.main(["--rounds", "20", "--repeats", "1", "--json", str(output)]) == 0
    (row,) = json.loads(output.read_text())["rows"]
    assert row["client_updates"] >= 200 and row["final_accuracy"] is not None and row["epsilon"] > 0
    assert row["updates_per_s"] > 0 and row["prototype_updates_per_s"] > 0 and row["bare_seconds"] > 0
    printed = capsys.readouterr().out
    assert "median speed ratio (engine / prototype)" in printed and "bare gradient arithmetic" in printed
