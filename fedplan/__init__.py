"""fedplan: plan differentially private federated and asynchronous training from theory.

The common calls, each a thin front over one request of the task layer (:mod:`fedplan.planner.tasks`), with
keyword-only arguments named as on the command line (``fedplan <command> --help``), returning a
:class:`~fedplan.planner.tasks.base.Report` (``report["epsilon"]``, ``report.statement``, ``report.result``)::

    import fedplan
    fedplan.plan(target_epsilon=1, target_delta=1e-6, dataset="synthetic", clients=5, epochs=2.5)
    fedplan.epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5)
    fedplan.calibrate("noise_multiplier", target_epsilon=2, target_delta=1e-5, sample_rate=0.01, steps=10_000)
    fedplan.run("vandijk select", initial_size=16, client_size=10_000, grad_computations=25_000, ...)
    fedplan.dp_sgd(dataset_size=60_000, batch_size=256, epochs=15, target_epsilon=3, delta=1e-5)
    fedplan.federated(clients=1000, clients_per_round=50, rounds=200, target_epsilon=2, delta=1e-5)
    fedplan.export(report, "plan.py", format="opacus")     # or flower (.toml), tf-privacy (.py), csv, json, yaml
    budget = fedplan.Budget(report); budget.step()         # in the training loop: raises before overspending

The mathematics is in :mod:`fedplan.bounds`, the recipes, requests and simulations in :mod:`fedplan.planner`.
Importing ``fedplan`` loads nothing heavy; each call imports what it needs.
"""

from __future__ import annotations

import difflib as _difflib
import inspect as _inspect
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("fedplan")
except _metadata.PackageNotFoundError:  # a checkout that was never installed
    __version__ = "unknown"

__all__ = ["Budget", "BudgetExceededError", "calibrate", "delta", "dp_sgd", "epsilon", "export", "federated", "plan",
           "request", "run", "simulate", "tasks"]


def __getattr__(name: str):
    """``fedplan.Budget`` and ``fedplan.BudgetExceededError``, imported on first use (they load the accountant)."""
    if name in ("Budget", "BudgetExceededError"):
        from fedplan.planner import budget

        return getattr(budget, name)
    raise AttributeError(f"module 'fedplan' has no attribute {name!r}")

#: ``calibrate(parameter, …)``: the calibrated parameter (or its command's word) -> its command.
CALIBRATIONS = {"noise_multiplier": "calibrate noise", "steps": "calibrate steps",
                "sample_rate": "calibrate sample-rate", "noise": "calibrate noise",
                "sample-rate": "calibrate sample-rate"}


def tasks() -> dict:
    """Every request class by its command, e.g. ``tasks()["calibrate noise"]``."""
    from fedplan.planner.tasks.registry import TASKS

    return {" ".join(task.command): task for task in TASKS}


def request(command: str, /, **fields):
    """The validated request of ``command`` (e.g. ``"vandijk select"``), not run yet."""
    known = tasks()
    if command not in known:
        raise ValueError(f"command must be one of {', '.join(sorted(known))}; got {command!r}")
    accepted = set(_inspect.signature(known[command]).parameters)
    for name in fields:
        if name not in accepted:
            close = _difflib.get_close_matches(name, accepted, n=1)
            hint = f" (did you mean {close[0]}?)" if close else f" (options: {', '.join(sorted(accepted))})"
            raise ValueError(f"{name} is not an option of {command}{hint}")
    return known[command](**fields)


def run(command: str, /, *, progress=None, **fields):
    """Run ``command`` with ``fields`` and return its report; ``progress(done, total)`` follows long work."""
    return request(command, **fields).run(progress=progress)


def epsilon(**fields):
    """ε of a schedule at a given δ (``fedplan epsilon``)."""
    return run("epsilon", **fields)


def delta(**fields):
    """δ of a schedule at a given ε (``fedplan delta``)."""
    return run("delta", **fields)


def calibrate(parameter: str, /, **fields):
    """The noise multiplier, steps or sample rate meeting a target (ε, δ) (``fedplan calibrate …``)."""
    if parameter not in CALIBRATIONS:
        raise ValueError(f"parameter must be one of {', '.join(CALIBRATIONS)}; got {parameter!r}")
    return run(CALIBRATIONS[parameter], **fields)


def plan(**fields):
    """What to run for (ε, δ), data, clients and compute, by one paper's recipe (``fedplan plan``); give
    ``features=`` and ``labels=`` arrays to plan on your own data."""
    return run("plan", **fields)


def dp_sgd(**fields):
    """DP-SGD from examples, batch size and epochs: σ for a target ε, or ε of σ (``fedplan dp-sgd``)."""
    return run("dp-sgd", **fields)


def federated(**fields):
    """Client-level FL from clients, clients per round and rounds: σ for a target ε, or ε of σ
    (``fedplan federated``)."""
    return run("federated", **fields)


def simulate(algorithm: str, /, *, progress=None, **fields):
    """A backing simulation (``fedplan simulate <algorithm>``), e.g. ``simulate("fedbuff", rounds=50)``."""
    return run(f"simulate {algorithm}", progress=progress, **fields)


def export(report, path, /, *, format: str | None = None, per_round: bool = False,  # noqa: A002 (the CLI's name)
           library_accountant: str = "fedplan"):
    """Write the schedule of a plan's report to ``path``; ``format`` is csv, json, yaml (default: from the ending)
    or opacus, flower, tf-privacy. ``library_accountant`` (opacus: rdp or prv; flower: rdp) re-calibrates σ so that
    the library's own accountant reports ε ≤ the target (default fedplan: fedplan's tight σ). Returns the path
    written."""
    from fedplan.planner.export import check_export_options, for_library, format_for_path, schedule_of, write_schedule

    check_export_options(path, fmt=format, per_round=per_round, library_accountant=library_accountant)
    schedule = for_library(schedule_of(report), format_for_path(path, format), library_accountant)
    cumulative = None
    if schedule.privacy is None:  # a paper's own plan: its per-round ε curve, where it has one
        cumulative = getattr(getattr(report, "result", report), "cumulative_epsilon", None)
        cumulative = cumulative() if callable(cumulative) else cumulative
    return write_schedule(schedule, path, fmt=format, per_round=per_round, cumulative_epsilon=cumulative)
