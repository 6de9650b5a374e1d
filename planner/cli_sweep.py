"""``fedplan sweep CONFIG.yaml``: a grid or random sweep of a simulation's options × seeds, in one table.

    fedplan sweep docs/sweep_example.yaml                                  # local processes, table in sweep_example.csv
    fedplan sweep docs/sweep_example.yaml --out runs.parquet --workers 2 --json
    fedplan sweep docs/sweep_example.yaml --scheduler tcp://10.0.0.5:8786   # on a Dask cluster

The config format is described in :mod:`planner.simulate.sweep` (example: ``docs/sweep_example.yaml``).
While the sweep runs, finished rows are appended to ``OUT.partial.csv`` (completion order); at the end the table
sorted by run is written to ``OUT`` and the partial file is removed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

#: Keys of the summary shown without ``--json``.
TABLE_KEYS = ("algorithm", "mode", "runs", "cells", "seeds", "parameters", "backend", "wall_time_s", "diverged",
              "best", "out", "statement")


class RunsProgress:
    """A one-line bar on stderr: runs done of the total, elapsed seconds and the time left at the current pace."""

    def __init__(self, total: int, label: str = "sweep", stream=None):
        self.total, self.label, self.stream = max(int(total), 1), label, stream or sys.stderr
        self.start = self.last = time.monotonic()

    def __call__(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if 0 < done < self.total and now - self.last < 0.1:
            return
        self.last = now
        elapsed = now - self.start
        left = f", ~{elapsed * (self.total - done) / done:.1f} s left" if 0 < done < self.total else ""
        filled = 30 * min(done, self.total) // self.total
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total} runs, "
                          f"{elapsed:.1f} s{left}   ")
        if done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def add_parser(commands) -> None:
    """Register ``fedplan sweep``."""
    sweep = commands.add_parser("sweep", help="grid or random sweep of a simulation's options x seeds "
                                              "(local processes or a Dask cluster)")
    sweep.add_argument("config", help="YAML sweep config (see docs/sweep_example.yaml)")
    sweep.add_argument("--out", metavar="FILE", help="FILE.parquet or FILE.csv (default: the config's name with "
                                                     ".csv, in the current directory)")
    sweep.add_argument("--scheduler", metavar="ADDR",
                       help="Dask scheduler address, e.g. tcp://HOST:8786 (default: local processes)")
    sweep.add_argument("--workers", type=int, help="local processes (default: the CPU count; 1 runs in this process)")
    sweep.add_argument("--json", action="store_true", help="print one JSON summary (no progress bar)")
    sweep.set_defaults(handler=run)


def run(args: argparse.Namespace) -> dict:
    from fedplan.planner.simulate.sweep import CsvStream, load_sweep, run_sweep, table_format, write_table

    out = Path(args.out or Path(args.config).with_suffix(".csv").name)
    table_format(out)
    sweep = load_sweep(path=args.config)
    partial = out.with_name(out.name + ".partial.csv")
    progress = None if args.json else RunsProgress(sweep.size)
    with CsvStream(path=partial, columns=sweep.columns) as stream:
        result = run_sweep(sweep=sweep, workers=args.workers, scheduler=args.scheduler, progress=progress,
                           on_row=stream)
    output = result.to_dict()
    write_table(rows=result.rows, path=out, columns=sweep.columns,
                metadata={"config": sweep.config, "backend": result.backend})
    partial.unlink()
    output["out"] = str(out)
    return output if args.json else {key: output[key] for key in TABLE_KEYS}
