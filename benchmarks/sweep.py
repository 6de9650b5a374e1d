"""Benchmark: a sweep on more local processes is never slower than on one, and faster when the work is long.

Anchor: the same sweep in this process alone (``processes=1``), measured in the same run. Two sweeps of FedBuff
(``docs/sweep_example.yaml``: 12 cells × 5 seeds = 60 runs on 5 data sets, one per seed): as written (40 rounds a
run, a few milliseconds each: shorter than starting a helper process) and with 400 rounds a run (long enough to
share). Each is timed ``--repeat`` times per backend, alternating (in reverse order every other time), and the median
wall time is reported with its range and its ratio to the anchor (below 1: faster), in two settings:

* in this process, one sweep after the other (as in the app: after the first helper start the fork server stays up,
  so later helpers start in milliseconds);
* each timing in a new Python process (as ``fedplan sweep`` runs: helpers, if the work is worth it, first start the
  fork server, which imports numpy, scipy and the engines); the time is that of ``run_sweep`` alone.

Every backend's table is checked against the anchor's (all columns but wall_time_s). Each row also shows the
processes that ran runs, the data sets built (once per process that used one: 5 in one process) and, when fewer
processes ran than were asked, the sweep's note saying why (that of the median timing): the work was shorter than
a helper's start-up, or other programs left no core idle (then 2 processes run as 1, and the ratio is noise).

    python benchmarks/sweep.py                       # processes 1 and 2 (+ --dask: a LocalCluster of 2)
    python benchmarks/sweep.py --repeat 3 --json result.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from fedplan.planner.simulate.sweep import parse_sweep, run_sweep  # noqa: E402

EXAMPLE = ROOT / "docs" / "sweep_example.yaml"
ANCHOR = "1 process (anchor)"
SETTINGS = {"this process": "in this process, one sweep after the other",
            "new process": "each timing in a new process (as fedplan sweep runs)"}


def example(rounds: int):
    """The example sweep with ``rounds`` rounds a run (evaluated at the last)."""
    config = yaml.safe_load(EXAMPLE.read_text())
    return parse_sweep(config={**config, "options": {**config["options"], "rounds": rounds, "eval_every": rounds}})


def timed(rounds: int, backend: dict) -> dict:
    """One timing of the example sweep here: seconds, the table without wall_time_s, and how it ran."""
    sweep = example(rounds)
    start = time.perf_counter()
    result = run_sweep(sweep=sweep, **backend)
    return {"seconds": time.perf_counter() - start, "processes_used": result.processes_used,
            "data_sets_built": result.built.get("load_dataset", 0), "note": result.note,
            "table": [{key: value for key, value in row.items() if key != "wall_time_s"} for row in result.rows]}


def timed_in_new_process(rounds: int, backend: dict) -> dict:
    """:func:`timed` in a new Python process (the table passes through JSON in both settings' comparisons)."""
    argv = [sys.executable, __file__, "--child", json.dumps({"rounds": rounds, "backend": backend})]
    return json.loads(subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT).stdout)


def measure(rounds: int, backends: dict, repeat: int, setting: str) -> list[dict]:
    """Rows of one sweep in one setting: the median of ``repeat`` alternating timings per backend."""
    timing = timed if setting == "this process" else timed_in_new_process
    runs = {backend: [] for backend in backends}
    for repeat_index in range(repeat):  # the order reversed every other time: neither backend always goes first
        for backend in list(backends)[::-1 if repeat_index % 2 else 1]:
            runs[backend].append(timing(rounds, backends[backend]))
    anchor = statistics.median(run["seconds"] for run in runs[ANCHOR])
    rows = []
    for backend, timings in runs.items():
        median = statistics.median(run["seconds"] for run in timings)
        middle = sorted(timings, key=lambda run: run["seconds"])[len(timings) // 2]
        rows.append({"setting": setting, "sweep": f"fedbuff, {rounds} rounds a run", "runs": len(timings[0]["table"]),
                     "backend": backend, "median_seconds": median, "ratio_to_anchor": median / anchor,
                     "seconds": sorted(run["seconds"] for run in timings),
                     "same_table": all(run["table"] == runs[ANCHOR][0]["table"] for run in timings),
                     "processes_used": sorted({run["processes_used"] for run in timings if run["processes_used"]}),
                     "data_sets_built": sorted({run["data_sets_built"] for run in timings}),
                     "note": middle["note"], "timings_with_a_note": sum(bool(run["note"]) for run in timings)})
    return rows


def spread(values: list) -> str:
    return "–".join(map(str, (values[0], values[-1]) if len(values) > 1 else values)) if values else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timings per backend (median reported)")
    parser.add_argument("--rounds", type=int, nargs="+", default=[40, 400], help="rounds a run, one sweep each")
    parser.add_argument("--dask", action="store_true", help="also a Dask LocalCluster of 2 processes")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one timing for timed_in_new_process
    args = parser.parse_args(argv)
    if args.child:
        task = json.loads(args.child)
        print(json.dumps(timed(task["rounds"], task["backend"])))
        return 0
    backends = {ANCHOR: {"processes": 1}, "2 processes": {"processes": 2}}
    if args.dask:
        backends["Dask LocalCluster of 2"] = {"scheduler": "local", "processes": 2}
    results = {setting: [row for rounds in args.rounds for row in measure(rounds, backends, args.repeat, setting)]
               for setting in SETTINGS}
    width = max(len(row["sweep"]) for rows in results.values() for row in rows)
    for setting, rows in results.items():
        print(f"{SETTINGS[setting]} (median of {args.repeat}):")
        for row in rows:
            print(f"  {row['sweep'].ljust(width)}  {row['runs']:4d} runs  {row['backend']:<24}  "
                  f"{row['median_seconds']:7.3f} s (of {row['seconds'][0]:.3f}–{row['seconds'][-1]:.3f})  "
                  f"ratio {row['ratio_to_anchor']:.2f}  "
                  f"{'same table' if row['same_table'] else 'TABLE DIFFERS'}  "
                  f"ran in {spread(row['processes_used'])} process(es)  "
                  f"{spread(row['data_sets_built'])} data sets built")
            if row["timings_with_a_note"]:
                print(f"      {row['timings_with_a_note']} of {args.repeat} timings ran in fewer processes than asked; "
                      f"the median one {row['note'] or 'did not'}")
    local = [row for rows in results.values() for row in rows if row["backend"] == "2 processes"]
    print(f"2 processes against 1: worst ratio {max(row['ratio_to_anchor'] for row in local):.2f} over "
          f"{len(local)} sweeps and settings")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": results["this process"], "new_process": results["new process"]},
                                              indent=2))
    return 0 if all(row["same_table"] for rows in results.values() for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
