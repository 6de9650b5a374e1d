"""``fedplan sweep CONFIG.yaml``: a grid or random sweep of a simulation's options × seeds, in one table.

    fedplan sweep docs/sweep_example.yaml                                  # local processes, table in sweep_example.csv
    fedplan sweep docs/sweep_example.yaml --out runs.parquet --processes 2 --json
    fedplan sweep docs/sweep_example.yaml --scheduler local                 # on a new local Dask cluster
    fedplan sweep docs/sweep_example.yaml --scheduler tcp://10.0.0.5:8786   # on a running Dask cluster

The config format is described in :mod:`planner.simulate.sweep` (example: ``docs/sweep_example.yaml``).
While the sweep runs, finished rows are appended to ``OUT.partial.csv`` (completion order); at the end the table
sorted by run is written to ``OUT`` and the partial file is removed. A failed sweep removes it too, unless
``--keep-partial`` asks to keep the rows finished so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from fedplan.planner.export import check_output_file
from fedplan.planner.extras import optional_import
from fedplan.planner.simulate.sweep import CsvStream, load_sweep, run_sweep, table_format, write_table
from fedplan.planner.tasks.base import Report, Request, count, flag, text

#: Keys of the summary the readable table shows (``--json`` carries all of them).
TABLE_KEYS = ("algorithm", "mode", "runs", "cells", "seeds", "parameters", "backend", "wall_time_s", "diverged",
              "best", "out", "statement")


@dataclass(frozen=True, kw_only=True)
class RunSweep(Request):
    """Every (cell, seed) of a sweep config, as rows of one table (CSV or Parquet) and a summary."""

    command: ClassVar = ("sweep",)
    summary: ClassVar = "grid or random sweep of a simulation's options x seeds (local processes or a Dask cluster)"
    progress_unit: ClassVar = "runs"

    config: str = text(..., help="YAML sweep config (see docs/sweep_example.yaml), or JSON by a .json suffix",
                       positional=True)
    out: str | None = text(None, help="FILE.parquet or FILE.csv (default: the config's name with .csv, in the "
                           "current directory)", metavar="FILE")
    scheduler: str | None = text(None, help="a Dask cluster: local (a new LocalCluster of --processes workers) or "
                                 "the address of a running scheduler, e.g. tcp://HOST:8786 (default: local processes "
                                 "without Dask)", metavar="ADDR")
    processes: int | None = count(None, help="local processes, or workers of --scheduler local (default: the CPU "
                                  "count; 1 runs in this process)", low=1, deprecated=("--workers",))
    keep_partial: bool = flag(help="if the sweep fails, keep OUT.partial.csv with the rows finished so far (default: "
                              "removed)")

    def check(self) -> None:
        if table_format(self.path()) == "parquet":  # before any run, not after the last
            optional_import("pyarrow", purpose="a Parquet table")
        check_output_file(self.path())
        if self.processes is not None and self.scheduler not in (None, "local"):
            raise ValueError("processes is for local runs (or scheduler local); a running Dask cluster has its own "
                             "workers")

    def path(self) -> Path:
        """The table's file: ``out``, or the config's name with ``.csv`` in the current directory."""
        return Path(self.out or Path(self.config).with_suffix(".csv").name)

    def run(self, *, progress=None) -> Report:
        out = self.path()
        sweep = load_sweep(path=self.config)
        partial = out.with_name(out.name + ".partial.csv")
        try:
            with CsvStream(path=partial, columns=sweep.columns) as stream:
                result = run_sweep(sweep=sweep, processes=self.processes, scheduler=self.scheduler,
                                   progress=progress, on_row=stream)
        except BaseException:
            if not self.keep_partial:
                partial.unlink(missing_ok=True)
            raise
        values = result.to_dict()
        write_table(rows=result.rows, path=out, columns=sweep.columns,
                    metadata={"config": sweep.config, "backend": result.backend})
        partial.unlink()
        values["out"] = str(out)
        return Report(values=values, result=result, table={key: values[key] for key in TABLE_KEYS})


TASKS = (RunSweep,)
