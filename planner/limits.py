"""Size and memory limits, decided before any work starts.

A request estimates what it will allocate (a data set of ``n_samples × n_features`` floats, a schedule of
``iterations`` rows, a sweep of ``cells × seeds`` runs) from its inputs and compares the estimate with the
limits below *at construction*, so a too-large input is refused in a fraction of a second with a message that
names the parameter, its value, the estimate and the limit, instead of a ``MemoryError`` (or a machine that
swaps) minutes later. Every limit has a default that fits a laptop and can be raised by a user who needs more:

=================  =========  =========================================  ==========================
limit              default    what it bounds                              raise it with
=================  =========  =========================================  ==========================
``memory``         2 GiB      arrays one request allocates                ``--max-memory``, ``FEDPLAN_MAX_MEMORY``
``file_size``      64 MiB     one input file (schedule, LIBSVM, sweep)    ``--max-file-size``, ``FEDPLAN_MAX_FILE_SIZE``
``runs``           10 000     runs of one sweep (cells × seeds)           ``--max-runs``, ``FEDPLAN_MAX_RUNS``
``seconds``        3 600      estimated time of one simulation            ``--max-seconds``, ``FEDPLAN_MAX_SECONDS``
``segments``       2 000      distinct (q, σ) pairs of one schedule       ``--max-segments``, ``FEDPLAN_MAX_SEGMENTS``
=================  =========  =========================================  ==========================

A simulation's time is estimated from the client updates it will compute (rounds × updates per round × seeds)
and a per-update cost measured on the FedBuff engine (:data:`UPDATE_SECONDS`), taken pessimistically; a long run
that fits shows a progress bar with the time left.

The command line sets them per command (:func:`using`); the API and the app use the defaults or the
environment variables.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40
_UNITS = {"": 1, "b": 1, "k": KIB, "kb": KIB, "kib": KIB, "m": MIB, "mb": MIB, "mib": MIB, "g": GIB, "gb": GIB,
          "gib": GIB, "t": TIB, "tb": TIB, "tib": TIB}
#: Bytes one run of a sweep holds until the sweep ends (its request, its parameters and its row of results).
RUN_BYTES = 16 * KIB
#: Bytes of one float64 entry.
FLOAT_BYTES = 8


class LimitError(ValueError):
    """A request whose inputs would exceed a size or memory limit (a ``ValueError``: the CLI exits with 2)."""


def parse_size(name: str, text: str | int | float) -> int:
    """Bytes from ``"2GiB"``, ``"512M"``, ``"100000"`` or a number; a ``ValueError`` names ``name`` otherwise."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        number, unit = float(text), ""
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
        if match is None or match.group(2).lower() not in _UNITS:
            raise ValueError(f"{name} must be a size such as 512MiB, 2GiB or 1000000 (bytes); got {text!r}")
        number, unit = float(match.group(1)), match.group(2).lower()
    size = number * _UNITS[unit]
    if not math.isfinite(size) or size < 1 or size > 2**62:
        raise ValueError(f"{name} must be a size between 1 byte and 4 EiB; got {text!r}")
    return int(size)


def size_text(size: float) -> str:
    """``2147483648`` -> ``2 GiB``; sizes are shown with three significant digits."""
    for unit, scale in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} bytes"


@dataclass(frozen=True)
class Limits:
    """The limits in force (see the module docstring for defaults and how to raise each)."""

    memory: int = 2 * GIB
    file_size: int = 64 * MIB
    runs: int = 10_000
    seconds: int = 3_600
    segments: int = 2_000

    @classmethod
    def from_environment(cls) -> Limits:
        """The defaults, each replaced by its ``FEDPLAN_MAX_*`` environment variable when set."""
        values = {}
        for item in dataclasses.fields(cls):
            variable = ENVIRONMENT[item.name]
            if os.environ.get(variable):
                text = os.environ[variable]
                values[item.name] = parse_size(variable, text) if item.name in ("memory", "file_size") else \
                    parse_count(variable, text)
        return cls(**values)


def parse_count(name: str, text: str) -> int:
    """A whole number of runs from text (``1e5`` accepted)."""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 1 or number != int(number) or number > 10**15:
        raise ValueError(f"{name} must be a whole number in [1, 1e15]; got {text!r}")
    return int(number)


#: The environment variable of each limit.
ENVIRONMENT = {"memory": "FEDPLAN_MAX_MEMORY", "file_size": "FEDPLAN_MAX_FILE_SIZE", "runs": "FEDPLAN_MAX_RUNS",
               "seconds": "FEDPLAN_MAX_SECONDS", "segments": "FEDPLAN_MAX_SEGMENTS"}
#: The command-line option of each limit.
OPTIONS = {"memory": "--max-memory", "file_size": "--max-file-size", "runs": "--max-runs",
           "seconds": "--max-seconds", "segments": "--max-segments"}

_current: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("fedplan_limits", default=None)


def current() -> Limits:
    """The limits in force: those of the innermost :func:`using`, else the environment's, else the defaults."""
    return _current.get() or Limits.from_environment()


@contextlib.contextmanager
def using(**changes: int) -> Iterator[Limits]:
    """Run a block with some limits changed (``using(memory=8 * GIB)``)."""
    token = _current.set(dataclasses.replace(current(), **changes))
    try:
        yield _current.get()
    finally:
        _current.reset(token)


def _raise_with(limit: str) -> str:
    return f"raise it with {OPTIONS[limit]} or {ENVIRONMENT[limit]}"


def check_memory(what: str, estimate: float, *, because: str) -> None:
    """Refuse work that would allocate more than the memory limit.

    ``what`` says what would be allocated (``"the data set"``), ``estimate`` its bytes, ``because`` the inputs
    that make it so (``"n_samples=1e+09 × n_features=20"``): they lead the message.
    """
    limit = current().memory
    if not estimate <= limit:  # also refuses a NaN estimate
        raise LimitError(f"{because} would need about {size_text(estimate)} of memory for {what}; the limit is "
                         f"{size_text(limit)} ({_raise_with('memory')})")


#: Seconds per simulated client update: a fixed part and a part per feature, pessimistic (FedBuff here: 39 k
#: updates/s with its bookkeeping at 20 features, the benchmark's 12 k/s at 1 000; both about halved).
UPDATE_SECONDS, UPDATE_SECONDS_PER_FEATURE = 4e-5, 2e-7


def update_seconds(updates: float, n_features: int) -> float:
    """The estimated time of ``updates`` client updates on ``n_features`` features."""
    return updates * (UPDATE_SECONDS + UPDATE_SECONDS_PER_FEATURE * n_features)


def check_time(updates: float, n_features: int, *, because: str) -> None:
    """Refuse a simulation whose ``updates`` client updates on ``n_features`` features would take longer than the
    time limit (estimated before it starts)."""
    check_seconds(update_seconds(updates, n_features), because=f"{because} is about {updates:.3g} client updates")


def check_seconds(seconds: float, *, because: str) -> None:
    """Refuse work estimated at ``seconds`` beyond the time limit; ``because`` names the inputs that make it so."""
    limit = current().seconds
    if not seconds <= limit:
        raise LimitError(f"{because}, an estimated {_duration(seconds)}; the time limit is {_duration(limit)} "
                         f"({_raise_with('seconds')})")


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.3g} h" if seconds >= 3600 else f"{seconds:.3g} s"


def check_segments(name: str, segments) -> None:
    """Refuse a schedule with more distinct (sample_rate, noise_multiplier) pairs than the limit: identical segments
    are composed as one, but each distinct pair costs its own RDP terms and PLD (about 2.5 ms and 15 ms)."""
    distinct, limit = len({(segment[0], segment[1]) for segment in segments}), current().segments
    if distinct > limit:
        raise LimitError(f"{name} has {distinct} distinct (sample_rate, noise_multiplier) pairs; the limit is {limit} "
                         f"({_raise_with('segments')})")


def check_runs(name: str, runs: int, *, because: str) -> None:
    """Refuse a sweep of more runs than the limit (``name`` is the file or option that asked for them)."""
    limit = current().runs
    if runs > limit:
        raise LimitError(f"{name}: {because} is {runs:.4g} runs; the limit is {limit} ({_raise_with('runs')})")
    check_memory("the sweep's requests and rows", RUN_BYTES * runs, because=f"{name}: {because} ({runs:.4g} runs)")


def check_file(name: str, path: str | os.PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path` if it names a readable file within the size limit.

    ``name`` is the parameter that gave the path (``schedule``, ``dataset``), so that every message names it.
    """
    file = Path(path)
    if file.is_dir():
        raise ValueError(f"{name} must name a file; {str(path)!r} is a folder")
    if not file.is_file():
        raise ValueError(f"{name} must name an existing file; {str(path)!r} does not exist")
    size, limit = file.stat().st_size, current().file_size
    if size > limit:
        raise LimitError(f"{name} file {file.name!r} is {size_text(size)}; the limit is {size_text(limit)} "
                         f"({_raise_with('file_size')})")
    return file


def read_text(name: str, path: str | os.PathLike) -> str:
    """The UTF-8 text of a file within the size limit; a binary or mis-encoded file is refused by name."""
    file = check_file(name, path)
    data = file.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ValueError(f"{name} file {file.name!r} is not UTF-8 text (byte {error.start}, line {line}): give "
                         f"a text file") from None


#: Largest YAML text read. PyYAML reads about 0.13 MiB/s (0.4 MiB/s with libyaml: objects are still built in
#: Python), so a 12 MB file ran past the fuzzer's 45 s cap; fedplan's YAML (sweep configs, change-point schedules)
#: takes a few KiB. JSON has only the file-size limit: ``json`` reads 12 MB in 0.4 s.
MAX_YAML_BYTES = 512 * KIB


def parse_structured(name: str, file_name: str, text: str, fmt: str, *, loader=None, shorter: str = ""):
    """The data of a JSON or YAML text (``fmt`` ``json`` or ``yaml``); malformed or too deeply nested text, or YAML
    above :data:`MAX_YAML_BYTES`, is a ``ValueError`` naming the parameter and the file (a ``RecursionError`` never
    reaches the user); ``shorter`` says how to write a shorter YAML file instead, where there is a way."""
    import json

    import yaml

    size = len(text.encode("utf-8")) if fmt == "yaml" else 0
    if size > MAX_YAML_BYTES:
        raise LimitError(f"{name} file {file_name!r} is {size_text(size)} of YAML; the limit is "
                         f"{size_text(MAX_YAML_BYTES)} (reading YAML takes about 8 s per MiB): give it as JSON (a "
                         f".json file){shorter}")
    try:
        if fmt == "json":
            return json.loads(text)
        return yaml.load(text, Loader=loader or yaml.SafeLoader)  # noqa: S506 - SafeLoader or a subclass of it
    except json.JSONDecodeError as error:
        raise ValueError(f"{name} file {file_name!r} is not valid JSON: {error.msg} (line {error.lineno})") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{name} file {file_name!r} is not valid YAML: {' '.join(str(error).split())}") from None
    except RecursionError:
        raise ValueError(f"{name} file {file_name!r} is nested too deeply to read ({fmt.upper()} lists or maps "
                         "inside each other more than a few hundred levels)") from None


def csv_rows(name: str, file_name: str, lines) -> tuple[list[str], list[dict]]:
    """The rows of a CSV text with a header (``csv.DictReader``), with the field size bounded by the file-size
    limit instead of the csv module's 128 KiB, and a malformed file reported by parameter and file name."""
    import csv

    csv.field_size_limit(max(current().file_size, 2**17))
    try:
        reader = csv.DictReader(lines)
        rows = list(reader)
    except csv.Error as error:
        raise ValueError(f"{name} file {file_name!r} is not a readable CSV: {error}") from None
    return reader.fieldnames or [], rows
