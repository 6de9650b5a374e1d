"""``fedplan validate plan``: the backing simulation of exactly a planner's plan, its claims checked.

    fedplan plan --target-epsilon 1 --clients 5 --out plan.json
    fedplan validate plan --schedule plan.json --clients 5 --seeds 0 1

The plan's exported schedule (``--schedule``, or the :class:`~fedplan.planner.schedule.Schedule` itself from the API
and the planner page) runs on the engine of its recipe over the plan's data and clients
(:mod:`fedplan.planner.plan_validation`): nothing is planned again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fedplan.planner.export import load_schedule_file
from fedplan.planner.limits import check_time
from fedplan.planner.plan_validation import GRADIENTS, engine_of, validate_schedule
from fedplan.planner.schedule import Schedule
from fedplan.planner.simulate.data import SYNTHETIC_SETS, Dataset, _task_of
from fedplan.planner.tasks.base import Report, Request, api_value, choice, count, real, text
from fedplan.planner.tasks.plan import Plan
from fedplan.planner.tasks.simulate import (
    SCHEDULE_HELP,
    claims_report,
    clipping_norm_field,
    learning_rate_field,
    seeds_field,
)
from fedplan.planner.tasks.validate import EXAMPLES_PER_UPDATE, FIT_UPDATES_PER_EXAMPLE
from fedplan.planner.vandijk import STEP_RULES

#: Features the time estimate assumes for a data set whose width it does not know before loading it (as
#: :meth:`~fedplan.planner.tasks.simulate.DataSource.features_for_time`).
UNKNOWN_FEATURES = 1000


def _schedule(name: str, value) -> Schedule:
    if not isinstance(value, Schedule):
        raise ValueError(f"{name} must be a planner.schedule.Schedule (a plan's report.result.schedule); got "
                         f"{type(value).__name__}")
    return value


@dataclass(frozen=True, kw_only=True, eq=False)
class ValidatePlan(Request):
    """A plan's schedule run on its recipe's engine over the plan's data and clients, on several seeds."""

    command: ClassVar = ("validate", "plan")
    summary: ClassVar = ("run exactly a plan's schedule (increasing-sizes, fedsgd-dpc, dpscd, adp2sgd or mapa) and "
                         "check its claims")

    schedule: str | None = text(None, help=SCHEDULE_HELP + ", written by fedplan plan --out", metavar="FILE")
    plan_schedule: Schedule | None = api_value(help="API only: the plan's Schedule itself (instead of schedule)",
                                               checker=_schedule)
    dataset: str = text("synthetic", help="the plan's data: synthetic (logistic), a scikit-learn set or a LIBSVM "
                        "file, as given to fedplan plan")
    n_samples: int = count(50_000, help="examples of the plan's synthetic data set", low=2, high=2_000_000)
    n_features: int = count(20, help="features of the plan's synthetic data set", low=1, high=1000)
    features: np.ndarray | None = api_value(help="API only: the plan's features (instead of loading dataset)",
                                            checker=Plan.__dataclass_fields__["features"].metadata["option"].checker)
    labels: np.ndarray | None = api_value(help="API only: the labels of features",
                                          checker=Plan.__dataclass_fields__["labels"].metadata["option"].checker)
    clients: int = count(5, help="the plan's number of clients N", low=1)
    seeds: tuple[int, ...] = seeds_field((0, 1))
    clipping_norm: float = clipping_norm_field(0.1, help="increasing-sizes and dpscd: per-example clipping norm C "
                                               "(ℓ2; DP-SCD bounds each coordinate update by C); the plan's σ is "
                                               "noise std / C (fedsgd-dpc runs its plan's ξ₁)")
    learning_rate: float = learning_rate_field(0.15, help="increasing-sizes, where the schedule has no learning_rate: "
                                               "η0 of η_t = η0/(1+βt) (van Dijk Table 2, L1852); adp2sgd: η̄, the "
                                               "step on the mean gradient (Xu L112)")
    decay: float = real(0.001, help="increasing-sizes: β of η_t = η0/(1+βt) or η0/(1+β√t)", low=0.0)
    step_rule: str = choice("inverse", help="increasing-sizes: inverse η0/(1+βt), inverse-sqrt η0/(1+β√t)",
                            choices=STEP_RULES)

    def check(self) -> None:
        if (self.schedule is None) == (self.plan_schedule is None):
            raise ValueError("give exactly one of schedule (a file written by fedplan plan --out) and plan_schedule")
        if (self.features is None) != (self.labels is None):
            raise ValueError("give features and labels together (or neither, to load dataset)")
        engine_of(self.loaded())  # a plan no engine runs is refused before the data load
        updates, because = self.planned_updates()
        check_time(updates, self.features_for_time(), because=because)

    def loaded(self) -> Schedule:
        return self.plan_schedule if self.plan_schedule is not None else load_schedule_file(self.schedule)

    def features_for_time(self) -> int:
        if self.features is not None:
            return int(self.features.shape[1])
        return self.n_features if self.dataset in SYNTHETIC_SETS else UNKNOWN_FEATURES

    def planned_updates(self) -> tuple[int, str]:
        """The client updates of the run, for the time limit and the page's estimate: increasing-sizes computes
        Σ_i s_i gradients on each client per seed; fedsgd-dpc fits θ* (:data:`FIT_UPDATES_PER_EXAMPLE` per training
        example), then T rounds of b replies over a client's data (:data:`EXAMPLES_PER_UPDATE` examples an update);
        adp2sgd makes T updates per seed and computes the gradient of F over all the examples (‖∇F(θ^t)‖², Theorem 1's
        left side) at :data:`~planner.plan_validation.GRADIENTS` of them, :data:`EXAMPLES_PER_UPDATE` examples an
        update; mapa the same with f as well as ∇f (Theorem 4's F₀ at each stage start), two passes."""
        schedule, runs = self.loaded(), len(self.seeds)
        rows = schedule.rows()
        engine = engine_of(schedule)
        if engine == "dpscd":  # each iteration updates L coordinates and the shared vector
            batch = int(rows[0]["batch_size"])
            return (schedule.rounds * batch * runs,
                    f"the plan's T={schedule.rounds} iterations × L={batch} coordinates × {runs} seeds")
        if engine == "increasing-sizes":
            per_client = sum(int(row["sample_size"]) for row in rows)
            return (per_client * self.clients * runs,
                    f"the plan's {per_client} gradients per client × clients={self.clients} × {runs} seeds")
        examples = self.features.shape[0] if self.features is not None else self.n_samples
        if engine in ("adp2sgd", "mapa"):
            steps = int(schedule.metadata["iterations"]) if engine == "adp2sgd" else schedule.rounds
            passes, full = (1, "∇F") if engine == "adp2sgd" else (2, "f and ∇f")
            gradients, per_pass = min(steps, GRADIENTS), math.ceil(examples / EXAMPLES_PER_UPDATE)
            return ((steps + passes * gradients * per_pass) * runs,
                    f"the plan's T={steps} iterations and {full} over {examples} examples at {gradients} of them × "
                    f"{runs} seeds")
        reply = math.ceil(examples / self.clients / EXAMPLES_PER_UPDATE)
        per_round = int(rows[0]["clients_per_round"])
        return (FIT_UPDATES_PER_EXAMPLE * examples + schedule.rounds * per_round * runs * reply,
                f"a fit on {examples} examples, then the plan's T={schedule.rounds} × b={per_round} × {runs} seeds of "
                f"replies over {examples / self.clients:.0f} examples")

    def data(self) -> Dataset:
        """The plan's data, all of it training (as :meth:`Plan.data` loads it)."""
        X, y = Plan(dataset=self.dataset, n_samples=self.n_samples, n_features=self.n_features,
                    features=self.features, labels=self.labels).data()
        return Dataset(name=self.dataset, task=_task_of(np.asarray(y)), X_train=X, y_train=y, X_test=X[:0],
                       y_test=y[:0])

    def run(self, *, progress=None) -> Report:
        return claims_report(validate_schedule(
            schedule=self.loaded(), dataset=self.data(), clients=self.clients, seeds=self.seeds, progress=progress,
            clipping_norm=self.clipping_norm, learning_rate=self.learning_rate, decay=self.decay,
            step_rule=self.step_rule))


TASKS = (ValidatePlan,)
