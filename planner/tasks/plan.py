"""The ε-first request: "I have (ε, δ), this data over these clients and this much compute: what do I run?"

``fedplan plan`` and the app's planner page run :class:`Plan`: one recipe of :mod:`fedplan.planner.recipes`
(van Dijk, Zhou, DP-SCD, Xu, Li) on the data, answered in one shape (rounds, noise, the ε the paper's bound
claims next to the tight ε of the same schedule, every hypothesis checked, a schedule to export).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from fedplan.bounds.sampling import SAMPLINGS
from fedplan.planner.datasets import synthetic_logistic
from fedplan.planner.export import FORMATS, check_export_options
from fedplan.planner.recipes import NOISE_CHOICES, RECIPES, RecipeInputs, RecipeResult, nearest_increasing_sizes
from fedplan.planner.simulate.data import SKLEARN_SETS, load_dataset
from fedplan.planner.tasks.accounting import target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import Report, Request, api_value, choice, count, flag, real, text
from fedplan.planner.tasks.practice import library_accountant_field, write_export
from fedplan.planner.uploads import dataset_from_upload

#: Largest target ε a plan accepts: above it the guarantee means nothing in practice (the accountant itself answers
#: far higher ε, bounds/accounting.py ``PLD_EPSILON_LIMIT``).
MAX_PLAN_EPSILON = 100.0


def _array(name: str, value) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite 1-d or 2-d array of numbers; got {type(value).__name__}") from None
    if array.ndim not in (1, 2) or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be a finite 1-d or 2-d array of numbers; got shape {array.shape}")
    array.setflags(write=False)
    return array


@dataclass(frozen=True, kw_only=True, eq=False)
class Plan(Request):
    """One recipe's plan for a privacy budget, data, clients and compute (requests holding arrays compare by
    identity)."""

    command: ClassVar = ("plan",)
    summary: ClassVar = "ε-first: what to run for (ε, δ), data, clients and compute, by one paper's recipe"

    recipe: str = choice("increasing-sizes", help="the paper's recipe: " + "; ".join(
        f"{name}: {title}" for name, (title, _) in RECIPES.items()), choices=tuple(RECIPES))
    target_epsilon: float = target_epsilon_field(1.0, high=MAX_PLAN_EPSILON)
    target_delta: float = target_delta_field(1e-6)
    dataset: str = text("synthetic", help="synthetic (logistic), a scikit-learn set (breast_cancer, digits, …) or a "
                        "LIBSVM file; with features/labels given, only the name shown")
    n_samples: int = count(50_000, help="examples of the synthetic data set", low=2, high=2_000_000)
    n_features: int = count(20, help="features of the synthetic data set", low=1, high=1000)
    clients: int = count(5, help="number of clients N (the data is split evenly)", low=1)
    epochs: float = real(2.5, help="compute budget: passes over each client's data", low=0.0, low_open=True)
    batch_size: int = count(16, help="mini-batch size per update (van Dijk: the initial sample size s₀)", low=1)
    features: np.ndarray | None = api_value(help="API only: the features, one row per example (instead of "
                                            "loading dataset)", checker=_array)
    labels: np.ndarray | None = api_value(help="API only: the labels of features", checker=_array)
    noise: str = choice("tight", help="tight: σ calibrated so that the tight ε of what runs is within 1 % below "
                        "the target (the paper's σ shown beside it); paper: run the paper's own σ",
                        choices=NOISE_CHOICES)
    sampling: str | None = choice(None, help="how records join a step in the run, which the tight ε accounts "
                                  "(default: the recipe's own: poisson for increasing-sizes and dpscd, fixed_size "
                                  "for adp2sgd; the Laplace recipes take none)", choices=SAMPLINGS)
    out: str | None = text(None, help="also write the schedule: .csv (one row per change, cumulative ε), .json, "
                           ".yaml, or a library's config with --format", metavar="FILE")
    format: str | None = choice(None, help="format of --out (default: from its ending): " + ", ".join(FORMATS),
                                choices=FORMATS)
    per_round: bool = flag(help="CSV: one row per round instead of one per change of parameters")
    library_accountant: str = library_accountant_field()

    def check(self) -> None:
        if (self.features is None) != (self.labels is None):
            raise ValueError("give features and labels together (or neither, to load dataset)")
        if self.features is not None and (self.features.ndim != 2 or self.labels.shape != self.features.shape[:1]):
            raise ValueError(f"features must be 2-d with one label per row; got features {self.features.shape} and "
                             f"labels {self.labels.shape}")
        check_export_options(self.out, fmt=self.format, per_round=self.per_round,
                             library_accountant=self.library_accountant)

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """The features and labels the recipe plans on."""
        if self.features is not None:
            return self.features, self.labels
        if self.dataset == "synthetic":
            return synthetic_logistic(self.n_samples, self.n_features, seed=0)
        if self.dataset in SKLEARN_SETS or Path(self.dataset).suffix.lower() != ".csv":
            data = load_dataset(self.dataset, test_fraction=0.0)
            return data.X_train, data.y_train
        return dataset_from_upload(Path(self.dataset).name, Path(self.dataset).read_bytes())

    def recipe_inputs(self) -> RecipeInputs:
        """The recipe's question: this request's budget, data, clients and compute."""
        features, labels = self.data()
        return RecipeInputs(target_epsilon=self.target_epsilon, target_delta=self.target_delta, X=features, y=labels,
                            clients=self.clients, epochs=self.epochs, batch_size=self.batch_size,
                            dataset=self.dataset, noise=self.noise, sampling=self.sampling)

    def nearest(self) -> dict[str, int | float]:
        """For a request its recipe finds no plan for: the nearest value of each input that has one, the others
        held (the planner page's one-click fixes). The increasing-sizes recipe searches
        (:func:`~fedplan.planner.recipes.nearest_increasing_sizes`); the others answer ``{}``."""
        if self.recipe != "increasing-sizes":
            return {}
        return nearest_increasing_sizes(self.recipe_inputs(), largest_epsilon=MAX_PLAN_EPSILON)

    def run(self, *, progress=None) -> Report:
        result = RECIPES[self.recipe][1](self.recipe_inputs())
        values = report_values(result)
        if self.out is not None:
            path, added, note = write_export(result.schedule, self.out, fmt=self.format, per_round=self.per_round,
                                             library_accountant=self.library_accountant)
            phases = len(result.schedule.change_points)
            values = {"out": str(path), **values, **added, "statement": f"wrote {result.schedule.rounds} rounds in "
                                                                        f"{phases} phase(s) to {path}{note}. "
                                                                        f"{values['statement']}"}
        return Report(values=values, result=result)


def report_values(result: RecipeResult) -> dict:
    """A recipe's answer as the JSON of ``fedplan plan``: the headline numbers, provenance, hypotheses."""
    return {"recipe": result.recipe, **result.headline, "source": result.source,
            "hypotheses_hold": result.hypotheses_hold, "hypotheses": [item.to_dict() for item in result.hypotheses],
            "notes": list(result.notes), "statement": result.statement}


TASKS = (Plan,)
