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

from pathlib import Path

from fedplan.bounds.accounting import Segment, make_schedule
from fedplan.planner.export import is_fedplan_export, load_schedule_file
from fedplan.planner.limits import check_file, csv_rows, parse_structured, read_text

COLUMNS = ("sample_rate", "noise_multiplier", "steps")


def read_schedule(path: str | Path, *, name: str = "schedule") -> tuple[tuple[Segment, ...], dict | None]:
    """Validated segments from a file, and the privacy block of a fedplan export (None for a plain list).

    ``name`` is the parameter that gave the path: every error names it and the file. The file must be within the
    file-size limit (:mod:`planner.limits`) and UTF-8 text.
    """
    path = check_file(name, path)
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
    return load_schedule(path, name=name), None


def load_schedule(path: str | Path, *, name: str = "schedule") -> tuple[Segment, ...]:
    """Validated segments from a ``.csv`` or ``.json`` list of segments (keys other than the three refused, as
    :func:`~fedplan.bounds.accounting.make_schedule` refuses them)."""
    path = check_file(name, path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise ValueError(f"{name} file must be a list of segments (.csv, .json) or a fedplan export (.csv, .json, "
                         f".yaml, .yml); got {path.name!r}")
    text = read_text(name, path)
    rows = _read_csv(name, path, text) if suffix == ".csv" else _read_json(name, path, text)
    if not rows:
        raise ValueError(f"{name} file {path.name!r} holds no segment: a schedule needs at least one segment")
    segments, checked = [], {}
    for number, row in enumerate(rows, start=1):
        key = repr(sorted(row.items(), key=str))
        try:  # a repetitive schedule repeats rows: each distinct row is validated once
            segment = checked.get(key) or checked.setdefault(key, make_schedule([row])[0])
        except (ValueError, TypeError) as error:
            raise ValueError(f"{name} file {path.name!r}, segment {number}: {error}") from None
        segments.append(segment)
    return tuple(segments)


def _read_csv(name: str, path: Path, text: str) -> list[dict]:
    fieldnames, raw_rows = csv_rows(name, path.name, text.splitlines())
    header = [column.strip() for column in fieldnames]
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise ValueError(f"{name} file {path.name!r}: header must name the columns {', '.join(COLUMNS)}; "
                         f"missing {', '.join(missing)}")
    unknown = [column for column in header if column not in COLUMNS]
    if unknown:
        raise ValueError(f"{name} file {path.name!r}: unknown columns {', '.join(unknown)}; allowed: "
                         f"{', '.join(COLUMNS)}")
    rows = []
    for number, raw in enumerate(raw_rows, start=1):
        row = {key.strip(): (value or "").strip() for key, value in raw.items() if key is not None}
        if None in raw:
            raise ValueError(f"{name} file {path.name!r}, row {number}: more cells than the header's "
                             f"{len(header)} columns")
        try:
            rows.append({column: float(row[column]) for column in COLUMNS})
        except ValueError:
            shown = [row[column][:40] for column in COLUMNS]
            raise ValueError(f"{name} file {path.name!r}, row {number}: {', '.join(COLUMNS)} must be numbers; got "
                             f"{shown}") from None
    return rows


def _read_json(name: str, path: Path, text: str) -> list:
    data = parse_structured(name, path.name, text, "json")
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"segments"})
        if unknown:
            raise ValueError(f"{name} file {path.name!r}: unknown keys {unknown}; a list of segments is a JSON list "
                             "or an object with the one key 'segments'")
        data = data.get("segments")
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ValueError(f"{name} file {path.name!r}: expected a list of segments (objects with keys "
                         f"{', '.join(COLUMNS)})")
    for number, item in enumerate(data, start=1):
        missing = [column for column in COLUMNS if column not in item]
        if missing:
            raise ValueError(f"{name} file {path.name!r}, segment {number}: missing {', '.join(missing)}")
    return data
