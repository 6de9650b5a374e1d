"""One ε-first entry point over every planning recipe, for the app's planner page.

A user states a privacy budget (ε, δ), a data set split over clients and a compute budget (passes
over the data); :func:`plan` runs one recipe and answers with the same :class:`RecipeResult` shape
whatever the paper: headline numbers (rounds, noise, aggregated noise, ε claimed by the paper's bound
and by the tight accountant), every hypothesis checked, a :class:`planner.export.Schedule` ready for
export, and the privacy statement behind the numbers. The recipes themselves live in their own
modules (:mod:`planner.vandijk`, :mod:`planner.fedsgd_dpc`, ...); this module only maps the common
request onto each one's inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bounds.theorem import Hypothesis, all_hold
from bounds.validation import check_int, check_real
from planner.export import Schedule


@dataclass(frozen=True)
class PlanRequest:
    """The common, ε-first question: budget, data, clients, compute and batch size.

    ``batch_size`` is van Dijk's initial sample size s₀ and every other recipe's mini-batch.
    """

    target_epsilon: float
    target_delta: float
    X: np.ndarray
    y: np.ndarray
    clients: int
    epochs: float
    batch_size: int = 16
    dataset: str = "data"

    def __post_init__(self) -> None:
        check_real("target_epsilon", self.target_epsilon, low=0.0, low_open=True)
        check_real("target_delta", self.target_delta, low=0.0, high=1.0, low_open=True, high_open=True)
        check_int("clients", self.clients, low=1, high=self.examples)
        check_real("epochs", self.epochs, low=0.0, low_open=True)
        check_int("batch_size", self.batch_size, low=1, high=self.client_size)

    @property
    def examples(self) -> int:
        return int(self.X.shape[0])

    @property
    def client_size(self) -> int:
        """Records per client, N_c = ⌊N / clients⌋ (the smallest share of an even split)."""
        return self.examples // self.clients


@dataclass(frozen=True)
class RecipeResult:
    """A recipe's answer in the common shape the planner page shows."""

    recipe: str
    source: str
    headline: dict
    hypotheses: tuple[Hypothesis, ...]
    schedule: Schedule
    statement: str
    cumulative_epsilon: np.ndarray | None = None

    @property
    def hypotheses_hold(self) -> bool:
        return all_hold(self.hypotheses)


def plan_increasing_sizes(request: PlanRequest, *, p: float = 1.0, variant: str = "corrected") -> RecipeResult:
    """van Dijk et al.: the smallest σ whose claimed δ at ε meets the target (r0 = 1/e, the paper's choice)."""
    from planner.vandijk import plan_vandijk

    plan = plan_vandijk(initial_size=request.batch_size, client_size=request.client_size,
                        epsilon=request.target_epsilon, epochs=request.epochs, sigma_range=(1.2, 200.0),
                        delta=request.target_delta, p=p, r0=1 / math.e, variant=variant, with_pld=False)
    sel = plan.selection
    headline = {
        "rounds": plan.realised_rounds, "noise_multiplier": sel.sigma,
        "aggregated_noise": math.sqrt(plan.realised_rounds) * sel.sigma,
        "claimed_epsilon": sel.epsilon, "claimed_delta": sel.delta,
        "tight_epsilon": plan.tight_rdp.epsilon, "tight_accountant": "rdp",
        "first_sample_size": int(sel.sizes[0]), "last_sample_size": int(sel.sizes[-1]),
        "constant_size_rounds": sel.constant_rounds,
    }
    return RecipeResult(recipe="increasing-sizes", source=sel.source, headline=headline, hypotheses=sel.hypotheses,
                        schedule=plan.schedule(), statement=plan.statement(),
                        cumulative_epsilon=plan.cumulative_epsilon())


def plan_fedsgd_dpc_recipe(request: PlanRequest, *, regularization: float = 1e-3) -> RecipeResult:
    """Zhou et al.: T* and b* for per-client Laplace ε, constants estimated from the data (logistic model)."""
    from planner.estimate import estimate_constants
    from planner.fedsgd_dpc import plan_fedsgd_dpc

    constants = estimate_constants(X=request.X, y=request.y, model="logistic", regularization=regularization,
                                   clients=request.clients)
    problem_kwargs = constants.fedsgd_problem_kwargs()
    from bounds.fedsgd_dpc import Problem

    plan = plan_fedsgd_dpc(problem=Problem(**problem_kwargs), mechanism="laplace", epsilon=request.target_epsilon,
                           clipping_norm=constants.xi1, constants=constants.to_dict())
    choice = plan.choice
    headline = {
        "rounds": choice.rounds, "clients_per_round": choice.clients_per_round,
        "laplace_scale": plan.noise.get("scale"), "replies_per_client": choice.replies,
        "claimed_epsilon": request.target_epsilon, "claimed_delta": 0.0,
        "tight_epsilon": request.target_epsilon, "tight_accountant": "pure ε (basic composition is exact at δ = 0)",
        "bound": choice.bound,
    }
    return RecipeResult(recipe="fedsgd-dpc", source=choice.source, headline=headline, hypotheses=choice.hypotheses,
                        schedule=plan.schedule(), statement=plan.statement())


def plan_dpscd_recipe(request: PlanRequest) -> RecipeResult:
    """DP-SCD (Damaskinos ch. 6) over all N examples: the authors' MA128 σ, and the tight PLD ε of that schedule."""
    from bounds import accounting
    from planner.dpscd import plan_dpscd

    plan = plan_dpscd(target_epsilon=request.target_epsilon, target_delta=request.target_delta,
                      examples=request.examples, batch_size=request.batch_size, epochs=request.epochs,
                      accountant="ma128", compare=False)
    calibration = plan.calibration
    tight = accounting.get_epsilon(sample_rate=calibration.sample_rate, noise_multiplier=calibration.noise_multiplier,
                                   steps=calibration.steps, delta=request.target_delta, accountant="pld")
    headline = {
        "rounds": calibration.steps, "noise_multiplier": calibration.noise_multiplier,
        "aggregated_noise": math.sqrt(calibration.steps) * calibration.noise_multiplier,
        "claimed_epsilon": calibration.epsilon, "claimed_delta": request.target_delta,
        "tight_epsilon": tight.epsilon, "tight_accountant": f"{tight.accountant} (same σ, q, T)",
        "sample_rate": calibration.sample_rate,
    }
    return RecipeResult(recipe="dpscd", source=calibration.source, headline=headline,
                        hypotheses=calibration.hypotheses, schedule=plan.schedule(), statement=plan.statement())


#: Recipe name → (title, function of a PlanRequest).
RECIPES: dict[str, tuple[str, Callable[[PlanRequest], RecipeResult]]] = {
    "increasing-sizes": ("van Dijk et al.: increasing sample sizes", plan_increasing_sizes),
    "fedsgd-dpc": ("Zhou et al.: optimal T and b (FedSGD-DPC)", plan_fedsgd_dpc_recipe),
    "dpscd": ("Damaskinos: DP-SCD noise calibration", plan_dpscd_recipe),
}


def plan(recipe: str, request: PlanRequest) -> RecipeResult:
    """Run the named recipe (a key of :data:`RECIPES`) on the request."""
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {sorted(RECIPES)}; got {recipe!r}")
    return RECIPES[recipe][1](request)
