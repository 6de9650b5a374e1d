"""benchmarks/simulate.py runs on a tiny setting; it checks answers, never timings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_simulation_benchmark_runs_both_sweeps_against_the_anchor(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("benchmark_simulate", ROOT / "benchmarks" / "simulate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    output = tmp_path / "result.json"
    assert module.main(["--clients", "10", "100", "--dims", "10", "--scale", "0.01", "--repeats", "1",
                        "--json", str(output)]) == 0
    rows = json.loads(output.read_text())["rows"]
    assert [(row["clients"], row["dim"]) for row in rows] == [(10, 100), (100, 100), (100, 10)]
    for row in rows:
        assert row["examples"] == 60_000 and row["rounds"] == round(0.01 * module.ROUNDS[row["clients"], row["dim"]])
        assert row["client_updates"] == row["anchor_updates"] == 10 * row["rounds"]
        assert row["engine_cpu_s"] > 0 and row["anchor_cpu_s"] > 0
        assert row["ratio"] == row["engine_cpu_s"] / row["anchor_cpu_s"]
    assert module.examples(100_000, 100) == 600_000 and module.examples(100, 10_000) == 6_000
    printed = capsys.readouterr().out
    assert "N sweep (d = 100)" in printed and "d sweep (N = 100)" in printed and "worst ratio" in printed
