"""Parameter sweeps: a grid or a random sample of a simulation's options × seeds, in one tidy table.

A sweep names an algorithm (a ``fedplan simulate`` request), its fixed options, the swept parameters and the
seeds. Every (cell, seed) pair is one run of that request, ``dataclasses.replace(request, seed=seed)`` of the
cell's request (so ``fedplan simulate <algorithm> --<option> … --seed s`` reproduces a row), and gives one flat
row: the swept values, the seed, and the headline numbers of the
:class:`~planner.simulate.records.SimulationResult` (final loss/accuracy, rounds, ε of the run's own ledger…).

Runs execute in local processes (``concurrent.futures``, the default), in this process (``processes=1``), on a
new local Dask cluster (``scheduler="local"``) or on a running one (``scheduler="tcp://HOST:PORT"``). Runs are
grouped by data set (the seed and the request's data fields): a process works through one group at a time and
builds its data set and client split once, shared by the group's runs. The calling process works too, helper
processes start only when the work left is worth their start-up and only onto cores other programs leave idle (the
result says when fewer processes ran than were asked), and small runs travel in batches, so more processes are never
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
import functools
import importlib
import itertools
import json
import math
import multiprocessing
import os
import re
import sys
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from queue import SimpleQueue

import numpy as np

from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.extras import optional_import
from fedplan.planner.limits import check_runs, check_seconds, parse_structured, read_text
from fedplan.planner.tasks.base import Option, Request, options
from fedplan.planner.tasks.simulate import (
    ClientData,
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
#: Modules the helper processes import once, in the fork server they are forked from (data, models, the engines).
PRELOAD = (__name__, "fedplan.planner.simulate.problem")
#: How long a Dask client waits for the scheduler before the sweep reports it unreachable.
CONNECT_TIMEOUT = "10s"
#: Seconds of work one task of a pool or a cluster should carry (small runs are batched up to this).
TASK_SECONDS = 0.2
#: Batches queued per process, so that none waits for the next while another is being handed out.
BATCHES_PER_PROCESS = 2
#: Seconds the first start of helper processes in a process takes: the fork server imports numpy, scipy and the
#: engines (1.5 to 2 s of CPU measured here) ...
START_COLD_SECONDS = 2.0
#: ... and a later start, a fork of the running server (0.015 s measured here).
START_WARM_SECONDS = 0.05
#: Helpers start only when the work left, at the fastest pace measured in this process, exceeds this many times
#: their start-up (they help once it is more than once).
START_MARGIN = 1.25
#: A helper needs a CPU core that other programs left idle at least this share of the time (measured while this
#: process runs runs, over at least IDLE_WINDOW_SECONDS): on a busy machine more processes only share the same cores.
IDLE_SHARE = 0.8
IDLE_WINDOW_SECONDS = 0.1
#: Data sets and client splits one process (or one Dask task) keeps at most for the runs of one group.
SHARED_ENTRIES = 4
#: The functions that build a run's data set and its split over clients, by the module whose requests call them.
#: Importing this module routes them through the calling thread's :class:`_SharedData` (while a sweep's run
#: executes; otherwise they build as before), so that the runs of a process share what equal arguments build.
SHARED_BUILDERS = {"fedplan.planner.tasks.simulate": ("load_dataset", "make_problem"),
                   "fedplan.planner.tasks.simulate_papers": ("load_dataset",),
                   "fedplan.planner.simulate.presets": ("load_dataset", "make_problem")}
#: Request fields that, with the seed, shape a run's data set and client split: runs that agree on them are
#: handed out together, so that one process builds their data once (:class:`_Groups`).
DATA_FIELDS = tuple(item.name for item in dataclasses.fields(ClientData))

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
    """Read and validate a YAML sweep config file, or a JSON one (by its ``.json`` suffix)."""
    import yaml

    text, name = read_text("config", path), Path(path).name
    if Path(path).suffix.lower() == ".json":  # json reads 12 MB in 0.4 s, PyYAML about 0.13 MiB/s
        return parse_sweep(config=parse_structured("config", name, text, "json"))
    return parse_sweep(config=parse_structured("config", name, text, "yaml", loader=_exponent_float_loader(yaml),
                                               shorter=", or its parameters as grid or random axes rather than one "
                                               "entry per cell"))


def execute_batch(runs: list[Run]) -> tuple[list[dict], dict[str, int]]:
    """The rows of several runs, executed one after the other (one task of a helper process or a Dask cluster), and
    what they built, by builder (see :class:`_SharedData`).

    A helper process shares its data between all its batches (one cache for its life, which is one sweep); a Dask
    task shares them between its own runs only (a running cluster keeps nothing after the task).
    """
    data = getattr(_ACTIVE, "data", None) or _SharedData()
    before = data.built.copy()
    with data.active(_data_key(runs[0]) if runs else None):
        rows = [execute(run) for run in runs]
    return rows, dict(data.built - before)


class _SharedData:
    """Data sets and client splits built once and shared by the runs of one process (or of one Dask task).

    While it is active on a thread, a call of one of the :data:`SHARED_BUILDERS` with the arguments of an earlier
    call (a data set argument by identity: the shared one the earlier call returned) returns the earlier result.
    The builders are seeded, so a shared result equals a new one, and its arrays are made read-only, so a run that
    would write into them fails instead of changing the data of the runs after it. Runs come grouped by data set
    (:class:`_Groups`), and the results of a group are dropped when a run of another group starts, so a process holds
    one data set at a time, as one run does (and at most :data:`SHARED_ENTRIES` results, the least recently used
    dropped first). ``built`` counts the calls that built, by builder name.
    """

    def __init__(self) -> None:
        self.entries: OrderedDict = OrderedDict()
        self.built: Counter = Counter()
        self.group: tuple | None = None

    def get(self, builder: Callable, args: tuple, kwargs: dict):
        key = (builder, args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:  # an unhashable argument (a list): built for this call alone
            key = None
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        value = _read_only(builder(*args, **kwargs))
        self.built[builder.__name__] += 1
        if key is not None:
            self.entries[key] = value
            if len(self.entries) > SHARED_ENTRIES:
                self.entries.popitem(last=False)
        return value

    @contextmanager
    def active(self, group: tuple | None = None) -> Iterator[None]:
        """The shared builders called on this thread go through this cache until the block ends (for runs of
        ``group``, :func:`_data_key`: what another group's runs built is dropped first)."""
        if group is not None and group != self.group:
            self.entries.clear()
            self.group = group
        previous = getattr(_ACTIVE, "data", None)
        _ACTIVE.data = self
        try:
            yield
        finally:
            _ACTIVE.data = previous


#: The :class:`_SharedData` active on each thread (none: the builders build every time).
_ACTIVE = threading.local()


def _read_only(value):
    """``value``, with every array it holds (in dataclass fields, tuples and lists, recursively) made read-only."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, tuple | list):
        for item in value:
            _read_only(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _read_only(getattr(value, item.name))
    return value


def _shared(builder: Callable) -> Callable:
    """``builder``, going through the thread's active :class:`_SharedData` if there is one."""
    @functools.wraps(builder)
    def shared(*args, **kwargs):
        data = getattr(_ACTIVE, "data", None)
        return builder(*args, **kwargs) if data is None else data.get(builder, args, kwargs)

    shared.shares_data = True
    return shared


def _share_builders() -> None:
    """Route the :data:`SHARED_BUILDERS` through :func:`_shared` (once per process: on importing this module)."""
    for module_name, names in SHARED_BUILDERS.items():
        module = importlib.import_module(module_name)
        for name in names:
            if not getattr(getattr(module, name), "shares_data", False):
                setattr(module, name, _shared(getattr(module, name)))


_share_builders()


#: Modules this process's runs imported on first use (scikit-learn for a LIBSVM file, …), beyond the fork server's.
_RUN_MODULES: set[str] = set()


def _helper_starts(modules: list[str]) -> None:
    """A helper process's initializer: it imports ``modules`` (:data:`_RUN_MODULES`) before it takes work, and all
    its runs share one :class:`_SharedData`."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - importing ahead is an optimisation: a run imports what it needs anyway
            continue
    _ACTIVE.data = _SharedData()


class _Pace:
    """How fast runs go here, and from it how many runs one task should carry and how long the runs left take.

    A task of a pool or a cluster costs a round trip (pickling, scheduling, a result message: milliseconds);
    small runs are batched so that a task carries about ``TASK_SECONDS`` of work (at the mean time of a run), and no
    more than a share of what is left, so that every process still gets work to the end. The work of a run is its
    request's :func:`~planner.tasks.simulate.estimated_seconds` (updates × features, as the time limit counts them;
    1 for every run if one has none), so the first runs of a sweep of short and long ones stand for their own kind.
    """

    def __init__(self, runs: list[Run]) -> None:
        work = {run.index: estimated_seconds(run.request) for run in runs}
        self.work = work if all(work.values()) else dict.fromkeys(work, 1.0)
        self.total_work = self.work_left = math.fsum(self.work.values())
        self.seconds, self.runs, self.fastest = 0.0, 0, math.inf  # fastest: seconds per unit of work

    def timed(self, run: Run, data: _SharedData) -> dict:
        """The row of ``run``, executed here with ``data`` shared."""
        start = time.perf_counter()
        with data.active(_data_key(run)):
            row = execute(run)
        seconds = time.perf_counter() - start
        self.seconds, self.runs = self.seconds + seconds, self.runs + 1
        self.fastest, self.work_left = min(self.fastest, seconds / self.work[run.index]), \
            self.work_left - self.work[run.index]
        return row

    def seconds_for(self, work: float) -> float:
        """The time ``work`` takes at least: at the fastest pace so far (a run slowed down by another program on a
        busy machine, or by a first call's set-up, does not make the work look longer; none timed yet: 0)."""
        return work * self.fastest if self.runs else 0.0

    def batch_size(self, left: int, processes: int) -> int:
        if not self.runs:
            return 1
        per_run = max(self.seconds / self.runs, 1e-6)
        share = math.ceil(left / (BATCHES_PER_PROCESS * processes))
        return max(1, min(share, round(TASK_SECONDS / per_run)))


def _data_key(run: Run) -> tuple:
    """What a run's data set and client split depend on: its seed and the request's :data:`DATA_FIELDS`."""
    return (run.seed, *(getattr(run.request, name, None) for name in DATA_FIELDS))


class _Groups:
    """The runs not yet handed out, grouped by data set (:func:`_data_key`), in the order of their first run.

    A taker (this process, a helper, a cluster) works through one group at a time: its own, from the front, until it
    is empty, then a group no one has started, and once every group is started, the back of the largest one left.
    So a data set is built by one process, and by a second only when the two share its last runs.
    """

    def __init__(self, runs: list[Run]) -> None:
        self.left: dict[tuple, deque[Run]] = {}
        for run in runs:
            self.left.setdefault(_data_key(run), deque()).append(run)
        self.fresh = deque(self.left)  # groups no one has started, in order
        self.current: dict = {}  # taker → (its group, whether it takes from the back)
        self.size = len(runs)

    def __len__(self) -> int:
        return self.size

    def take(self, taker, count: int) -> list[Run]:
        """Up to ``count`` runs of one group for ``taker`` (any hashable name); at least one while any are left."""
        key, from_back = self.current.get(taker, (None, False))
        if key not in self.left:
            from_back = not self.fresh
            key = max(self.left, key=lambda name: len(self.left[name])) if from_back else self.fresh.popleft()
            self.current[taker] = key, from_back
        queue = self.left[key]
        runs = [queue.pop() if from_back else queue.popleft() for _ in range(min(count, len(queue)))]
        if not queue:
            del self.left[key]
        self.size -= len(runs)
        return runs


class _Helpers:
    """Helper processes, started on a thread while this process runs runs, handed over as they come up.

    Each is a pool of one process, so that the runs of a group go to the process that holds its data set. The first
    start in a process also starts the fork server, which imports numpy, scipy and the engines once (about
    :data:`START_COLD_SECONDS`); later helpers are forks of it (about :data:`START_WARM_SECONDS`). A helper is handed
    over once it has imported what this process's runs imported on first use (``imports``).
    """

    def __init__(self, count: int, modules: list[str], imports: list[str]) -> None:
        self.count = count
        self.ready: SimpleQueue = SimpleQueue()  # started pools, or the error that stopped the start
        self.lock, self.closed = threading.Lock(), False
        # not a daemon: a start still under way when the sweep ends finishes (and shuts its helper down) before this
        # process exits, instead of leaving the fork server a child whose parent is gone
        threading.Thread(target=self._start, args=(count, modules, imports), name="fedplan-sweep-start").start()

    def _start(self, count: int, modules: list[str], imports: list[str]) -> None:
        global _fork_server_up
        # forkserver: safe when the caller has threads (a Dask client, a web app, this class's own thread)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(modules)
        for _ in range(count):
            pool = ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_helper_starts,
                                       initargs=(imports,))
            try:
                pool.submit(execute_batch, []).result()
            except BaseException as error:  # noqa: BLE001 - handed to the sweep's thread, which raises it
                pool.shutdown(wait=False, cancel_futures=True)
                self.ready.put(error)
                return
            _fork_server_up = True
            with self.lock:
                if self.closed:
                    pool.shutdown(wait=False)
                    return
                self.ready.put(pool)

    def started(self) -> list[ProcessPoolExecutor]:
        """The helpers that came up since the last call (raises the error of a failed start)."""
        pools = []
        while not self.ready.empty():
            item = self.ready.get()
            if isinstance(item, BaseException):
                raise item
            pools.append(item)
        return pools

    def close(self) -> None:
        """Shut down helpers not handed over yet; those still starting shut themselves down."""
        with self.lock:
            self.closed = True
        while not self.ready.empty():
            item = self.ready.get()
            if isinstance(item, ProcessPoolExecutor):
                item.shutdown(wait=False, cancel_futures=True)


#: Whether this process has started helpers before (its fork server is up, so a start is a fork).
_fork_server_up = False


def _start_seconds() -> float:
    return START_WARM_SECONDS if _fork_server_up else START_COLD_SECONDS


def _cpu_jiffies() -> tuple[int, int] | None:
    """(idle, all) time of the machine's CPUs since boot, in jiffies (Linux ``/proc/stat``), or None elsewhere."""
    try:
        with open("/proc/stat") as handle:
            user, nice, system, idle, iowait, irq, softirq, steal = map(int, handle.readline().split()[1:9])
    except (OSError, ValueError):
        return None
    return idle + iowait, user + nice + system + idle + iowait + irq + softirq + steal


class _IdleCores:
    """The CPU cores other programs (and this process) leave idle, measured from the sweep's start."""

    def __init__(self) -> None:
        self.cores, self.since, self.start = _default_processes(), time.perf_counter(), _cpu_jiffies()

    def now(self) -> float | None:
        """Idle cores since the start; None until IDLE_WINDOW_SECONDS have passed (or if ``/proc/stat`` went
        away); every core where it cannot be measured."""
        if self.start is None:
            return float(self.cores)
        now = _cpu_jiffies()
        if now is None or time.perf_counter() - self.since < IDLE_WINDOW_SECONDS:
            return None
        idle, total = (later - then for later, then in zip(now, self.start, strict=True))
        return self.cores * idle / total if total else None


class _Local:
    """Runs in this process and, when the work left is worth their start-up, in up to ``processes - 1`` helpers.

    This process runs runs itself from the start. Helpers are started once the work left, at the pace measured here,
    exceeds :data:`START_MARGIN` times their start-up, one per core left idle while this process runs (see
    :data:`IDLE_SHARE`): a short sweep or a busy machine never pays their start-up, and :attr:`note` says so. Each
    helper then takes batches of one group at a time (:class:`_Groups`) while this process goes on with its own. So
    more processes are never slower than fewer (``benchmarks/sweep.py`` measures it), and each process builds a data
    set once.
    """

    def __init__(self, runs: list[Run], processes: int) -> None:
        self.runs, self.processes = runs, processes
        self.built: Counter = Counter()
        self.used, self.note = 1, ""

    def rows(self) -> Iterator[dict]:
        groups, pace, data = _Groups(self.runs), _Pace(self.runs), _SharedData()
        cores, known = _IdleCores(), set(sys.modules)
        helpers, idle = None, None  # idle: the idle cores measured when the work left was found worth helpers
        pools, used, pending, busy = [], set(), {}, Counter()  # pending: future → its pool; busy: pool → its batches
        try:
            while groups or pending:
                if idle is None and self.processes > 1 \
                        and pace.seconds_for(pace.work_left) > START_MARGIN * _start_seconds():
                    idle = cores.now()
                    wanted = 0 if idle is None else min(self.processes - 1, int(idle / IDLE_SHARE))
                    if wanted:
                        _RUN_MODULES.update(set(sys.modules) - known)
                        helpers = _Helpers(wanted, sorted({*PRELOAD, *(type(run.request).__module__
                                                                      for run in self.runs)}), sorted(_RUN_MODULES))
                if helpers is not None:
                    pools += helpers.started()
                for pool in pools:
                    while groups and busy[pool] < BATCHES_PER_PROCESS:
                        batch = groups.take(pool, pace.batch_size(len(groups), self.processes))
                        pending[pool.submit(execute_batch, batch)] = pool
                        busy[pool] += 1
                for future in [future for future in pending if future.done()]:
                    pool = pending.pop(future)
                    busy[pool] -= 1
                    rows, built = future.result()
                    self.built.update(built)
                    used.add(pool)
                    yield from rows
                if groups:
                    yield pace.timed(groups.take(self, 1)[0], data)
                elif pending:
                    wait(pending, return_when=FIRST_COMPLETED)
        finally:
            self.built.update(data.built)
            self.used = 1 + len(used)
            if helpers is not None:
                helpers.close()
            for pool in pools:
                pool.shutdown(wait=False, cancel_futures=True)
        self.note = self._note(pace, idle, 0 if helpers is None else helpers.count)

    def _note(self, pace: _Pace, idle: float | None, started: int) -> str:
        """Why fewer processes ran runs than were asked ("" if none)."""
        if self.used == self.processes:
            return ""
        ran = "this process alone" if self.used == 1 else f"{self.used} of {self.processes} processes"
        if idle is None:
            return (f"ran in {ran}: its {len(self.runs)} runs take at least {pace.seconds_for(pace.total_work):.2f} s "
                    f"(at the pace of its fastest), less than {START_MARGIN:g} × the {_start_seconds():g} s helper "
                    "processes take to start")
        if started < self.processes - 1:
            return (f"ran in {ran}: other programs left {idle:.1f} of the machine's {_default_processes()} cores idle, "
                    "and more processes only share the same cores")
        return f"ran in {ran}: the others were not up before the last run was handed out"


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


class _Dask:
    """Runs on a Dask cluster: the first here (it times a run), the rest in batches (see :class:`_Pace`) of one data
    set each (:class:`_Groups`), so a batch builds its data set once."""

    def __init__(self, runs: list[Run], scheduler: str, processes: int | None) -> None:
        self.runs = runs
        self.client, self.cluster = _dask_client(scheduler, processes)  # connects now: errors before any run
        self.built: Counter = Counter()
        self.used, self.note = None, ""

    def rows(self) -> Iterator[dict]:
        distributed = optional_import("distributed", purpose="a sweep on a Dask cluster")
        data = _SharedData()
        try:
            groups, pace = _Groups(self.runs), _Pace(self.runs)
            yield pace.timed(groups.take(self, 1)[0], data)
            workers = max(1, len(self.client.scheduler_info()["workers"]))
            batches = []
            while groups:
                batches.append(groups.take(self, pace.batch_size(len(groups), workers)))
            for future in distributed.as_completed(self.client.map(execute_batch, batches, pure=False)):
                rows, built = future.result()
                self.built.update(built)
                yield from rows
        finally:
            self.built.update(data.built)
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()


def _default_processes() -> int:
    return os.cpu_count() or 1


def _execution(sweep: Sweep, processes: int | None, scheduler: str | None) -> _Local | _Dask:
    """The backend that runs ``sweep`` (see :func:`iter_rows`), its arguments checked (and a cluster reached)."""
    runs = sweep.runs()
    if processes is not None:
        processes = check_int("processes", processes, low=1)
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler:
            raise ValueError(f"scheduler must be 'local' or an address such as tcp://HOST:PORT; got {scheduler!r}")
        if processes is not None and scheduler != "local":
            raise ValueError("processes is for local runs (or scheduler='local'); a running Dask cluster has its "
                             "own workers")
        return _Dask(runs, scheduler, processes)
    return _Local(runs, min(processes or _default_processes(), len(runs)))


def iter_rows(*, sweep: Sweep, processes: int | None = None, scheduler: str | None = None) -> Iterator[dict]:
    """The rows of ``sweep`` in completion order.

    ``scheduler`` is the address of a Dask scheduler (e.g. ``"tcp://10.0.0.5:8786"``; its workers need fedplan
    installed), or ``"local"`` for a new ``distributed.LocalCluster`` of ``processes`` workers; otherwise
    ``processes`` local processes (default: the CPU count), or this process alone if 1.
    """
    return _execution(sweep, processes, scheduler).rows()


def _backend(processes: int | None, scheduler: str | None) -> str:
    if scheduler == "local":
        return f"Dask LocalCluster of {processes or _default_processes()} processes"
    if scheduler:
        return f"Dask at {scheduler}"
    processes = processes or _default_processes()
    return "this process" if processes == 1 else f"{processes} processes"


@dataclass(frozen=True)
class SweepResult:
    """The sorted table of a sweep and how it ran: the backend asked for, the local processes that ran runs (None on
    Dask), what the runs built (by builder: ``load_dataset``, ``make_problem``) and a note when fewer processes ran
    than were asked."""

    sweep: Sweep
    rows: tuple[dict, ...]
    backend: str
    wall_time_s: float
    processes_used: int | None = None
    built: dict = field(default_factory=dict)
    note: str = ""

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
                     + (f"It {self.note}. " if self.note else "")
                     + ("Each process built a data set once and shared it with its runs ("
                        + ", ".join(f"{name} {count}×" for name, count in sorted(self.built.items())) + "). "
                        if self.built else "")
                     + "Each run's epsilon is its own ledger at its delta (as fedplan simulate states it); "
                     "per cell the largest epsilon over the seeds is reported.")
        if sweep.renamed:
            statement += (" Old option names in the config: "
                          + ", ".join(f"{old} (now {name})" for old, name in sweep.renamed)
                          + "; they go in fedplan 0.3.")
        return {"algorithm": sweep.algorithm, "mode": sweep.mode, "runs": len(self.rows), "cells": len(sweep.cells),
                "seeds": list(sweep.seeds), "parameters": list(sweep.parameters), "options": sweep.options,
                "backend": self.backend, "processes_used": self.processes_used, "wall_time_s": self.wall_time_s,
                "built": dict(self.built), "diverged": diverged, "best": best, "statement": statement}


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
    rows, execution = [], _execution(sweep, processes, scheduler)  # checks its arguments
    if progress is not None:
        progress(0, sweep.size)
    for row in execution.rows():
        rows.append(row)
        if on_row is not None:
            on_row(row)
        if progress is not None:
            progress(len(rows), sweep.size)
    return SweepResult(sweep=sweep, rows=tuple(sorted(rows, key=lambda row: row["run"])),
                       backend=_backend(processes, scheduler), wall_time_s=time.perf_counter() - start,
                       processes_used=execution.used, built=dict(execution.built), note=execution.note)


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
