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
from scipy.optimize import brentq

from fedplan.bounds import accounting
from fedplan.bounds import adp2sgd as xu
from fedplan.bounds.composition import best_composition, optimal_composition_epsilon
from fedplan.bounds.fedsgd_dpc import Problem
from fedplan.bounds.theorem import Hypothesis, all_hold
from fedplan.bounds.validation import check_int, check_real
from fedplan.planner.adp2sgd import plan_adp2sgd
from fedplan.planner.dpscd import plan_dpscd
from fedplan.planner.estimate import estimate_constants
from fedplan.planner.export import Schedule
from fedplan.planner.fedsgd_dpc import plan_fedsgd_dpc
from fedplan.planner.mapa import plan_mapa
from fedplan.planner.vandijk import plan_vandijk


@dataclass(frozen=True)
class RecipeInputs:
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


def plan_increasing_sizes(request: RecipeInputs, *, p: float = 1.0, variant: str = "corrected") -> RecipeResult:
    """van Dijk et al.: the smallest σ whose claimed δ at ε meets the target (r0 = 1/e, the paper's choice)."""
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


def plan_fedsgd_dpc_recipe(request: RecipeInputs, *, regularization: float = 1e-3) -> RecipeResult:
    """Zhou et al.: T* and b* for per-client Laplace ε, constants estimated from the data (logistic model)."""
    constants = estimate_constants(X=request.X, y=request.y, model="logistic", regularization=regularization,
                                   clients=request.clients)
    plan = plan_fedsgd_dpc(problem=Problem(**constants.fedsgd_problem_kwargs()), mechanism="laplace",
                           epsilon=request.target_epsilon, clipping_norm=constants.xi1, constants=constants.to_dict())
    choice = plan.choice
    if not choice.rounds:
        raise ValueError(f"FedSGD-DPC's optimum is T* = 0 rounds at target_epsilon = {request.target_epsilon:g} over "
                         f"{request.clients} clients: the Laplace noise outweighs what any round gains (zhou Solution "
                         "3, L365); raise target_epsilon or use more clients")
    headline = {
        "rounds": choice.rounds, "clients_per_round": choice.clients_per_round,
        "laplace_scale": plan.noise.get("scale"), "replies_per_client": choice.replies,
        "claimed_epsilon": request.target_epsilon, "claimed_delta": 0.0,
        "tight_epsilon": request.target_epsilon, "tight_accountant": "pure ε (basic composition is exact at δ = 0)",
        "bound": choice.bound,
    }
    return RecipeResult(recipe="fedsgd-dpc", source=choice.source, headline=headline, hypotheses=choice.hypotheses,
                        schedule=plan.schedule(), statement=plan.statement())


def plan_dpscd_recipe(request: RecipeInputs) -> RecipeResult:
    """DP-SCD (Damaskinos ch. 6) over all N examples: the authors' MA128 σ, and the tight PLD ε of that schedule."""
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


def _steps_for_epochs(request: RecipeInputs) -> int:
    """Iterations that process ``epochs`` passes over all N examples with one batch per iteration."""
    steps = math.floor(request.epochs * request.examples / request.batch_size)
    if steps < 1:
        raise ValueError(f"epochs = {request.epochs:g} over N = {request.examples} examples gives no full batch of "
                         f"{request.batch_size}; raise epochs or lower batch_size")
    return steps


def plan_adp2sgd_recipe(request: RecipeInputs) -> RecipeResult:
    """Xu et al. A(DP)²SGD: one worker per client, T = ⌊epochs·N/B⌋, Theorem 2's noise when it certifies ε.

    Below Theorem 2's floor the tight accountant's noise is used (``noise_source="auto"``) and the paper's
    claim is reported as none.
    """
    setting = xu.Setting(workers=request.clients, examples_per_worker=request.client_size,
                         batch_size=request.batch_size, steps=_steps_for_epochs(request), delta=request.target_delta)
    plan = plan_adp2sgd(setting=setting, target_epsilon=request.target_epsilon, noise_source="auto")
    headline = {
        "rounds": setting.steps, "noise_multiplier": plan.noise_multiplier,
        "aggregated_noise": math.sqrt(setting.steps) * plan.noise_multiplier,
        "claimed_epsilon": plan.certificate.epsilon if plan.feasible else None, "claimed_delta": setting.delta,
        "tight_epsilon": plan.tight.epsilon,
        "tight_accountant": f"{plan.tight.accountant}; {plan.tight.sampling}; replace-one neighbours",
        "noise_source": plan.noise_source, "per_worker_epsilon": plan.per_worker.epsilon,
    }
    return RecipeResult(recipe="adp2sgd", source=xu.SOURCE, headline=headline, hypotheses=tuple(plan.hypotheses),
                        schedule=plan.schedule(), statement=plan.statement(),
                        cumulative_epsilon=plan.cumulative_epsilon())


def _mapa_upload_epsilon(target_epsilon: float, uploads: int, delta: float) -> float:
    """The largest per-upload ε whose best classical per-edge total (basic or advanced at δ) is ≤ the target."""
    def excess(epsilon: float) -> float:
        return best_composition(epsilon=epsilon, delta=0.0, count=uploads, delta_slack=delta)[0] - target_epsilon

    upper = target_epsilon / uploads * 2
    while excess(upper) < 0:  # basic composition can be the best, then the root is target/uploads exactly
        upper *= 2
    root = brentq(excess, target_epsilon / uploads / 2, upper, xtol=1e-15, rtol=1e-14)
    while excess(root) > 0:
        root = math.nextafter(root, 0.0)
    return root


def plan_mapa_recipe(request: RecipeInputs) -> RecipeResult:
    """Li et al. MAPA: one edge per client, T = ⌊epochs·N/b⌋ uploads, per-upload ε from the per-edge budget.

    The paper's privacy is per upload; the per-upload ε is the largest whose classical per-edge total over
    ⌈T/edges⌉ round-robin uploads is ≤ ε (the claim), and the optimal composition of the same uploads is the
    tight ε. Both assume round-robin uploads: with edges of unequal speed the busiest edge uploads more than
    ⌈T/edges⌉ times (the simulation shows it) and its ε is larger. Paper settings otherwise (σ = 30, L = 10,
    θ = 0.5, τ = 5, Theorem 3 failure probability 1e-3), F₀ = 100 (the paper gives none), corrected noise
    model with the data's dimension.
    """
    steps = _steps_for_epochs(request)
    uploads = math.ceil(steps / request.clients)
    per_upload = _mapa_upload_epsilon(request.target_epsilon, uploads, request.target_delta)
    plan = plan_mapa(epsilon=per_upload, delta=1e-3, sigma=30.0, batch_size=request.batch_size, smoothness=10.0,
                     max_staleness=5, theta=0.5, iterations=steps, initial_gap=100.0, num_edges=request.clients,
                     noise_model="corrected", model_dim=int(request.X.shape[1]), delta_slack=request.target_delta)
    privacy = plan.result.privacy
    headline = {
        "rounds": steps, "stages": len(plan.result.stages), "per_upload_epsilon": per_upload,
        "claimed_epsilon": privacy.best_epsilon, "claimed_delta": privacy.best_delta,
        "tight_epsilon": optimal_composition_epsilon(epsilon=per_upload, count=max(privacy.uploads_per_edge),
                                                     delta=request.target_delta),
        "tight_accountant": (f"optimal composition (Kairouz et al.) of {uploads} uploads per edge, for neighbouring "
                             "mini-batches (the paper's relation; per record up to b times more, since batches are "
                             "drawn with replacement); assumes round-robin uploads (edges of equal speed)"),
    }
    return RecipeResult(recipe="mapa", source=plan.result.source, headline=headline,
                        hypotheses=tuple(plan.result.hypotheses), schedule=plan.schedule(),
                        statement=plan.statement())


#: Recipe name → (title, function of a RecipeInputs).
RECIPES: dict[str, tuple[str, Callable[[RecipeInputs], RecipeResult]]] = {
    "increasing-sizes": ("van Dijk et al.: increasing sample sizes", plan_increasing_sizes),
    "fedsgd-dpc": ("Zhou et al.: optimal T and b (FedSGD-DPC)", plan_fedsgd_dpc_recipe),
    "dpscd": ("Damaskinos: DP-SCD noise calibration", plan_dpscd_recipe),
    "adp2sgd": ("Xu et al.: A(DP)²SGD closed-form noise", plan_adp2sgd_recipe),
    "mapa": ("Li et al.: MAPA stage schedule", plan_mapa_recipe),
}


def plan(recipe: str, request: RecipeInputs) -> RecipeResult:
    """Run the named recipe (a key of :data:`RECIPES`) on the request."""
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {sorted(RECIPES)}; got {recipe!r}")
    return RECIPES[recipe][1](request)
