"""Parameter schedules: change-points in memory; exports in fedplan's own formats and in the training libraries'.

A :class:`Schedule` is a list of change-points ``(start_round, {parameter: value})``: each entry holds from its
start round until the next one. Its ``privacy`` block names the mechanism that runs and how fedplan accounted it
(:data:`PRIVACY_KEYS`): a Gaussian schedule's change-points carry ``sample_rate`` and ``noise_multiplier`` (noise
std / clipping norm on the sum of clipped contributions), so :meth:`Schedule.segments` is what ``fedplan epsilon
--schedule`` composes.

Formats (:data:`FORMATS`):

* ``csv``: a ``#`` header (the guarantee, and the privacy block as JSON), then one row per change of parameters
  (``start_round``, ``rounds``, the values, the cumulative ε at the phase's end); one row per round on request;
* ``json``, ``yaml``: change-points, privacy, metadata (paper, variant, versions) and the plain-English statement;
* ``opacus``: Python for ``PrivacyEngine.make_private`` (one phase per change of q or σ) and the
  ``accountant.history`` that reproduces the accounting (Poisson sampling only: what Opacus's accountants assume);
* ``flower``: a ``[tool.flwr.app.config]`` snippet and the strategy arguments of
  ``DifferentialPrivacyServerSideFixedClipping`` (client-level, m of N clients per round, one phase);
* ``tf-privacy``: the arguments of ``compute_dp_sgd_privacy_statement`` (example-level, Poisson, one phase).

A library's export carries fedplan's σ (tight accounting) unless :func:`for_library` re-calibrated it for the library's
own accountant (``library_accountant``: Opacus ``rdp`` or ``prv``, Flower ``rdp``), whose ε it then keeps within 1 %
below the target (:mod:`planner.library_accountants`).

Every csv/json/yaml export loads back (:func:`load_schedule_file`) to the same schedule and privacy block.

A plan whose numbers come from a paper's theorem carries the theorem's checked ``hypotheses`` with ``valid`` and
``guarantee`` in its metadata (:func:`planner.display.theorem_fields`); the CSV and the libraries' exports state the
verdict on their guarantee line (:func:`theorem_line`): "no guarantee (failing: …)" when a hypothesis fails.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from importlib import metadata as importlib_metadata
from pathlib import Path

import yaml

from fedplan.planner import limits
from fedplan.planner.library_accountants import LIBRARY_ACCOUNTANTS, check_library_accountant
from fedplan.planner.schedule import (
    PRIVACY_KEYS,
    Schedule,
    guarantee_line,
    schedule_from_dict,
    theorem_line,
    whole_number,
)

__all__ = ["FORMATS", "LIBRARY_ACCOUNTANTS", "PRIVACY_KEYS", "Schedule", "check_output_file", "check_schedule_file",
           "for_library", "format_for_path", "load_schedule_file", "package_versions", "render", "schedule_from_dict",
           "schedule_of", "write_schedule"]

#: fedplan's own formats (they load back) and the libraries' (they run there).
OWN_FORMATS = ("csv", "json", "yaml")
LIBRARY_FORMATS = ("opacus", "flower", "tf-privacy")
FORMATS = OWN_FORMATS + LIBRARY_FORMATS
#: File name endings of each format (the first is written by default).
SUFFIXES = {"csv": (".csv",), "json": (".json",), "yaml": (".yaml", ".yml"), "opacus": (".py",),
            "flower": (".toml",), "tf-privacy": (".py",)}
def package_versions() -> dict:
    """Versions of fedplan and of the libraries behind its numbers, for export metadata."""
    versions = {}
    for name in ("fedplan", "dp-accounting", "numpy", "scipy"):
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


# ------------------------------------------------------------------------------------------------
# Rendering
# ------------------------------------------------------------------------------------------------


def render(schedule: Schedule, fmt: str, *, cumulative_epsilon=None, per_round: bool = False) -> str:
    """The schedule as text in ``fmt`` (:data:`FORMATS`).

    CSV has one row per change-point with the cumulative ε at its end (from the privacy block's accountant, else
    from ``cumulative_epsilon``, one value per round, at the phase ends); ``per_round=True`` writes one row per
    round instead, with ``cumulative_epsilon`` per round when given (else at phase ends only).
    """
    if fmt == "csv":
        return _render_csv(schedule, cumulative_epsilon, per_round)
    if fmt == "json":
        return json.dumps(schedule.to_dict(), indent=2) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(schedule.to_dict(), sort_keys=False, allow_unicode=True)
    if fmt in LIBRARY_FORMATS:
        from fedplan.planner import library_exports

        return library_exports.RENDERERS[fmt](schedule)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}")


def refusal(schedule: Schedule, fmt: str) -> str | None:
    """Why :func:`render` refuses ``schedule`` in ``fmt``, or None when it renders it, decided without rendering (a
    CSV composes the schedule for its cumulative ε: a page draws its download buttons before any text exists)."""
    if fmt not in LIBRARY_FORMATS:
        return None
    from fedplan.planner import library_exports

    try:
        library_exports.check(schedule, fmt)
    except ValueError as error:
        return str(error)
    return None


def _comment_header(schedule: Schedule) -> list[str]:
    theorem = theorem_line(schedule)
    lines = [f"# fedplan schedule: {schedule.rounds} rounds in {len(schedule.change_points)} phase(s)",
             f"# guarantee: {guarantee_line(schedule.privacy)}" + ("" if theorem is None else f"; {theorem}")]
    if schedule.privacy is not None:
        lines.append(f"# privacy: {json.dumps(schedule.privacy, separators=(',', ':'))}")
    return lines


def _render_csv(schedule: Schedule, cumulative_epsilon, per_round: bool) -> str:
    phases = schedule.phases()
    at_phase_end = schedule.epsilon_after_each_phase()
    if cumulative_epsilon is not None and len(cumulative_epsilon) != schedule.rounds:
        raise ValueError(f"cumulative_epsilon needs one value per round ({schedule.rounds}); "
                         f"got {len(cumulative_epsilon)}")
    if at_phase_end is None and cumulative_epsilon is not None:
        at_phase_end = [float(cumulative_epsilon[start + length - 1]) for start, length, _ in phases]
    if per_round:
        limits.check_memory("the per-round rows", schedule.rounds * (len(phases[0][2]) + 3) * 120.0,
                            because=f"per_round with {schedule.rounds} rounds")
        rows = schedule.rows()
        if cumulative_epsilon is not None:
            for row, value in zip(rows, cumulative_epsilon, strict=True):
                row["cumulative_epsilon"] = float(value)
        elif at_phase_end is not None:
            for row in rows:
                row["cumulative_epsilon"] = ""
            for (start, length, _), value in zip(phases, at_phase_end, strict=True):
                rows[start + length - 1]["cumulative_epsilon"] = value
    else:
        rows = [{"start_round": start, "rounds": length, **values} for start, length, values in phases]
        if at_phase_end is not None:
            for row, value in zip(rows, at_phase_end, strict=True):
                row["cumulative_epsilon"] = value
    names: list[str] = []
    for row in rows:
        names.extend(name for name in row if name not in names)
    buffer = io.StringIO()
    buffer.write("\n".join(_comment_header(schedule)) + "\n")
    writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------------


def format_for_path(path: str | Path, fmt: str | None = None) -> str:
    """The export format: ``fmt`` if given (checked against the file's ending), else from the ending."""
    suffix = Path(path).suffix.lower()
    if fmt is not None:
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}")
        if suffix not in SUFFIXES[fmt]:
            raise ValueError(f"format {fmt} is written to a file ending in {' or '.join(SUFFIXES[fmt])}; "
                             f"got {Path(path).name!r}")
        return fmt
    for name in OWN_FORMATS:
        if suffix in SUFFIXES[name]:
            return name
    if suffix == ".toml":
        return "flower"
    raise ValueError(f"output file must end in .csv, .json, .yaml or .yml (or give format: {', '.join(FORMATS)}); "
                     f"got {Path(path).name!r}")


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
    if path.exists() and (stat.S_ISFIFO(path.stat().st_mode) or stat.S_ISSOCK(path.stat().st_mode)):
        # writing would wait forever for a reader
        raise ValueError(f"{name} must name a regular file; {str(path)!r} is a named pipe or socket")
    return path


def check_schedule_file(path: str | Path, *, name: str = "out", fmt: str | None = None) -> str:
    """The export format of ``path`` (from ``fmt`` or its ending), after :func:`check_output_file`. A library's
    format goes into a file of the user's project (a ``.py``, a ``pyproject.toml``): an existing file is only
    replaced if fedplan wrote it."""
    found = format_for_path(path, fmt)
    path = check_output_file(path, name=name)
    if found in LIBRARY_FORMATS and path.exists() and not _written_by_fedplan(path):
        raise ValueError(f"{name}: {str(path)!r} exists and was not written by fedplan; write the {found} export to a "
                         "new file and copy what you need from it")
    return found


def check_export_options(out: str | None, *, fmt: str | None, per_round: bool,
                         library_accountant: str = "fedplan") -> None:
    """The ``out``/``format``/``per_round``/``library_accountant`` options of a request that exports: checked before
    any work (the folder exists, the format is known, a library export replaces no file of the user's, per_round
    only with a CSV, library_accountant only with a library whose accountant is installed)."""
    if out is None:
        if fmt is not None or per_round:
            raise ValueError("format and per_round describe --out: give out too")
        if library_accountant != "fedplan":
            raise ValueError(f"library_accountant={library_accountant} calibrates the σ of a library's export: give "
                             "out (and format opacus or flower) too")
        return
    found = check_schedule_file(out, fmt=fmt)
    if per_round and found != "csv":
        raise ValueError(f"per_round writes one CSV row per round; the {found} export of out={out!r} has no rows "
                         "(drop per_round or write a .csv)")
    check_library_accountant(library_accountant, found)


def for_library(schedule: Schedule, fmt: str, library_accountant: str = "fedplan") -> Schedule:
    """``schedule`` as the ``fmt`` export carries it: with ``library_accountant`` other than ``fedplan``, after
    checking that the library runs it, σ re-calibrated so that the library's own accountant reports ε ≤ the target
    (:func:`planner.library_accountants.calibrated`)."""
    check_library_accountant(library_accountant, fmt)
    if library_accountant == "fedplan":
        return schedule
    from fedplan.planner import library_accountants, library_exports

    library_exports.check(schedule, fmt)
    return library_accountants.calibrated(schedule, fmt, library_accountant)


def _written_by_fedplan(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as handle:
            return handle.readline().startswith("# fedplan export")
    except (OSError, UnicodeDecodeError):
        return False


def write_schedule(schedule: Schedule, path: str | Path, *, cumulative_epsilon=None, fmt: str | None = None,
                   per_round: bool = False) -> Path:
    """Write ``schedule`` in ``fmt`` (default: the format named by the file's ending)."""
    path = Path(path)
    text = render(schedule, check_schedule_file(path, fmt=fmt), cumulative_epsilon=cumulative_epsilon,
                  per_round=per_round)
    path.write_text(text, encoding="utf-8")
    return path


def load_schedule_file(path: str | Path) -> Schedule:
    """Read a fedplan export (JSON, YAML, or CSV by change-points or by round) back into a :class:`Schedule`."""
    path = limits.check_file("schedule", path)
    fmt = format_for_path(path)
    text = limits.read_text("schedule", path)
    if fmt == "csv":
        return _schedule_from_csv(text, path.name)
    data = limits.parse_structured("schedule", path.name, text, fmt)
    try:
        return schedule_from_dict(data)
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from None


def _number(text: str):
    """A CSV cell as an int, float, bool, None (empty) or the text itself."""
    text = text.strip()
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def _schedule_from_csv(text: str, name: str) -> Schedule:
    privacy = None
    body = []
    for line in text.splitlines():
        if line.startswith("# privacy: "):
            privacy = limits.parse_structured("schedule", name, line[len("# privacy: "):], "json")
        elif not line.startswith("#"):
            body.append(line)
    header, raw_rows = limits.csv_rows("schedule", name, body)
    if any(None in row for row in raw_rows):
        raise ValueError(f"{name}: a row has more cells than the header has columns")
    rows = [{key: _number(value or "") for key, value in row.items() if key != "cumulative_epsilon"}
            for row in raw_rows]
    if not rows:
        raise ValueError(f"{name}: no rows")
    try:
        if "start_round" in header and "rounds" in header:
            points = []
            for row in rows:
                start = whole_number("start_round", row.pop("start_round"))
                length = whole_number("rounds", row.pop("rounds"))
                points.append((start, length, {key: value for key, value in row.items() if value is not None}))
            total = points[-1][0] + points[-1][1]
            return Schedule(rounds=total, change_points=tuple((start, values) for start, _, values in points),
                            privacy=privacy)
        if "round" in header:
            values = [{key: value for key, value in row.items() if key != "round" and value is not None}
                      for row in rows]
            return Schedule.from_rows(values, privacy=privacy)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    raise ValueError(f"{name}: a fedplan CSV has the columns start_round and rounds (one row per change) or round "
                     f"(one row per round); got {', '.join(header)}")


def is_fedplan_export(path: str | Path) -> bool:
    """Whether ``path`` looks like a fedplan schedule export (rather than a plain list of segments)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return True
    try:
        with path.open(encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    if suffix == ".csv":
        return head.startswith("# fedplan schedule") or head.split("\n", 1)[0].split(",")[0].strip() in (
            "start_round", "round")
    return suffix == ".json" and '"change_points"' in head


def schedule_of(plan) -> Schedule:
    """The schedule behind a plan: a Schedule, an export file, a report or the result of a plan."""
    if isinstance(plan, Schedule):
        return plan
    if isinstance(plan, str | Path):
        return load_schedule_file(plan)
    found = getattr(plan, "result", plan)
    schedule = getattr(found, "schedule", None)
    schedule = schedule() if callable(schedule) else schedule
    if not isinstance(schedule, Schedule):
        raise ValueError(f"plan must be a fedplan plan (a report of fedplan.plan, dp_sgd or federated), a Schedule or "
                         f"an exported schedule file; got {type(plan).__name__}")
    return schedule
