"""Read accounting schedules from files: plain lists of segments, or fedplan's own exports.

A segment is ``sample_rate, noise_multiplier, steps``: that many consecutive steps with that
sample rate and noise multiplier.

* CSV: a header row naming the three columns (any order), then one row per segment.
* JSON: a list of objects with those keys, or an object with such a list under ``"segments"``.
* A fedplan export (JSON, YAML, or CSV by change-points or by round, :mod:`planner.export`): its phases are the
  segments, and its privacy block names the sampling, neighbouring relation, N and δ it was accounted for
  (:func:`read_schedule`).

Errors name the file (and the row) and are raised as ``ValueError`` so the CLI reports them
on one line.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from fedplan.bounds.accounting import Segment, make_schedule
from fedplan.planner.export import is_fedplan_export, load_schedule_file

COLUMNS = ("sample_rate", "noise_multiplier", "steps")


def read_schedule(path: str | Path) -> tuple[tuple[Segment, ...], dict | None]:
    """Validated segments from a file, and the privacy block of a fedplan export (None for a plain list)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"schedule file {str(path)!r} " + ("is a folder" if path.is_dir() else "does not exist"))
    if is_fedplan_export(path):
        schedule = load_schedule_file(path)
        if schedule.privacy is None:
            raise ValueError(f"{path.name} is a fedplan export without a privacy block (an older export, or a plan "
                             "whose mechanism fedplan does not account): give its segments instead")
        if not schedule.is_gaussian:
            return (), schedule.privacy  # a Laplace plan: its privacy block holds the releases to compose
        try:
            segments = make_schedule(schedule.segments())
        except ValueError as error:
            raise ValueError(f"{path.name}: {error}") from None
        return segments, schedule.privacy
    return load_schedule(path), None


def load_schedule(path: str | Path) -> tuple[Segment, ...]:
    """Validated segments from a ``.csv`` or ``.json`` list of segments."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"schedule file {str(path)!r} " + ("is a folder" if path.is_dir() else "does not exist"))
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows = _read_csv(path)
    elif suffix == ".json":
        rows = _read_json(path)
    else:
        raise ValueError(f"schedule file must be a list of segments (.csv, .json) or a fedplan export (.csv, .json, "
                         f".yaml, .yml); got {path.name!r}")
    segments = []
    for number, row in enumerate(rows, start=1):
        try:
            segments.append(Segment(row["sample_rate"], row["noise_multiplier"], row["steps"]))
        except ValueError as error:
            raise ValueError(f"{path.name}, segment {number}: {error}") from None
    try:
        return make_schedule(segments)
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from None


def _read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        header = [name.strip() for name in (reader.fieldnames or [])]
        missing = [column for column in COLUMNS if column not in header]
        if missing:
            raise ValueError(f"{path.name}: header must name the columns {', '.join(COLUMNS)}; "
                             f"missing {', '.join(missing)}")
        rows = []
        for number, raw in enumerate(reader, start=1):
            row = {key.strip(): (value or "").strip() for key, value in raw.items() if key is not None}
            try:
                rows.append({column: float(row[column]) for column in COLUMNS})
            except ValueError:
                raise ValueError(f"{path.name}, row {number}: {', '.join(COLUMNS)} must be numbers; got "
                                 f"{[row[column] for column in COLUMNS]}") from None
        return rows


def _read_json(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path.name} is not valid JSON: {error.msg} (line {error.lineno})") from None
    if isinstance(data, dict):
        data = data.get("segments")
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ValueError(f"{path.name}: expected a list of segments (objects with keys {', '.join(COLUMNS)})")
    for number, item in enumerate(data, start=1):
        missing = [column for column in COLUMNS if column not in item]
        if missing:
            raise ValueError(f"{path.name}, segment {number}: missing {', '.join(missing)}")
    return data
