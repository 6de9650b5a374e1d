"""Li et al.'s MAPA: the stage schedule, Theorem 1/3 sensitivity and noise, Theorem 2/4 bounds, privacy totals.

``fedplan mapa schedule|sensitivity|bound theorem2|bound theorem4|privacy`` run these (the MAPA page can build the
same requests); the work is done by :mod:`fedplan.planner.mapa`. Defaults are the paper's experimental settings
(li L415, L494): ε = 0.1 per upload, b = 12, σ = 30, L = 10, Theorem 3's δ = 1e-3, θ = 0.5, K = τ_max = 5, and the
paper's noise model (E‖η‖² = 2λ², li L744; ``noise_model="corrected"`` with ``model_dim`` N for the N(N+1)λ² of the
private mechanism).

    fedplan mapa schedule --iterations 25000 --initial-gap 1 --json
    fedplan mapa schedule --iterations 25000 --initial-gap 100 --out mapa.csv
    fedplan mapa sensitivity --failure-probability 1e-3
    fedplan mapa bound theorem4 --iterations 1000 --initial-gap 1 --noise-variance-bound 80.555556
    fedplan mapa privacy --iterations 25000
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass
from typing import ClassVar

from fedplan.bounds import mapa
from fedplan.bounds.composition import MAX_ADVANCED_EPSILON
from fedplan.planner import mapa as recipe
from fedplan.planner.export import FORMATS, check_schedule_file, write_schedule
from fedplan.planner.tasks.base import OneOf, Report, Request, choice, count, real, text

#: The paper's experimental settings (li L415, L437-447, L494), the defaults of every MAPA request.
PAPER_DEFAULTS = {"upload_epsilon": 0.1, "batch_size": 12, "gradient_std": 30.0, "smoothness": 10.0,
                  "failure_probability": 1e-3, "sensitivity_decay": 0.5, "max_staleness": 5, "edges": 5}


def upload_epsilon_field():
    return real((PAPER_DEFAULTS["upload_epsilon"],), help="ε of each upload (pure ε-DP, li Eq. (6)): one value, or "
                "one per edge; at most 700 (advanced composition's e^ε overflows above 709)", low=0.0, low_open=True,
                high=MAX_ADVANCED_EPSILON, multiple=True, deprecated=("--epsilon",))


def batch_size_field():
    return count(PAPER_DEFAULTS["batch_size"], help="mini-batch size b", low=1, deprecated=("-b",))


def gradient_std_field():
    return real(PAPER_DEFAULTS["gradient_std"], help="per-sample gradient std σ around the full gradient "
                "(Assumption 1, li Eq. (3)); not DP noise", low=0.0, high=mapa.MAX_GRADIENT_STD,
                deprecated=("--sigma",))


def smoothness_field():
    return real(PAPER_DEFAULTS["smoothness"], help="smoothness L (Lipschitz constant of the gradient)", low=0.0,
                low_open=True, deprecated=("-L",))


def failure_probability_field():
    return real(PAPER_DEFAULTS["failure_probability"], help="Theorem 3's δ: the Chebyshev probability that the "
                "sensitivity fails (li L279; not a DP δ)", low=0.0, high=1.0, low_open=True, high_open=True,
                deprecated=("--delta",))


def max_staleness_field():
    return count(PAPER_DEFAULTS["max_staleness"], help="largest staleness τ_max of an update (Assumption 2, li "
                 "L100)", low=0, deprecated=("--tau",))


def edges_field():
    return count(PAPER_DEFAULTS["edges"], help="number of edge servers K", low=1, deprecated=("--num-edges", "-K"))


def iterations_field(help="global iteration budget T (Cloud updates, one upload each)"):
    return count(..., help=help, low=1, deprecated=("-T",))


def noise_model_field():
    return choice("paper", help="paper: E||η||² = 2λ² (li L744); corrected: N(N+1)λ² for the noise of Eq. (6) on "
                  "R^N (needs model_dim)", choices=("paper", "corrected"))


def model_dim_field():
    return count(None, help="model dimension N (needed by noise_model corrected)", low=1)


def delta_slack_field():
    return real(1e-5, help="δ' of advanced composition (the per-edge total at δ')", low=0.0, high=1.0,
                low_open=True, high_open=True)


def gradient_bound_field(help):
    return real(None, help=help, low=0.0, low_open=True)


#: :mod:`bounds.mapa`'s parameter names that a MAPA request spells otherwise (its messages say the request's name).
FIELD_OF = {"sigma": "gradient_std", "theta": "sensitivity_decay", "delta_b": "noise_variance_bound",
            "num_edges": "edges"}
_BOUNDS_NAME = re.compile(rf"\b({'|'.join(FIELD_OF)})(?= = |$)")


@dataclass(frozen=True, kw_only=True)
class _MapaRequest(Request):
    """What every MAPA request shares: ε per upload (one or one per edge); ``answer()`` does the work."""

    upload_epsilon: tuple[float, ...] = upload_epsilon_field()

    @abc.abstractmethod
    def answer(self) -> Report:
        """The request's report (:meth:`run` turns an error of :mod:`bounds.mapa` into one naming its fields)."""

    def run(self, *, progress=None) -> Report:
        """:meth:`answer`, with an error of :mod:`bounds.mapa` (e.g. an overflow) naming this request's fields."""
        try:
            return self.answer()
        except ValueError as error:
            raise ValueError(_BOUNDS_NAME.sub(lambda match: FIELD_OF[match.group(1)], str(error))) from None

    def epsilon(self):
        """One ε, or the list of one per edge (as :mod:`bounds.mapa` takes it)."""
        return self.upload_epsilon[0] if len(self.upload_epsilon) == 1 else list(self.upload_epsilon)

    def check_edges(self) -> None:
        if len(self.upload_epsilon) not in (1, self.edges):
            raise ValueError(f"upload_epsilon must be one value or one value per edge ({self.edges}); got "
                             f"{len(self.upload_epsilon)} values")

    def check_noise_model(self) -> None:
        if self.noise_model == "corrected" and self.model_dim is None:
            raise ValueError("noise_model corrected needs model_dim N (E||eta||^2 = N(N+1) lambda^2); give model_dim "
                             "or noise_model paper")


@dataclass(frozen=True, kw_only=True)
class Schedule(_MapaRequest):
    """MAPA's stages (P, step size, length, sensitivity) until the iteration budget is spent."""

    command: ClassVar = ("mapa", "schedule")
    summary: ClassVar = "MAPA stages (P, step size, length, sensitivity) until T is spent"
    one_of: ClassVar = (OneOf(("initial_sensitivity", "initial_clipping_norm"), required=False),)

    iterations: int = iterations_field()
    initial_gap: float = real(..., help="F₀ = f(x₁) − f(x*) (never given in the paper; e.g. f(x₁) for a loss ≥ 0)",
                              low=0.0, low_open=True, deprecated=("--F0",))
    batch_size: int = batch_size_field()
    gradient_std: float = gradient_std_field()
    smoothness: float = smoothness_field()
    failure_probability: float = failure_probability_field()
    sensitivity_decay: float = real(PAPER_DEFAULTS["sensitivity_decay"], help="θ: each stage's sensitivity is θ "
                                    "times the last (Algorithm 1, li L379)", low=0.0, high=1.0, low_open=True,
                                    high_open=True, deprecated=("--theta",))
    max_staleness: int = max_staleness_field()
    edges: int = edges_field()
    noise_model: str = noise_model_field()
    model_dim: int | None = model_dim_field()
    initial_sensitivity: float | None = real(None, help="ΔS₀ instead of Theorem 3's", low=0.0, low_open=True)
    initial_clipping_norm: float | None = real(None, help="per-sample clip C₀ instead (ΔS₀ = 2C₀/b, li L442)",
                                               low=0.0, low_open=True, deprecated=("--initial-clip",))
    update_rule: str = choice("theta", help="theta: ΔS ← θΔS (Algorithm 1); theory: ΔS ← 2G'/b (li L320)",
                              choices=mapa.UPDATE_RULES)
    p_reference: str = choice("current", help="the ΔS in Eq. (16)'s P: the current stage's (current) or ΔS₀ "
                              "(initial, Table 2 literally)", choices=mapa.P_REFERENCES)
    delta_slack: float = delta_slack_field()
    out: str | None = text(None, help=f"also write the schedule ({', '.join(FORMATS)})", metavar="FILE")

    def check(self) -> None:
        self.check_edges()
        self.check_noise_model()
        if self.gradient_std == 0 and self.initial_sensitivity is None and self.initial_clipping_norm is None:
            raise ValueError("gradient_std must be > 0 for Theorem 3's initial sensitivity; got 0 (or give "
                             "initial_sensitivity or initial_clipping_norm)")
        if self.out is not None:
            check_schedule_file(self.out)

    def answer(self) -> Report:
        initial = self.initial_sensitivity
        if self.initial_clipping_norm is not None:
            initial = mapa.sensitivity_from_gradient_bound(gradient_bound=self.initial_clipping_norm,
                                                           batch_size=self.batch_size)
        plan = recipe.plan_mapa(epsilon=self.epsilon(), delta=self.failure_probability, sigma=self.gradient_std,
                                batch_size=self.batch_size, smoothness=self.smoothness,
                                max_staleness=self.max_staleness, theta=self.sensitivity_decay,
                                iterations=self.iterations, initial_gap=self.initial_gap, num_edges=self.edges,
                                noise_model=self.noise_model, model_dim=self.model_dim, initial_sensitivity=initial,
                                update_rule=self.update_rule, p_reference=self.p_reference,
                                delta_slack=self.delta_slack)
        summary = plan.summary()
        if self.out is not None:
            path = write_schedule(plan.schedule(), self.out, cumulative_epsilon=plan.cumulative_epsilon())
            summary = {"out": str(path), **summary}
            summary["statement"] = f"wrote {plan.result.iterations} iterations to {path}. " + summary["statement"]
        table = {key: value for key, value in summary.items() if key != "inputs"}
        table["stages"] = {row["index"]: (f"t = {row['start']}..{row['end']} ({row['iterations']} of T_s = "
                                          f"{row['length']}), P = {row['P']:.6g}, step {row['learning_rate']:.6g}, "
                                          f"sensitivity {row['sensitivity']:.6g}, clip {row['clipping_norm']:.6g}")
                           for row in summary["stages"]}
        return Report(values=summary, result=plan, table=table)


@dataclass(frozen=True, kw_only=True)
class Sensitivity(_MapaRequest):
    """ΔS by Theorem 3 (or 1), its inverse δ(ΔS), the noise and Δ_b."""

    command: ClassVar = ("mapa", "sensitivity")
    summary: ClassVar = "ΔS by Theorem 3 (or 1), its inverse δ(ΔS), noise and Δ_b"
    one_of: ClassVar = (OneOf(("sensitivity", "gradient_bound"), required=False),)

    batch_size: int = batch_size_field()
    gradient_std: float = gradient_std_field()
    failure_probability: float = failure_probability_field()
    sensitivity: float | None = real(None, help="a ΔS: report Theorem 3's δ for it (the inverse)", low=0.0,
                                     low_open=True)
    gradient_bound: float | None = gradient_bound_field("G ≥ every per-sample gradient norm: ΔS = 2G/b by "
                                                        "Theorem 1 (li L189) instead")
    noise_model: str = noise_model_field()
    model_dim: int | None = model_dim_field()

    def check(self) -> None:
        self.check_noise_model()
        if self.gradient_std == 0 and self.gradient_bound is None:
            raise ValueError("gradient_std must be > 0 for Theorem 3; got 0 (or give gradient_bound)")

    def answer(self) -> Report:
        result = recipe.mapa_sensitivity(epsilon=self.upload_epsilon, sigma=self.gradient_std,
                                         batch_size=self.batch_size, delta=self.failure_probability,
                                         sensitivity=self.sensitivity, gradient_bound=self.gradient_bound,
                                         noise_model=self.noise_model, model_dim=self.model_dim)
        return Report(values=result.summary(), result=result)


@dataclass(frozen=True, kw_only=True)
class _Bound(_MapaRequest):
    """A bound at Δ_b, given or from ΔS = 2G/b, σ, b and ε."""

    theorem: ClassVar[str] = ""

    iterations: int = iterations_field("iterations T")
    batch_size: int = batch_size_field()
    gradient_std: float = gradient_std_field()
    smoothness: float = smoothness_field()
    max_staleness: int = max_staleness_field()
    noise_variance_bound: float | None = real(None, help="Δ_b = σ²/b + E||η||², the variance bound of a noisy "
                                              "gradient (li Table 1, L203); default: from gradient_bound",
                                              low=0.0, deprecated=("--delta-b",))
    noise_model: str = noise_model_field()
    model_dim: int | None = model_dim_field()

    def check(self) -> None:
        if self.noise_variance_bound is None:
            if self.gradient_bound is None:
                raise ValueError("give noise_variance_bound, or gradient_bound G to compute it from ΔS = 2G/b, "
                                 "gradient_std, batch_size and upload_epsilon")
            self.check_noise_model()

    def bound_arguments(self) -> dict:
        return {}

    def answer(self) -> Report:
        result = recipe.mapa_bound(theorem=self.theorem, iterations=self.iterations, epsilon=self.upload_epsilon,
                                   sigma=self.gradient_std, batch_size=self.batch_size, smoothness=self.smoothness,
                                   max_staleness=self.max_staleness, delta_b=self.noise_variance_bound,
                                   gradient_bound=self.gradient_bound, noise_model=self.noise_model,
                                   model_dim=self.model_dim, **self.bound_arguments())
        return Report(values=result.summary(), result=result)


@dataclass(frozen=True, kw_only=True)
class BoundTheorem2(_Bound):
    """Theorem 2 (AUDP, convex): (1/T) Σ E f(x_t) − f* with the Eq. (10) step."""

    command: ClassVar = ("mapa", "bound", "theorem2")
    summary: ClassVar = "(1/T) Σ E f(x_t) − f* with the Eq. (10) step (Theorem 2, convex)"
    theorem: ClassVar = "theorem2"

    radius: float = real(..., help="R ≥ ||x_t − x*|| for every t (li L225)", low=0.0)
    gradient_bound: float = real(..., help="G ≥ ||∇f|| (li L225); also gives Δ_b from ΔS = 2G/b when "
                                 "noise_variance_bound is not given", low=0.0, low_open=True)
    variant: str = choice("corrected", help="corrected: re-derived (errata LI-6, LI-7); paper: as printed (li L231); "
                          "paper_log: printed with log T → 1 + log T", choices=mapa.THEOREM2_VARIANTS)

    def bound_arguments(self) -> dict:
        return {"radius": self.radius, "variant": self.variant}


@dataclass(frozen=True, kw_only=True)
class BoundTheorem4(_Bound):
    """Theorem 4 (constant step): (1/T) Σ E ||∇f(x_t)||²."""

    command: ClassVar = ("mapa", "bound", "theorem4")
    summary: ClassVar = "(1/T) Σ E ||∇f(x_t)||² with a constant step (Theorem 4)"
    theorem: ClassVar = "theorem4"

    initial_gap: float = real(..., help="F₀ = f(x₁) − f(x*)", low=0.0, deprecated=("--F0",))
    gradient_bound: float | None = gradient_bound_field("G ≥ every per-sample gradient norm: Δ_b from ΔS = 2G/b "
                                                        "when noise_variance_bound is not given")
    learning_rate: float | None = real(None, help="constant step γ (default 1/(2L(τ_max+1)), li Eq. (13))",
                                       low=0.0, low_open=True)

    def bound_arguments(self) -> dict:
        return {"initial_gap": self.initial_gap, "learning_rate": self.learning_rate}


@dataclass(frozen=True, kw_only=True)
class Privacy(_MapaRequest):
    """Total ε of T uploads: basic, per edge, advanced composition."""

    command: ClassVar = ("mapa", "privacy")
    summary: ClassVar = "total ε of T uploads: basic, per edge, advanced composition"

    iterations: int = iterations_field("iterations (uploads) T")
    edges: int = edges_field()
    delta_slack: float = delta_slack_field()

    def check(self) -> None:
        self.check_edges()

    def answer(self) -> Report:
        result = recipe.mapa_privacy(epsilon=self.epsilon(), iterations=self.iterations, num_edges=self.edges,
                                     delta_slack=self.delta_slack)
        return Report(values=result.summary(), result=result)


TASKS = (Schedule, Sensitivity, BoundTheorem2, BoundTheorem4, Privacy)
