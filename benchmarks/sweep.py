"""Benchmark: a sweep on more local processes is never slower than on one, and faster when the work is long.

Anchor: the same sweep in this process alone (``processes=1``), measured in the same run. Two sweeps of FedBuff
(``docs/sweep_example.yaml``: 12 cells × 5 seeds = 60 runs): as written (40 rounds a run, a few milliseconds
each: shorter than starting a helper process) and with 400 rounds a run (long enough to share). Each is run
``--repeat`` times per backend, alternating, and the median wall time is reported with its ratio to the anchor
(below 1: faster). Every backend's table is checked against the anchor's (all columns but wall_time_s).

    python benchmarks/sweep.py                       # processes 1 and 2 (+ --dask: a LocalCluster of 2)
    python benchmarks/sweep.py --repeat 3 --json result.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from fedplan.planner.simulate.sweep import parse_sweep, run_sweep  # noqa: E402

EXAMPLE = ROOT / "docs" / "sweep_example.yaml"


def sweeps(rounds: tuple[int, ...]) -> dict:
    config = yaml.safe_load(EXAMPLE.read_text())
    return {f"{config['algorithm']}, {value} rounds a run": parse_sweep(
        config={**config, "options": {**config["options"], "rounds": value, "eval_every": value}})
        for value in rounds}


def timed(sweep, backend: dict) -> tuple[float, list]:
    start = time.perf_counter()
    result = run_sweep(sweep=sweep, **backend)
    seconds = time.perf_counter() - start
    return seconds, [{key: value for key, value in row.items() if key != "wall_time_s"} for row in result.rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timings per backend (median reported)")
    parser.add_argument("--rounds", type=int, nargs="+", default=[40, 400], help="rounds a run, one sweep each")
    parser.add_argument("--dask", action="store_true", help="also a Dask LocalCluster of 2 processes")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = parser.parse_args(argv)
    backends = {"1 process (anchor)": {"processes": 1}, "2 processes": {"processes": 2}}
    if args.dask:
        backends["Dask LocalCluster of 2"] = {"scheduler": "local", "processes": 2}
    rows = []
    for name, sweep in sweeps(tuple(args.rounds)).items():
        times = {backend: [] for backend in backends}
        tables = {}
        for _ in range(args.repeat):
            for backend, settings in backends.items():
                seconds, table = timed(sweep, settings)
                times[backend].append(seconds)
                tables[backend] = table
        anchor = statistics.median(times["1 process (anchor)"])
        for backend in backends:
            median = statistics.median(times[backend])
            rows.append({"sweep": name, "runs": sweep.size, "backend": backend, "median_seconds": median,
                         "ratio_to_anchor": median / anchor,
                         "same_table": tables[backend] == tables["1 process (anchor)"]})
    width = max(len(row["sweep"]) for row in rows)
    for row in rows:
        print(f"{row['sweep'].ljust(width)}  {row['runs']:4d} runs  {row['backend']:<24}  "
              f"{row['median_seconds']:7.3f} s  ratio {row['ratio_to_anchor']:.2f}  "
              f"{'same table' if row['same_table'] else 'TABLE DIFFERS'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))
    return 0 if all(row["same_table"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
