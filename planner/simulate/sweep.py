"""Parameter sweeps: a grid or a random sample of a simulation's options × seeds, in one tidy table.

A sweep names an algorithm (a ``fedplan simulate`` request), its fixed options, the swept parameters and the
seeds. Every (cell, seed) pair is one run of that request, ``dataclasses.replace(request, seed=seed)`` of the
cell's request (so ``fedplan simulate <algorithm> --<option> … --seed s`` reproduces a row), and gives one flat
row: the swept values, the seed, and the headline numbers of the
:class:`~planner.simulate.records.SimulationResult` (final loss/accuracy, rounds, ε of the run's own ledger…).

Runs execute in local processes (``concurrent.futures``, the default), in this process (``processes=1``), on a
new local Dask cluster (``scheduler="local"``) or on a running one (``scheduler="tcp://HOST:PORT"``). Small runs
travel in batches, and the calling process works too while helper processes start, so more processes are never
slower than one (``benchmarks/sweep.py``). Rows arrive in completion order; the table is sorted by run number, and
a run's numbers depend only on its options and seed, so every backend gives the same table (except
``wall_time_s``).

Config (YAML or a mapping)::

    algorithm: fedbuff                # a key of RUNNERS: vandijk, fedsgd-dpc, fedbuff, preset, adp2sgd, mapa,
                                      # dpscd, dpscd-dpsgd (its DP-SGD baseline), kardam, byzantine
    options: {dataset: synthetic, n_samples: 2000, clients: 10, rounds: 30, clipping_norm: 1}
    grid:                             # cartesian product, in the order written (last key fastest) …
      noise_multiplier: [0.5, 1, 2]
      buffer_size: [5, 10]
    random:                           # … or (instead of grid) `samples` draws from distributions
      samples: 20
      seed: 0
      parameters:
        server_lr: {log_uniform: [0.1, 2]}    # also uniform: [lo, hi], integers: [lo, hi] (inclusive),
        staleness_weighting: {choice: [constant, polynomial]}          # and choice: [values]
    seeds: [0, 1, 2]                  # or N for 0..N-1 (default [0])

Option names are the request's fields, i.e. those of ``fedplan simulate <algorithm> --help`` (dashes or
underscores; an old spelling the command still accepts works too). Each value is checked against the field's
declaration, and every cell's request is built, before anything runs. Each row's ε is the engine's ledger
(sampling and neighbouring relation as stated by ``fedplan simulate``); summaries report the largest ε over a
cell's seeds.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import itertools
import json
import math
import multiprocessing
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.extras import optional_import
from fedplan.planner.limits import check_runs, check_seconds, parse_structured, read_text
from fedplan.planner.tasks.base import Option, Request, options
from fedplan.planner.tasks.simulate import (
    SimulateFedbuff,
    SimulateFedsgdDpc,
    SimulatePreset,
    SimulateVandijk,
    estimated_seconds,
)
from fedplan.planner.tasks.simulate_papers import (
    SimulateAdp2sgd,
    SimulateByzantine,
    SimulateDpscd,
    SimulateKardam,
    SimulateMapa,
)

__all__ = ["RESULT_COLUMNS", "RESULT_PARTS", "RUNNERS", "CsvStream", "Run", "Sweep", "SweepResult", "execute",
           "iter_rows", "load_sweep", "parse_sweep", "run_sweep", "sweep_options", "table_format", "write_table"]

#: Fields of a run's result that become columns, in this order (``SimulationResult.to_dict`` keys).
RESULT_COLUMNS = ("rounds", "final_loss", "final_accuracy", "final_dist_sq", "epsilon", "delta", "virtual_time",
                  "diverged", "divergence", "wall_time_s")
#: Top-level keys of a sweep config.
CONFIG_KEYS = ("algorithm", "description", "options", "grid", "random", "seeds")
#: Distributions of a random sweep: name → draw(rng, low/high or values, n).
DISTRIBUTIONS = ("uniform", "log_uniform", "integers", "choice")
#: Fields of a simulation request that a sweep sets itself.
RESERVED = frozenset({"seed", "seeds", "validate"})
#: Modules the local worker processes import once, before they are forked (data, models, the engines' base).
PRELOAD = (__name__, "fedplan.planner.simulate.problem")
#: How long a Dask client waits for the scheduler before the sweep reports it unreachable.
CONNECT_TIMEOUT = "10s"
#: Seconds of work one task of a pool or a cluster should carry (small runs are batched up to this).
TASK_SECONDS = 0.2
#: Batches queued per process, so that none waits for the next while another is being handed out.
BATCHES_PER_PROCESS = 2
#: Helper processes start only when the work left exceeds this many seconds (their start-up costs about 0.5 s).
START_SECONDS = 1.0

#: The algorithms a sweep can run: the request class of each. A new engine with a ``fedplan simulate <name>``
#: request is one entry (the request needs a ``seed`` field; its report's values hold ``SimulationResult.to_dict``
#: keys, or, with an entry in :data:`RESULT_PARTS`, a mapping holding them under that key).
RUNNERS: dict[str, type[Request]] = {
    "vandijk": SimulateVandijk,
    "fedsgd-dpc": SimulateFedsgdDpc,
    "fedbuff": SimulateFedbuff,
    "preset": SimulatePreset,
    "adp2sgd": SimulateAdp2sgd,
    "mapa": SimulateMapa,
    "dpscd": SimulateDpscd,
    "dpscd-dpsgd": SimulateDpscd,  # its DP-SGD baseline
    "kardam": SimulateKardam,
    "byzantine": SimulateByzantine,
}
#: Algorithms whose request reports several runs: the part of its values a row shows.
RESULT_PARTS = {"dpscd": "dpscd", "dpscd-dpsgd": "dpsgd"}


def sweep_options(request_type: type[Request]) -> dict[str, Option]:
    """The fields a sweep config may set: the request's command-line fields but ``seed``, ``seeds``, ``validate``."""
    return {name: option for name, option in options(request_type).items()
            if option.cli and name not in RESERVED}


def _old_spellings(request_type: type[Request]) -> dict[str, str]:
    """Old option name (``staleness`` of ``--staleness``) → its field, for every deprecated spelling."""
    return {old.lstrip("-").replace("-", "_"): name for name, option in sweep_options(request_type).items()
            for old in option.deprecated}


def _command(request_type: type[Request]) -> str:
    return " ".join(("fedplan", *request_type.command))


@dataclass(frozen=True)
class Run:
    """One run of a sweep: its number, cell, the swept values, all options given (fixed and swept), its seed and
    the request that runs it (the cell's request with this seed)."""

    index: int
    cell: int
    algorithm: str
    parameters: dict
    options: dict
    seed: int
    request: Request


def execute(run: Run) -> dict:
    """Run one (cell, seed) pair and return its row; a ValueError names the run, its parameters and seed."""
    try:
        report = run.request.run()
    except ValueError as error:
        described = ", ".join(f"{name}={value!r}" for name, value in run.parameters.items())
        raise ValueError(f"run {run.index} ({described + ', ' if described else ''}seed {run.seed}): {error}") \
            from None
    summary = dict(report.values)
    if run.algorithm in RESULT_PARTS:
        summary = summary[RESULT_PARTS[run.algorithm]]
    row = {"run": run.index, "cell": run.cell, "algorithm": run.algorithm, **run.parameters, "seed": run.seed}
    for name in RESULT_COLUMNS:
        row[f"result_{name}" if name in row else name] = summary.get(name)
    return row


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: fixed options, one dict of swept values per cell, the seeds and each cell's request."""

    algorithm: str
    options: dict
    parameters: tuple[str, ...]
    cells: tuple[dict, ...]
    seeds: tuple[int, ...]
    mode: str
    config: dict = field(default_factory=dict)
    #: The request of each cell (with the first seed); a run replaces its seed.
    requests: tuple[Request, ...] = ()
    #: ``(old name, field)`` of every old option name the config used.
    renamed: tuple[tuple[str, str], ...] = ()

    @property
    def size(self) -> int:
        return len(self.cells) * len(self.seeds)

    @property
    def columns(self) -> tuple[str, ...]:
        head = ("run", "cell", "algorithm", *self.parameters, "seed")
        return head + tuple(f"result_{name}" if name in head else name for name in RESULT_COLUMNS)

    def runs(self) -> list[Run]:
        return [Run(index=cell * len(self.seeds) + position, cell=cell, algorithm=self.algorithm, parameters=values,
                    options={**self.options, **values}, seed=seed,
                    request=dataclasses.replace(self.requests[cell], seed=seed))
                for cell, values in enumerate(self.cells) for position, seed in enumerate(self.seeds)]


def _fail(message: str):
    raise ValueError(f"sweep config: {message}")


class _Names:
    """Option names of a config resolved to the request's fields (old spellings too, remembered)."""

    def __init__(self, request_type: type[Request]):
        self.request_type, self.fields = request_type, sweep_options(request_type)
        self.old, self.renamed = _old_spellings(request_type), {}

    def field(self, name: str, key: str) -> str:
        if name == "seed":
            _fail(f"{key} is not an option: the seeds are the top-level key seeds")
        if name in self.fields:
            return name
        if name in self.old:
            self.renamed[name] = self.old[name]
            return self.old[name]
        close = difflib.get_close_matches(name, self.fields, n=1)
        hint = f" (did you mean {close[0]}?)" if close else f" (options: {', '.join(sorted(self.fields))})"
        _fail(f"{key} is not an option of {_command(self.request_type)}{hint}")

    def mapping(self, value, key: str) -> dict:
        """``{field: value}`` of a config mapping; an old and a new spelling of one field are refused."""
        written = _mapping(value, key)
        resolved = {}
        for name, item in written.items():
            target = self.field(name, f"{key}.{name}")
            if target in resolved:
                _fail(f"{key} gives {target} twice (under its old and its new name)")
            resolved[target] = (name, item)
        return resolved

    def check(self, name: str, value, key: str):
        """``value`` converted by the field's declaration (int/float/str/bool, a list for multi-valued fields)."""
        option = self.fields[name]
        default = next(item.default for item in dataclasses.fields(self.request_type) if item.name == name)
        if value is None and default is None:
            return None
        if option.multiple and isinstance(value, list) and not value:
            _fail(f"{key} must not be empty")
        try:
            checked = option.check(key, value)
        except ValueError as error:
            raise ValueError(f"sweep config: {error}") from None
        return list(checked) if isinstance(checked, tuple) else checked


def _mapping(value, key: str) -> dict:
    if not isinstance(value, Mapping):
        _fail(f"{key} must be a mapping of names to values; got {value!r}")
    return {str(name).replace("-", "_"): item for name, item in value.items()}


def _grid_cells(names: _Names, grid, seed_count: int) -> tuple[tuple[str, ...], list[dict]]:
    grid = names.mapping(grid, "grid")
    if not grid:
        _fail("grid must name at least one parameter")
    columns = {}
    for written, values in grid.values():
        if not isinstance(values, list) or not values:
            _fail(f"grid.{written} must be a non-empty list of values; got {values!r}")
    sizes = [len(values) for _, values in grid.values()]
    check_runs("sweep config: grid", math.prod(sizes) * seed_count,
               because=f"{' × '.join(map(str, sizes))} cells × {seed_count} seed(s)")
    for name, (written, values) in grid.items():
        columns[name] = [names.check(name, value, f"grid.{written}[{i}]") for i, value in enumerate(values)]
    return tuple(columns), [dict(zip(columns, combo, strict=True)) for combo in itertools.product(*columns.values())]


def _draw(kind: str, spec, rng: np.random.Generator, samples: int, key: str) -> list:
    """``samples`` values of one random parameter, e.g. ``{log_uniform: [0.01, 1]}``."""
    if kind == "choice":
        if not isinstance(spec, list) or not spec:
            _fail(f"{key}.choice must be a non-empty list of values; got {spec!r}")
        return [spec[i] for i in rng.integers(len(spec), size=samples)]
    if not isinstance(spec, list) or len(spec) != 2:
        _fail(f"{key}.{kind} must be a list [low, high]; got {spec!r}")
    if kind == "integers":
        low = check_int(f"sweep config: {key}.{kind}[0]", spec[0])
        high = check_int(f"sweep config: {key}.{kind}[1]", spec[1], low=low)
        return [int(value) for value in rng.integers(low, high + 1, size=samples)]
    positive = 0.0 if kind == "log_uniform" else None
    low = check_real(f"sweep config: {key}.{kind}[0]", spec[0], low=positive, low_open=positive is not None)
    high = check_real(f"sweep config: {key}.{kind}[1]", spec[1], low=low)
    if kind == "uniform":
        return [float(value) for value in rng.uniform(low, high, size=samples)]
    return [float(value) for value in np.exp(rng.uniform(math.log(low), math.log(high), size=samples))]


def _random_cells(names: _Names, random, seed_count: int) -> tuple[tuple[str, ...], list[dict]]:
    random = _mapping(random, "random")
    unknown = sorted(set(random) - {"samples", "seed", "parameters"})
    if unknown:
        _fail(f"random.{unknown[0]} is not a key of random (keys: samples, seed, parameters)")
    samples = check_int("sweep config: random.samples", random.get("samples"), low=1)
    check_runs("sweep config: random.samples", samples * seed_count,
               because=f"{samples} samples × {seed_count} seed(s)")
    rng = np.random.default_rng(check_int("sweep config: random.seed", random.get("seed", 0), low=0))
    parameters = names.mapping(random.get("parameters"), "random.parameters")
    if not parameters:
        _fail("random.parameters must name at least one parameter")
    columns = {}
    for name, (written, spec) in parameters.items():
        key = f"random.parameters.{written}"
        if not isinstance(spec, Mapping) or len(spec) != 1 or next(iter(spec)) not in DISTRIBUTIONS:
            _fail(f"{key} must be one distribution {{kind: values}} with kind one of {', '.join(DISTRIBUTIONS)}; "
                  f"got {spec!r}")
        kind, values = next(iter(spec.items()))
        drawn = _draw(kind, values, rng, samples, key)
        columns[name] = [names.check(name, value, f"{key} (draw {i})") for i, value in enumerate(drawn)]
    return tuple(columns), [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def _seed_count(value) -> int:
    """How many seeds ``seeds`` asks for (checked against the runs limit before the seeds are listed)."""
    count = len(value) if isinstance(value, list) else check_int("sweep config: seeds", value, low=1)
    check_runs("sweep config: seeds", count, because=f"{count} seeds")
    return count


def _seeds(value) -> tuple[int, ...]:
    if isinstance(value, list):
        if not value:
            _fail("seeds must not be empty")
        seeds = tuple(check_int(f"sweep config: seeds[{i}]", seed, low=0) for i, seed in enumerate(value))
        if len(set(seeds)) != len(seeds):
            _fail(f"seeds must be distinct; got {list(seeds)}")
        return seeds
    return tuple(range(check_int("sweep config: seeds", value, low=1)))


def _described(values: Mapping) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in values.items())


def parse_sweep(*, config: Mapping) -> Sweep:
    """Validate a sweep config (see the module docstring); a ValueError names the offending key.

    Every cell's request is built here (with the first seed), so a value the request refuses, alone or with the
    others, stops the sweep before anything runs.
    """
    if not isinstance(config, Mapping):
        _fail(f"the config must be a mapping with keys {', '.join(CONFIG_KEYS)}; got {type(config).__name__}")
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        _fail(f"{unknown[0]!r} is not a sweep key (keys: {', '.join(CONFIG_KEYS)})")
    if "algorithm" not in config:
        _fail(f"algorithm is required (one of {', '.join(RUNNERS)})")
    algorithm = check_choice("sweep config: algorithm", config["algorithm"], RUNNERS)
    request_type = RUNNERS[algorithm]
    names = _Names(request_type)
    options = {name: names.check(name, value, f"options.{written}")
               for name, (written, value) in names.mapping(config.get("options", {}), "options").items()}
    if "grid" in config and "random" in config:
        _fail("give grid or random, not both")
    mode = "grid" if "grid" in config else "random" if "random" in config else "seeds"
    seed_count = _seed_count(config.get("seeds", [0]))
    parameters, cells = {"grid": lambda: _grid_cells(names, config["grid"], seed_count),
                         "random": lambda: _random_cells(names, config["random"], seed_count),
                         "seeds": lambda: ((), [{}])}[mode]()
    for name in parameters:
        if name in options:
            _fail(f"{name} is both a fixed option and a {mode} parameter")
    for item in dataclasses.fields(request_type):
        if item.name in names.fields and item.default is dataclasses.MISSING \
                and item.default_factory is dataclasses.MISSING and item.name not in options \
                and item.name not in parameters:
            _fail(f"options.{item.name} is required by {_command(request_type)}")
    seeds = _seeds(config.get("seeds", [0]))
    requests = []
    for index, values in enumerate(cells):
        try:
            requests.append(request_type(**options, **values, seed=seeds[0]))
        except ValueError as error:
            _fail(f"cell {index} ({_described(values)}): {error}" if values else str(error))
    total = sum(estimated_seconds(request) for request in requests) * len(seeds)
    check_seconds(total, because=f"sweep config: {len(cells)} cell(s) × {len(seeds)} seed(s) of {algorithm}")
    return Sweep(algorithm=algorithm, options=options, parameters=parameters, cells=tuple(cells), seeds=seeds,
                 mode=mode, config=dict(config), requests=tuple(requests), renamed=tuple(names.renamed.items()))


#: YAML 1.2 floats that YAML 1.1 (PyYAML) reads as strings: an exponent without a dot, e.g. 1e-5, 2E3.
EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


def _exponent_float_loader(yaml):
    """PyYAML's SafeLoader that also reads ``1e-5`` as a number, as ``--delta 1e-5`` means on the command line."""
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT_FLOAT, list("-+0123456789"))
    return Loader


def load_sweep(*, path: str | os.PathLike) -> Sweep:
    """Read and validate a YAML (or JSON) sweep config file."""
    import yaml

    text = read_text("config", path)
    config = parse_structured("config", Path(path).name, text, "yaml", loader=_exponent_float_loader(yaml))
    return parse_sweep(config=config)


def execute_batch(runs: list[Run]) -> list[dict]:
    """The rows of several runs, executed one after the other (one task of a pool or a Dask cluster)."""
    return [execute(run) for run in runs]


class _Pace:
    """How long one run takes here (a running mean), and from it how many runs one task should carry.

    A task of a pool or a cluster costs a round trip (pickling, scheduling, a result message: milliseconds);
    small runs are batched so that a task carries about ``TASK_SECONDS`` of work, and no more than a share of
    what is left, so that every process still gets work to the end.
    """

    def __init__(self) -> None:
        self.seconds, self.runs = 0.0, 0

    def timed(self, run: Run) -> dict:
        start = time.perf_counter()
        row = execute(run)
        self.seconds += time.perf_counter() - start
        self.runs += 1
        return row

    def seconds_left(self, left: int) -> float:
        """The time ``left`` more runs take at the pace so far."""
        return left * self.seconds / max(self.runs, 1)

    def batch_size(self, left: int, processes: int) -> int:
        if not self.runs:
            return 1
        per_run = max(self.seconds / self.runs, 1e-6)
        share = math.ceil(left / (BATCHES_PER_PROCESS * processes))
        return max(1, min(share, round(TASK_SECONDS / per_run)))


def _take(queue: deque, size: int) -> list[Run]:
    return [queue.popleft() for _ in range(min(size, len(queue)))]


def _inline_rows(runs: list[Run]) -> Iterator[dict]:
    for run in runs:
        yield execute(run)


def _start_helpers(runs: list[Run], helpers: int) -> tuple[ProcessPoolExecutor, Future]:
    """A pool of ``helpers`` processes and a future that is done once one of them has run a (empty) batch.

    Starting the pool happens on a thread: the first start of the fork server imports numpy, scipy and the
    engines (about half a second), and this process keeps running runs meanwhile.
    """
    # forkserver: safe when the caller has threads (a Dask client, a web app); the server imports the engines
    # once, so the helpers of later sweeps in this process start without importing them again.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(sorted({*PRELOAD, *(type(run.request).__module__ for run in runs)}))
    pool = ProcessPoolExecutor(max_workers=helpers, mp_context=context)
    started: Future = Future()

    def start() -> None:
        try:
            pool.submit(execute_batch, []).result()
            started.set_result(True)
        except BaseException as error:  # noqa: BLE001 - handed to the sweep's thread, which raises it
            started.set_exception(error)

    threading.Thread(target=start, name="fedplan-sweep-start", daemon=True).start()
    return pool, started


def _process_rows(runs: list[Run], processes: int) -> Iterator[dict]:
    """Rows from this process and, when the work left is worth it, ``processes - 1`` helper processes.

    This process runs runs itself from the start. Helpers are started only once the work left, at the pace
    measured here, exceeds ``START_SECONDS`` (a short sweep never pays their start-up); they take batches from
    the same queue as soon as they are up, while this process goes on. So more processes are never slower than
    one by more than the start-up's share of a core (``benchmarks/sweep.py`` measures it).
    """
    queue, pace, pending = deque(runs), _Pace(), set()
    pool = started = None
    try:
        while queue or pending:
            if pool is None and pace.runs and pace.seconds_left(len(queue)) > START_SECONDS:
                pool, started = _start_helpers(runs, processes - 1)
            if started is not None and started.done():
                started.result()  # raises if the helpers could not start
                while queue and len(pending) < BATCHES_PER_PROCESS * (processes - 1):
                    pending.add(pool.submit(execute_batch, _take(queue, pace.batch_size(len(queue), processes))))
            finished = {future for future in pending if future.done()}
            pending -= finished
            for future in finished:
                yield from future.result()
            if queue:
                yield pace.timed(queue.popleft())
            elif pending:
                wait(pending, return_when=FIRST_COMPLETED)
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _dask_client(scheduler: str, processes: int | None):
    """A client of the cluster at ``scheduler``, or of a new ``LocalCluster`` of ``processes`` single-threaded
    worker processes for ``scheduler="local"``."""
    distributed = optional_import("distributed", purpose="a sweep on a Dask cluster")
    if scheduler == "local":
        cluster = distributed.LocalCluster(n_workers=processes or _default_processes(), threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        return distributed.Client(cluster), cluster
    try:
        return distributed.Client(scheduler, timeout=CONNECT_TIMEOUT), None
    except (OSError, TimeoutError, ValueError) as error:
        raise ValueError(f"cannot reach the Dask scheduler {scheduler!r}: {' '.join(str(error).split())}") from None


def _dask_rows(runs: list[Run], client, cluster) -> Iterator[dict]:
    """Rows from a Dask cluster: the first run here (it times a run), the rest in batches (see :class:`_Pace`)."""
    distributed = optional_import("distributed", purpose="a sweep on a Dask cluster")
    try:
        queue, pace = deque(runs), _Pace()
        yield pace.timed(queue.popleft())
        workers = max(1, len(client.scheduler_info()["workers"]))
        batches = []
        while queue:
            batches.append(_take(queue, pace.batch_size(len(queue), workers)))
        for future in distributed.as_completed(client.map(execute_batch, batches, pure=False)):
            yield from future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _default_processes() -> int:
    return os.cpu_count() or 1


def iter_rows(*, sweep: Sweep, processes: int | None = None, scheduler: str | None = None) -> Iterator[dict]:
    """The rows of ``sweep`` in completion order.

    ``scheduler`` is the address of a Dask scheduler (e.g. ``"tcp://10.0.0.5:8786"``; its workers need fedplan
    installed), or ``"local"`` for a new ``distributed.LocalCluster`` of ``processes`` workers; otherwise
    ``processes`` local processes (default: the CPU count), or this process alone if 1.
    """
    runs = sweep.runs()
    if processes is not None:
        processes = check_int("processes", processes, low=1)
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler:
            raise ValueError(f"scheduler must be 'local' or an address such as tcp://HOST:PORT; got {scheduler!r}")
        if processes is not None and scheduler != "local":
            raise ValueError("processes is for local runs (or scheduler='local'); a running Dask cluster has its "
                             "own workers")
        return _dask_rows(runs, *_dask_client(scheduler, processes))  # connects now: errors before any run
    processes = min(processes or _default_processes(), len(runs))
    return _inline_rows(runs) if processes == 1 else _process_rows(runs, processes)


def _backend(processes: int | None, scheduler: str | None) -> str:
    if scheduler == "local":
        return f"Dask LocalCluster of {processes or _default_processes()} processes"
    if scheduler:
        return f"Dask at {scheduler}"
    processes = processes or _default_processes()
    return "this process" if processes == 1 else f"{processes} processes"


@dataclass(frozen=True)
class SweepResult:
    """The sorted table of a sweep and how it ran."""

    sweep: Sweep
    rows: tuple[dict, ...]
    backend: str
    wall_time_s: float

    def cell_summaries(self) -> list[dict]:
        """Per cell: the swept values, mean final loss/accuracy over seeds, the largest ε, diverged seeds."""
        summaries = []
        for cell, values in enumerate(self.sweep.cells):
            rows = [row for row in self.rows if row["cell"] == cell]
            summaries.append({**values, "mean_final_loss": _mean(row["final_loss"] for row in rows),
                              "mean_final_accuracy": _mean(row["final_accuracy"] for row in rows),
                              "max_epsilon": _max_epsilon(rows),
                              "diverged": sum(bool(row["diverged"]) for row in rows)})
        return summaries

    def to_dict(self) -> dict:
        sweep, summaries = self.sweep, self.cell_summaries()
        finite = [summary for summary in summaries if not summary["diverged"] and summary["mean_final_loss"]
                  is not None]
        best = min(finite, key=lambda summary: summary["mean_final_loss"]) if finite else None
        diverged = sum(bool(row["diverged"]) for row in self.rows)
        statement = (f"{len(self.rows)} runs of {sweep.algorithm} ({len(sweep.cells)} {sweep.mode} cells × "
                     f"{len(sweep.seeds)} seeds) on {self.backend} in {self.wall_time_s:.2f} s; {diverged} diverged. "
                     "Each run's epsilon is its own ledger at its delta (as fedplan simulate states it); "
                     "per cell the largest epsilon over the seeds is reported.")
        if sweep.renamed:
            statement += (" Old option names in the config: "
                          + ", ".join(f"{old} (now {name})" for old, name in sweep.renamed)
                          + "; they go in fedplan 0.3.")
        return {"algorithm": sweep.algorithm, "mode": sweep.mode, "runs": len(self.rows), "cells": len(sweep.cells),
                "seeds": list(sweep.seeds), "parameters": list(sweep.parameters), "options": sweep.options,
                "backend": self.backend, "wall_time_s": self.wall_time_s, "diverged": diverged, "best": best,
                "statement": statement}


def _mean(values) -> float | None:
    values = [value for value in values if value is not None]
    return math.fsum(values) / len(values) if values else None


def _max_epsilon(rows: list[dict]) -> float | None:
    """None (no ε) if any run spent no accounted privacy; inf stays inf."""
    values = [row["epsilon"] for row in rows]
    return None if any(value is None for value in values) else max(values)


def run_sweep(*, sweep: Sweep, processes: int | None = None, scheduler: str | None = None,
              progress: Callable[[int, int], None] | None = None,
              on_row: Callable[[dict], None] | None = None) -> SweepResult:
    """Run every (cell, seed) of ``sweep`` (see :func:`iter_rows`) and return the table sorted by run.

    ``progress(done, total)`` is called after each run, ``on_row(row)`` with each row as it completes.
    """
    start = time.perf_counter()
    rows, pending = [], iter_rows(sweep=sweep, processes=processes, scheduler=scheduler)  # checks its arguments
    if progress is not None:
        progress(0, sweep.size)
    for row in pending:
        rows.append(row)
        if on_row is not None:
            on_row(row)
        if progress is not None:
            progress(len(rows), sweep.size)
    return SweepResult(sweep=sweep, rows=tuple(sorted(rows, key=lambda row: row["run"])),
                       backend=_backend(processes, scheduler),
                       wall_time_s=time.perf_counter() - start)


def _csv_value(value):
    return json.dumps(value) if isinstance(value, list) else value


def table_format(path: str | os.PathLike) -> str:
    """``"parquet"`` or ``"csv"`` from the file name, or a ValueError."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise ValueError(f"out must end in .parquet or .csv; got {str(path)!r}")
    return suffix[1:]


def write_table(*, rows, path: str | os.PathLike, columns, metadata: Mapping | None = None) -> Path:
    """Write rows as Parquet (``.parquet``, with ``metadata`` as JSON under the key ``fedplan``) or CSV.

    CSV cells: empty for None, JSON for list values.
    """
    path = Path(path)
    if table_format(path) == "parquet":
        pa = optional_import("pyarrow", purpose="a Parquet table")
        pq = optional_import("pyarrow.parquet", purpose="a Parquet table")

        table = pa.Table.from_pylist([{name: row.get(name) for name in columns} for row in rows])
        table = table.replace_schema_metadata({"fedplan": json.dumps(dict(metadata or {}), default=str)})
        pq.write_table(table, path)
        return path
    with CsvStream(path=path, columns=columns) as stream:
        for row in rows:
            stream(row)
    return path


class CsvStream:
    """Rows written to a CSV file one at a time and flushed, so an interrupted sweep keeps its finished runs."""

    def __init__(self, *, path: str | os.PathLike, columns):
        self.path, self.columns, self.rows = Path(path), tuple(columns), 0
        self.handle = self.path.open("w", newline="")
        self.writer = csv.DictWriter(self.handle, fieldnames=self.columns)
        self.writer.writeheader()

    def __call__(self, row: Mapping) -> None:
        self.writer.writerow({name: _csv_value(row.get(name)) for name in self.columns})
        self.handle.flush()
        self.rows += 1

    def __enter__(self) -> CsvStream:
        return self

    def __exit__(self, failed, *exc) -> None:
        self.handle.close()
        if failed is not None and not self.rows:  # a sweep refused before its first run leaves no file behind
            self.path.unlink()
