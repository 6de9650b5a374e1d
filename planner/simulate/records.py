"""Tidy per-round records, the privacy ledger of a run and the result every algorithm returns.

* :class:`Evaluator` measures a model: training loss, test accuracy (training accuracy without a test
  part) and ‖w − w*‖² when the optimum is known.
* :class:`RoundRecorder` keeps one row per round (``round, time, loss, accuracy, dist_sq, staleness,
  noise``); loss/accuracy/distance are evaluated every ``eval_every`` rounds and at the last round
  (other rows carry ``None``) because a full pass over the data costs more than a round.
* :func:`gaussian_ledger` accounts what a run actually executed: every client's sequence of releases
  (sample rate q, noise multiplier σ) is composed with :mod:`bounds.accounting` under the sampling the
  engine executed (``poisson`` by default; ``with_replacement`` with each client's N_c, ``fixed_size``,
  ``shuffle``: :mod:`bounds.sampling`) and the worst client's ε is the run's ε. A sampling the accountant
  cannot account is reported as "not accounted" with the reason, never as another sampling's ε.
  :func:`laplace_ledger` does the same for pure-ε Laplace releases (basic composition).
* :class:`SimulationResult` bundles the records, the final metrics, the ledger, the delay summary and
  the divergence flag; ``to_dict()`` is JSON-ready (``None`` where a number is unavailable, never NaN).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedplan.bounds import accounting
from fedplan.bounds import sampling as samplings
from fedplan.bounds.composition import basic_composition
from fedplan.bounds.validation import check_choice, check_int
from fedplan.planner.export import Schedule
from fedplan.planner.simulate.engine import finite_or_none
from fedplan.planner.simulate.models import Model

__all__ = ["RECORD_FIELDS", "Diverged", "Evaluator", "RoundRecorder", "SimulationResult", "gaussian_ledger",
           "laplace_ledger", "merge_releases", "sampling_description"]

RECORD_FIELDS = ("round", "time", "loss", "accuracy", "dist_sq", "staleness", "noise")


class Diverged(Exception):  # noqa: N818 - a signal inside the engine, turned into a flag on the result
    """Raised inside an algorithm when the model stops being finite; the run reports it."""


@dataclass(frozen=True, eq=False)
class Evaluator:
    """Loss on the training samples, accuracy on the test samples (or training ones) and ‖w − w*‖²."""

    model: Model
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    w_star: np.ndarray | None = None

    def __call__(self, w: np.ndarray) -> dict:
        has_test = self.X_test is not None and self.X_test.shape[0] > 0
        X_acc, y_acc = (self.X_test, self.y_test) if has_test else (self.X_train, self.y_train)
        return {
            "loss": finite_or_none(self.model.loss(self.X_train, self.y_train, w)),
            "accuracy": self.model.accuracy(X_acc, y_acc, w),
            "dist_sq": None if self.w_star is None else finite_or_none(np.sum((w - self.w_star) ** 2)),
        }


class RoundRecorder:
    """One tidy row per round; metrics every ``eval_every`` rounds and whenever ``force`` is set."""

    def __init__(self, evaluator: Evaluator, *, eval_every: int = 1, progress=None):
        self.evaluator = evaluator
        self.eval_every = check_int("eval_every", eval_every, low=1)
        self.rows: list[dict] = []
        #: Called with the number of recorded rounds after every round (e.g. a progress bar), if given.
        self.progress = progress

    def record(self, *, round: int, time: float, w: np.ndarray, staleness: float | None = None,
               noise: float | None = None, force: bool = False) -> None:
        row = {"round": int(round), "time": float(time), "loss": None, "accuracy": None, "dist_sq": None,
               "staleness": finite_or_none(staleness), "noise": finite_or_none(noise)}
        if force or (round + 1) % self.eval_every == 0:
            row.update(self.evaluator(w))
        self.rows.append(row)
        if self.progress is not None:
            self.progress(len(self.rows))

    def finish(self, w: np.ndarray) -> dict:
        """Metrics of the final model (also written into the last row)."""
        metrics = self.evaluator(w)
        if self.rows:
            self.rows[-1].update(metrics)
        return metrics


def merge_releases(releases) -> list[tuple[float, float, int]]:
    """Consecutive equal (q, σ) releases merged into (q, σ, steps) segments."""
    segments: list[tuple[float, float, int]] = []
    for q, sigma in releases:
        if segments and segments[-1][:2] == (q, sigma):
            segments[-1] = (q, sigma, segments[-1][2] + 1)
        else:
            segments.append((q, sigma, 1))
    return segments


def _dominated(schedule: tuple, other: tuple) -> bool:
    """True when ``schedule`` is a prefix of ``other`` (same segments, its last one no longer): ε can only grow."""
    if not schedule or len(schedule) > len(other) or schedule == other:
        return not schedule
    last = len(schedule) - 1
    return (schedule[:last] == other[:last] and schedule[last][:2] == other[last][:2]
            and schedule[last][2] <= other[last][2])


def sampling_description(sampling: str) -> str:
    """``"key (what it draws)"`` in :data:`bounds.sampling.SAMPLING_HELP`'s words, e.g. for a ledger or a schedule."""
    return f"{sampling} ({samplings.SAMPLING_HELP[sampling]})"


def _accountant_for(sampling: str, neighboring_relation: str, accountant: str) -> tuple[str, str]:
    """(accountant to call, note): the requested one, or ``pld`` where the sampling has no RDP bound.

    Raises :class:`bounds.sampling.UnsupportedCombinationError` for a combination no accountant covers.
    """
    found = samplings.mechanism(sampling, neighboring_relation)
    if accountant == "rdp" and found.rdp_method is None and found.exact_method is None and found.pld_method:
        return "pld", (f"accountant rdp was requested, but {sampling} sampling with {neighboring_relation} "
                       "neighbours has no RDP bound (bounds.sampling); the PLD accountant was used.")
    return accountant, ""


def gaussian_ledger(per_client, *, delta: float, accountant: str = "rdp", note: str = "", sampling: str = "poisson",
                    dataset_sizes=None, neighboring_relation: str = "add_or_remove_one") -> dict:
    """ε of the executed releases: each client's segments composed exactly; the worst client counts.

    ``per_client`` holds, for every client, its releases in order as segments ``(sample_rate,
    noise_multiplier, steps)`` (see :func:`merge_releases`). ``sampling`` is the key (:data:`bounds.sampling.
    SAMPLINGS`) of the sampling the engine executed and ``neighboring_relation`` the relation accounted;
    ``dataset_sizes`` (one N, or one per client: the records a client's releases draw from) is passed to the
    accountant for every sampling but ``poisson`` (``with_replacement`` needs it). Schedules that are prefixes
    of another client's with the same N are skipped (their ε is smaller). A release without noise (σ = 0)
    makes the run non-private: ``epsilon`` is then ``None``. Where the accountant refuses the executed
    configuration (a ValueError: unsupported combination, PLD grid or time budget), ``epsilon`` is ``None``
    and the statement begins with "not accounted:" and the reason; no other sampling's ε is printed.
    ``accountant="rdp"`` for a sampling without an RDP bound (``with_replacement``) uses ``pld`` and says so.
    """
    sampling = check_choice("sampling", sampling, samplings.SAMPLINGS)
    neighboring_relation = check_choice("neighboring_relation", neighboring_relation,
                                        samplings.NEIGHBORING_RELATIONS)
    schedules = [tuple(tuple(segment) for segment in segments) for segments in per_client]
    if dataset_sizes is None or np.ndim(dataset_sizes) == 0:
        sizes = [None if dataset_sizes is None else int(dataset_sizes)] * len(schedules)
    else:
        sizes = [int(size) for size in dataset_sizes]
        if len(sizes) != len(schedules):
            raise ValueError(f"dataset_sizes must be one number or one per client ({len(schedules)}); "
                             f"got {len(sizes)}")
    # Poisson does not need N: its accounting is the one it has always been (no N passed).
    keyed = [(schedule, None if sampling == "poisson" else size) for schedule, size in zip(schedules, sizes,
                                                                                            strict=True)]
    result = {"mechanism": "gaussian", "delta": float(delta), "accountant": accountant,
              "sampling": sampling, "sampling_description": sampling_description(sampling),
              "neighboring_relation": neighboring_relation,
              "releases_per_client": [sum(segment[2] for segment in schedule) for schedule in schedules],
              "epsilon": 0.0, "worst_client": None, "note": note}
    if sampling != "poisson":
        result["requested_accountant"] = accountant
        result["dataset_sizes"] = sizes
    if any(segment[1] == 0 for schedule in schedules for segment in schedule):
        result.update(epsilon=None, statement="Some releases carry no noise: the run is not differentially private.")
        return result
    distinct = sorted(set(keyed), key=lambda item: len(item[0]))
    maximal = [s for s in distinct
               if not any(s[1] == other[1] and _dominated(s[0], other[0]) for other in distinct if other is not s)]
    try:
        used, accountant_note = _accountant_for(sampling, neighboring_relation, accountant)
        answers = {key: accounting.get_epsilon(segments=list(key[0]), delta=delta, accountant=used, sampling=sampling,
                                               neighboring_relation=neighboring_relation, dataset_size=key[1])
                   for key in maximal}
    except ValueError as error:  # the executed configuration is not accounted: say so, print no number
        reason = str(error)
        result.update(epsilon=None, not_accounted=reason,
                      statement=(f"not accounted: {reason}. The run executed {sampling_description(sampling)} "
                                 f"with {neighboring_relation} neighbours; no epsilon of another sampling is "
                                 f"reported. {note}").strip())
        return result
    if answers:
        worst_key = max(answers, key=lambda key: answers[key].epsilon)
        answer = answers[worst_key]
        result.update(epsilon=answer.epsilon, worst_client=keyed.index(worst_key),
                      accountant=answer.accountant, segments=[list(segment) for segment in worst_key[0]])
        if sampling != "poisson":
            result.update(dataset_size=worst_key[1], bound=answer.bound)
        statement = answer.statement()
    else:
        statement = "No release was made: epsilon = 0."
    dataset = "" if result.get("dataset_size") is None else f", N = {result['dataset_size']} records"
    parts = (f"{statement} Per example, over the releases of its client (worst client {result['worst_client']}"
             f"{dataset}).", accountant_note, note)
    result["statement"] = " ".join(part for part in parts if part).strip()
    return result


def laplace_ledger(per_client, *, note: str = "") -> dict:
    """Pure ε of Laplace releases, each ``epsilon_j = sensitivity/scale``, by basic composition (worst client)."""
    if any(not np.isfinite(value) for releases in per_client for value in releases):
        return {"mechanism": "laplace", "epsilon": None, "delta": 0.0, "note": note,
                "statement": "Some Laplace releases carry no noise: the run is not differentially private."}
    totals = [basic_composition(epsilons=list(releases))[0] if releases else 0.0 for releases in per_client]
    worst = int(np.argmax(totals)) if totals else None
    return {"mechanism": "laplace", "delta": 0.0, "accountant": "basic composition",
            "epsilon": max(totals, default=0.0), "worst_client": worst,
            "releases_per_client": [len(r) for r in per_client],
            "sampling": "none (full local data set per release)",
            "neighboring_relation": "replace_one (sensitivity 2 xi1/d_i)",
            "statement": f"Each client's Laplace releases compose to epsilon <= {max(totals, default=0.0):.6g} "
                         f"(basic composition, delta = 0; worst client {worst}). {note}".strip(),
            "note": note}


@dataclass(frozen=True)
class SimulationResult:
    """What a simulated run returns (see the module docstring)."""

    algorithm: str
    rows: tuple[dict, ...]
    final: dict
    privacy: dict
    virtual_time: float
    wall_time_s: float
    diverged: bool = False
    divergence: str | None = None
    delays: dict | None = None
    delay_quantiles: tuple[dict, ...] = ()
    executed: Schedule | None = None
    config: dict = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return len(self.rows)

    @property
    def epsilon(self) -> float | None:
        return self.privacy.get("epsilon")

    def column(self, name: str) -> np.ndarray:
        """One record field over the rounds as a float array (``None`` → NaN, for plotting only)."""
        return np.array([np.nan if row[name] is None else row[name] for row in self.rows], dtype=float)

    def to_dict(self, *, with_records: bool = True) -> dict:
        out = {"algorithm": self.algorithm, "rounds": self.rounds,
               "final_loss": self.final.get("loss"), "final_accuracy": self.final.get("accuracy"),
               "final_dist_sq": self.final.get("dist_sq"), "epsilon": self.epsilon,
               "delta": self.privacy.get("delta"), "wall_time_s": self.wall_time_s,
               "virtual_time": self.virtual_time, "diverged": self.diverged, "divergence": self.divergence,
               "privacy": self.privacy, "delays": self.delays, "config": self.config}
        if with_records:
            out["records"] = list(self.rows)
            out["delay_quantiles"] = list(self.delay_quantiles)
        out["statement"] = self.privacy.get("statement", "")
        return out
