"""Parameter schedules: change-points in memory, one row per round on export (CSV, JSON, YAML).

A :class:`Schedule` is a list of change-points ``(start_round, {parameter: value})``: each entry
holds from its start round until the next one. Exports:

* CSV: one row per round (``round`` first), with the cumulative ε after that round;
* JSON and YAML: the change-points, the metadata (paper, variant, accountant, δ, neighbouring
  relation, sampling assumption, versions) and a plain-English privacy statement. A JSON or YAML
  export loads back (:func:`load_schedule_file`) to an identical :class:`Schedule`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path

import yaml

FORMATS = ("csv", "json", "yaml")


@dataclass(frozen=True)
class Schedule:
    """Per-round training parameters as change-points, with the privacy metadata that goes with them."""

    rounds: int
    change_points: tuple[tuple[int, dict], ...]
    metadata: dict = field(default_factory=dict)
    statement: str = ""

    def __post_init__(self) -> None:
        starts = [start for start, _ in self.change_points]
        if not starts or starts[0] != 0 or starts != sorted(set(starts)) or starts[-1] >= self.rounds:
            raise ValueError(f"change_points must start at round 0 and increase strictly below rounds = {self.rounds}; "
                             f"got starts {starts[:5]}{'…' if len(starts) > 5 else ''}")

    @classmethod
    def from_rows(cls, rows: list[dict], *, metadata: dict | None = None, statement: str = "") -> Schedule:
        """Collapse one dict per round into change-points (a new point wherever a value changes)."""
        points: list[tuple[int, dict]] = []
        for index, row in enumerate(rows):
            if not points or points[-1][1] != row:
                points.append((index, dict(row)))
        return cls(rounds=len(rows), change_points=tuple(points), metadata=dict(metadata or {}),
                   statement=statement)

    def rows(self) -> list[dict]:
        """One dict per round, ``round`` first."""
        expanded = []
        ends = [start for start, _ in self.change_points[1:]] + [self.rounds]
        for (start, values), end in zip(self.change_points, ends, strict=True):
            expanded.extend({"round": index, **values} for index in range(start, end))
        return expanded

    def to_dict(self) -> dict:
        return {"rounds": self.rounds,
                "change_points": [{"start_round": start, **values} for start, values in self.change_points],
                "metadata": self.metadata, "statement": self.statement}


def package_versions() -> dict:
    """Versions of fedplan and of the libraries behind its numbers, for export metadata."""
    versions = {}
    for name in ("fedplan", "dp-accounting", "numpy", "scipy"):
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def schedule_from_dict(data: dict) -> Schedule:
    """Inverse of :meth:`Schedule.to_dict` (validates the layout)."""
    if not isinstance(data, dict) or "rounds" not in data or "change_points" not in data:
        raise ValueError("a schedule file must hold an object with 'rounds' and 'change_points'")
    points = []
    for point in data["change_points"]:
        values = dict(point)
        points.append((int(values.pop("start_round")), values))
    return Schedule(rounds=int(data["rounds"]), change_points=tuple(points), metadata=dict(data.get("metadata", {})),
                    statement=str(data.get("statement", "")))


def render(schedule: Schedule, fmt: str, *, cumulative_epsilon=None) -> str:
    """The schedule as CSV, JSON or YAML text. ``cumulative_epsilon`` (one value per round) adds a CSV column."""
    if fmt == "csv":
        rows = schedule.rows()
        if cumulative_epsilon is not None:
            if len(cumulative_epsilon) != len(rows):
                raise ValueError(f"cumulative_epsilon needs one value per round ({len(rows)}); "
                                 f"got {len(cumulative_epsilon)}")
            rows = [{**row, "cumulative_epsilon": float(eps)} for row, eps in zip(rows, cumulative_epsilon,
                                                                                  strict=True)]
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()
    if fmt == "json":
        return json.dumps(schedule.to_dict(), indent=2) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(schedule.to_dict(), sort_keys=False, allow_unicode=True)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}")


def format_for_path(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    fmt = {"yml": "yaml"}.get(suffix, suffix)
    if fmt not in FORMATS:
        raise ValueError(f"output file must end in .csv, .json, .yaml or .yml; got {Path(path).name!r}")
    return fmt


def check_output_file(path: str | Path, *, name: str = "out") -> Path:
    """``path`` as a file this process can write, or a ``ValueError`` naming ``name`` (checked before any work:
    a folder, a missing folder or a folder without write access would otherwise fail after it)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} must name a file; {str(path)!r} is a folder")
    folder = path.parent
    if not folder.is_dir():
        raise ValueError(f"{name}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ValueError(f"{name}: {str(path)!r} cannot be written (no permission)")
    return path


def check_schedule_file(path: str | Path, *, name: str = "out") -> str:
    """The export format of ``path`` (from its extension), after :func:`check_output_file`."""
    fmt = format_for_path(path)
    check_output_file(path, name=name)
    return fmt


def write_schedule(schedule: Schedule, path: str | Path, *, cumulative_epsilon=None) -> Path:
    """Write ``schedule`` in the format named by the file's extension."""
    path = Path(path)
    text = render(schedule, format_for_path(path), cumulative_epsilon=cumulative_epsilon)
    path.write_text(text, encoding="utf-8")
    return path


def load_schedule_file(path: str | Path) -> Schedule:
    """Read a JSON or YAML export back into a :class:`Schedule`."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"schedule file {str(path)!r} " + ("is a folder" if path.is_dir() else "does not exist"))
    fmt = format_for_path(path)
    text = path.read_text(encoding="utf-8")
    if fmt == "csv":
        raise ValueError("a CSV export has one row per round and no metadata; load the JSON or YAML export instead")
    try:
        data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ValueError(f"{path.name}: not valid {fmt.upper()}: {error}") from None
    return schedule_from_dict(data)
