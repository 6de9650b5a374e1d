"""Plan MAPA (Li et al.): the multi-stage schedule of step size and sensitivity, with its privacy totals.

From the constants of Algorithm 1 (ε per edge, Theorem 3's δ, σ, b, L, τ_max, θ, the iteration budget T
and F₀ = f(x₁) − f(x*)) to the stages (P, γ, T_s, ΔS, clip C = bΔS/2, noise scale λ = ΔS/ε, Δ_b) until T
is spent, as a :class:`planner.export.Schedule` with one change-point per stage (CSV: one row per
iteration with the cumulative basic-composition ε; JSON/YAML: change-points, metadata and a privacy
statement).

Privacy model of every number (see :mod:`bounds.mapa`): each upload is pure ε_k-DP under the Eq. (6)
noise (density ∝ exp(−ε‖η‖/ΔS) on R^N) for replace-one neighbouring mini-batches, given per-sample
clipping at C_s; mini-batches are drawn with replacement, no subsampling amplification. The paper's
claim is per iteration; the totals are basic composition over all T iterations (any upload pattern)
and per edge (round-robin uploads) by basic and advanced composition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fedplan.bounds import mapa
from fedplan.bounds.accounting import round_up
from fedplan.bounds.theorem import all_hold
from fedplan.planner.display import theorem_fields
from fedplan.planner.export import Schedule, package_versions

STAGE_FIELDS = ("index", "start", "end", "iterations", "length", "t0", "p_raw", "p", "clamped", "learning_rate",
                "sensitivity", "sensitivity_theory", "clipping_norm", "noise_scale", "delta_0", "delta_b",
                "gradient_norm_bound")


@dataclass(frozen=True)
class BasicComposition(Sequence):
    """``(t + 1)·per_step`` for t < ``steps``: the ε after each of ``steps`` pure-DP releases by basic composition."""

    steps: int
    per_step: float

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, index: int) -> float:
        if not -self.steps <= index < self.steps:
            raise IndexError(index)
        return (index % self.steps + 1) * self.per_step


@dataclass(frozen=True)
class MapaPlan:
    """A MAPA stage schedule (:class:`bounds.mapa.MapaSchedule`) with its export and its statement."""

    result: mapa.MapaSchedule

    def stage_rows(self) -> list[dict]:
        """One dict per stage; ``P`` is the (clamped) P that sets γ, ``iterations`` the updates that run."""
        rows = []
        for stage in self.result.stages:
            row = {name: getattr(stage, name) for name in STAGE_FIELDS}
            row["P"] = row.pop("p")
            rows.append(row)
        return rows

    def cumulative_epsilon(self) -> BasicComposition:
        """ε after each iteration by basic composition, t·max_k ε_k: valid for any upload pattern (a sequence
        computed on access: a billion iterations cost no memory)."""
        privacy = self.result.privacy
        return BasicComposition(steps=privacy.iterations, per_step=max(privacy.per_iteration_epsilon))

    def statement(self) -> str:
        res, privacy = self.result, self.result.privacy
        inputs = res.inputs
        first, last = res.stages[0], res.stages[-1]
        start = ("Theorem 3 (failure probability delta = "
                 f"{inputs['delta']:g}: a Chebyshev estimate, not a DP delta; it never enters the totals)"
                 if inputs["initial_sensitivity"] is None else "the given initial sensitivity")
        worst = max(privacy.per_iteration_epsilon)
        return (
            f"MAPA (Li et al., Algorithm 1): {len(res.stages)} stages over T = {res.iterations} iterations, b = "
            f"{inputs['batch_size']}, step size {first.learning_rate:.4g} -> {last.learning_rate:.4g}, sensitivity "
            f"{first.sensitivity:.4g} -> {last.sensitivity:.4g} (start from {start}; noise model {res.noise_model}). "
            "Mechanism: each edge clips every per-sample gradient to C_s = b Delta S_s / 2, averages, and adds "
            "Laplace-type (L2) noise with density proportional to exp(-epsilon ||eta|| / Delta S_s) on R^N "
            f"(li Eq. (6)), so every upload is pure epsilon_k-DP (at most {worst:g}) for replace-one neighbouring "
            "mini-batches; mini-batches are drawn with replacement, no subsampling amplification. Per record of an "
            "edge's data the guarantee is weaker: a record drawn j times into a batch costs j*epsilon_k, at worst "
            f"b*epsilon_k = {mapa.per_record_upload_epsilon(epsilon=worst, batch_size=inputs['batch_size']):g} per "
            "upload, so every total below can be up to b times larger per record (group privacy). The paper's "
            "guarantee is per iteration (per upload); totals: basic composition over all "
            f"{privacy.iterations} iterations epsilon = {round_up(privacy.basic_epsilon, 6):g} (valid for any "
            "upload pattern); per edge with round-robin uploads (at most "
            f"{max(privacy.uploads_per_edge)} per edge) epsilon = {round_up(privacy.per_edge_epsilon, 6):g} "
            f"(basic) or {round_up(privacy.advanced_epsilon, 6):g} at delta = {privacy.advanced_delta:g} "
            "(advanced composition).")

    def schedule(self) -> Schedule:
        """One change-point per stage (rounds are 0-based: iteration t is round t − 1), with the privacy block of
        the busiest edge's uploads (round robin; the largest per-upload ε): pure ε by basic composition, for the
        paper's neighbouring mini-batches."""
        res = self.result
        points = tuple((stage.start - 1, {"stage": stage.index, "P": stage.p, "learning_rate": stage.learning_rate,
                                          "sensitivity": stage.sensitivity, "clipping_norm": stage.clipping_norm,
                                          "noise_scale": stage.noise_scale, "batch_size": res.inputs["batch_size"]})
                       for stage in res.stages)
        metadata = {
            "paper": mapa.PAPER, "source": res.source, "noise_model": res.noise_model, "variant": res.noise_model,
            "update_rule": res.update_rule, "p_reference": res.p_reference, "inputs": res.inputs,
            "stages": self.stage_rows(), "mechanism": mapa.MECHANISM,
            "neighboring_relation": mapa.NEIGHBORING_RELATION, "sampling": mapa.SAMPLING,
            "privacy_claim": "per iteration (per upload): pure epsilon_k-DP, delta = 0",
            "composition": self._composition(), "cumulative_epsilon_csv": "basic composition, t * max_k epsilon_k",
            "noise_scale": "Delta S_s / min_k epsilon_k (edge k uses Delta S_s / epsilon_k)",
            **theorem_fields(res.hypotheses), "notes": list(res.notes),
            "versions": package_versions(),
        }
        totals = res.privacy
        releases, per_release = max(totals.uploads_per_edge), max(totals.per_iteration_epsilon)
        privacy = {"mechanism": "laplace", "unit": "batch", "sampling": "none", "neighboring_relation": "replace_one",
                   "delta": 0.0, "epsilon": releases * per_release, "accountant": "basic", "bound": "upper bound",
                   "target_epsilon": None, "epsilon_per_release": per_release, "releases": releases}
        return Schedule(rounds=res.iterations, change_points=points, metadata=metadata, statement=self.statement(),
                        privacy=privacy)

    def _composition(self) -> dict:
        totals = self.result.privacy.to_dict()
        return {name: totals[name] for name in ("per_iteration_epsilon", "uploads_per_edge", "upload_pattern",
                                                "basic_epsilon", "per_edge_epsilon", "advanced_epsilon",
                                                "advanced_delta", "best_epsilon", "best_delta", "best_method",
                                                "source")}

    def summary(self) -> dict:
        """The JSON answer of ``fedplan mapa schedule``."""
        res = self.result
        return {
            "stages": self.stage_rows(), "num_stages": len(res.stages), "iterations": res.iterations,
            "truncated_last_stage": res.truncated, "noise_model": res.noise_model, "update_rule": res.update_rule,
            "p_reference": res.p_reference, "inputs": res.inputs, "privacy": self._composition(),
            "mechanism": mapa.MECHANISM, "neighboring_relation": mapa.NEIGHBORING_RELATION,
            "sampling": mapa.SAMPLING, "hypotheses": [h.to_dict() for h in res.hypotheses],
            "hypotheses_hold": all_hold(res.hypotheses), "notes": list(res.notes), "source": res.source,
            "statement": self.statement(),
        }


def plan_mapa(**kwargs) -> MapaPlan:
    """:func:`bounds.mapa.mapa_schedule` with the same keyword arguments, wrapped for export."""
    return MapaPlan(result=mapa.mapa_schedule(**kwargs))


def _smallest_epsilon(epsilon) -> float:
    """min_k ε_k of one ε or one per edge (the noise that reaches every edge's budget)."""
    return min(epsilon) if isinstance(epsilon, Sequence) and not isinstance(epsilon, str) else epsilon


@dataclass(frozen=True)
class MapaSensitivity:
    """ΔS (Theorem 3 from δ, given, or Theorem 1's 2G/b), the clip C = bΔS/2, the noise λ = ΔS/ε and Δ_b."""

    sensitivity: float
    method: str
    theorem3: mapa.Theorem3 | None
    noise: mapa.LaplaceNoise
    clipping_norm: float
    delta_b: float
    epsilon: float
    noise_model: str

    @property
    def failure_probability(self) -> float | None:
        return None if self.theorem3 is None or not self.theorem3.valid else self.theorem3.failure_probability

    def statement(self) -> str:
        failure = self.failure_probability
        failure_text = ("" if self.theorem3 is None else " Theorem 3: " + (
            f"the sensitivity fails with probability {failure:.6g} (Chebyshev over the samples, not a DP delta)."
            if failure is not None else "4 sigma^2/(b^2 Delta S^2) >= 1, Chebyshev bounds nothing: no delta."))
        return (f"Delta S = {self.sensitivity:.6g} ({self.method}); per-sample clip C = b Delta S / 2 = "
                f"{self.clipping_norm:.6g}; noise scale lambda = Delta S / epsilon = {self.noise.scale:.6g} makes each "
                f"upload pure {self.epsilon:g}-DP for replace-one neighbouring mini-batches." + failure_text)

    def summary(self) -> dict:
        """The JSON answer of ``fedplan mapa sensitivity``."""
        return {"sensitivity": self.sensitivity, "method": self.method, "failure_probability": self.failure_probability,
                "clipping_norm": self.clipping_norm, "noise_scale": self.noise.scale,
                "noise_second_moment": self.noise.second_moment, "noise_model": self.noise_model,
                "delta_b": self.delta_b, "epsilon": self.epsilon, "mechanism": mapa.MECHANISM,
                "neighboring_relation": mapa.NEIGHBORING_RELATION,
                "hypotheses": [] if self.theorem3 is None else [h.to_dict() for h in self.theorem3.hypotheses],
                "statement": self.statement()}


def mapa_sensitivity(*, epsilon, sigma: float, batch_size: int, delta: float, sensitivity: float | None = None,
                     gradient_bound: float | None = None, noise_model: str = "paper",
                     model_dim: int | None = None) -> MapaSensitivity:
    """ΔS by Theorem 3 from the failure probability ``delta`` (li Eq. (12) L279), or Theorem 3's δ for a given
    ``sensitivity`` (its inverse), or ΔS = 2G/b by Theorem 1 (li L189) for a ``gradient_bound`` G; then the noise at
    the smallest ε (one ε or one per edge) and Δ_b = σ²/b + E‖η‖² (:func:`bounds.mapa.delta_b`)."""
    if sensitivity is not None and gradient_bound is not None:
        raise ValueError("give sensitivity or gradient_bound, not both")
    if sensitivity is not None:
        theorem3 = mapa.theorem3_failure_probability(sigma=sigma, batch_size=batch_size, sensitivity=sensitivity)
        value, how = theorem3.sensitivity, "given"
    elif gradient_bound is not None:
        theorem3 = None
        value = mapa.sensitivity_from_gradient_bound(gradient_bound=gradient_bound, batch_size=batch_size)
        how = "Theorem 1: 2G/b (li L189)"
    else:
        theorem3 = mapa.theorem3_sensitivity(sigma=sigma, batch_size=batch_size, delta=delta)
        value, how = theorem3.sensitivity, "Theorem 3: admissible root of Eq. (12) (li L279)"
    epsilon = _smallest_epsilon(epsilon)
    noise = mapa.laplace_noise(sensitivity=value, epsilon=epsilon, noise_model=noise_model, model_dim=model_dim)
    return MapaSensitivity(
        sensitivity=value, method=how, theorem3=theorem3, noise=noise,
        clipping_norm=mapa.clipping_norm_from_sensitivity(sensitivity=value, batch_size=batch_size),
        delta_b=mapa.delta_b(sigma=sigma, batch_size=batch_size, sensitivity=value, epsilon=epsilon,
                             noise_model=noise_model, model_dim=model_dim),
        epsilon=noise.epsilon, noise_model=noise_model)


def delta_b_of_gradient_bound(*, gradient_bound: float, epsilon, sigma: float, batch_size: int,
                              noise_model: str = "paper", model_dim: int | None = None) -> float:
    """Δ_b = σ²/b + E‖η‖² at ΔS = 2G/b (Theorem 1) and the smallest ε (li L203)."""
    sensitivity = mapa.sensitivity_from_gradient_bound(gradient_bound=gradient_bound, batch_size=batch_size)
    return mapa.delta_b(sigma=sigma, batch_size=batch_size, sensitivity=sensitivity,
                        epsilon=_smallest_epsilon(epsilon), noise_model=noise_model, model_dim=model_dim)


THEOREMS = ("theorem2", "theorem4")


@dataclass(frozen=True)
class MapaBound:
    """Theorem 2 (convex, Eq. (10) step) or Theorem 4 (constant step) at Δ_b, with its statement."""

    theorem: str
    delta_b: float
    result: mapa.Theorem2Bound | mapa.Theorem4Bound

    def statement(self) -> str:
        result = self.result
        what = "(1/T) sum E f(x_t) - f(x*)" if self.theorem == "theorem2" else "(1/T) sum E ||grad f(x_t)||^2"
        failed = "; ".join(f"{h.name}: {h.detail}" for h in result.hypotheses if not h.holds)
        return (f"{what} <= {result.value:.6g} ({result.source})" if result.valid
                else f"no bound: a hypothesis fails ({failed})")

    def summary(self) -> dict:
        """The JSON answer of ``fedplan mapa bound theorem2|theorem4``."""
        return {"delta_b": self.delta_b, **self.result.to_dict(), "statement": self.statement()}


def mapa_bound(*, theorem: str, iterations: int, epsilon, sigma: float, batch_size: int, smoothness: float,
               max_staleness: int, delta_b: float | None = None, gradient_bound: float | None = None,
               noise_model: str = "paper", model_dim: int | None = None, radius: float | None = None,
               variant: str = "corrected", initial_gap: float | None = None,
               learning_rate: float | None = None) -> MapaBound:
    """Theorem 2 (``radius`` R and ``gradient_bound`` G needed, li L225-231) or Theorem 4 (``initial_gap`` F₀;
    γ = 1/(2L(τ_max+1)) unless ``learning_rate``, li Eq. (13)-(14)) at ``delta_b``, or at the Δ_b of
    ΔS = 2G/b and ε when ``delta_b`` is None (:func:`delta_b_of_gradient_bound`)."""
    if theorem not in THEOREMS:
        raise ValueError(f"theorem must be one of {', '.join(THEOREMS)}; got {theorem!r}")
    if delta_b is None:
        if gradient_bound is None:
            raise ValueError("give delta_b, or gradient_bound G to compute it from Delta S = 2G/b, sigma, b and "
                             "epsilon")
        delta_b = delta_b_of_gradient_bound(gradient_bound=gradient_bound, epsilon=epsilon, sigma=sigma,
                                            batch_size=batch_size, noise_model=noise_model, model_dim=model_dim)
    if theorem == "theorem2":
        if gradient_bound is None or radius is None:
            raise ValueError("theorem2 needs gradient_bound G (||grad f|| <= G, li L225) and radius R")
        result = mapa.theorem2_bound(iterations=iterations, radius=radius, gradient_bound=gradient_bound,
                                     smoothness=smoothness, max_staleness=max_staleness, delta_b=delta_b,
                                     variant=variant)
    else:
        if initial_gap is None:
            raise ValueError("theorem4 needs initial_gap F0 = f(x_1) - f(x*)")
        gamma = learning_rate
        if gamma is None:
            gamma = mapa.theorem4_max_learning_rate(smoothness=smoothness, max_staleness=max_staleness)
        result = mapa.theorem4_bound(iterations=iterations, learning_rate=gamma, initial_gap=initial_gap,
                                     delta_b=delta_b, smoothness=smoothness, max_staleness=max_staleness)
    return MapaBound(theorem=theorem, delta_b=delta_b, result=result)


@dataclass(frozen=True)
class MapaPrivacy:
    """Total ε of T uploads, each pure ε_k-DP: basic, per edge (round robin), advanced composition."""

    totals: mapa.CompositionTotals

    def statement(self) -> str:
        totals = self.totals
        return (
            f"Each upload is pure epsilon-DP (replace-one mini-batches; the paper's claim is per iteration). Over "
            f"{totals.iterations} iterations: basic composition {round_up(totals.basic_epsilon, 6):g} (any upload "
            f"pattern); per edge with round-robin uploads ({max(totals.uploads_per_edge)}): "
            f"{round_up(totals.per_edge_epsilon, 6):g} (basic), {round_up(totals.advanced_epsilon, 6):g} at delta = "
            f"{totals.advanced_delta:g} (advanced).")

    def summary(self) -> dict:
        """The JSON answer of ``fedplan mapa privacy``."""
        return {**self.totals.to_dict(), "statement": self.statement()}


def mapa_privacy(*, epsilon, iterations: int, num_edges: int, delta_slack: float = 1e-5) -> MapaPrivacy:
    """:func:`bounds.mapa.composition_totals` (``epsilon`` one value or one per edge) with its statement."""
    return MapaPrivacy(totals=mapa.composition_totals(epsilon=epsilon, iterations=iterations, num_edges=num_edges,
                                                      delta_slack=delta_slack))
