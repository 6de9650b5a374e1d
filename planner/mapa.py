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

from dataclasses import dataclass

import numpy as np

from fedplan.bounds import mapa
from fedplan.bounds.accounting import round_up
from fedplan.bounds.theorem import all_hold
from fedplan.planner.export import Schedule, package_versions

STAGE_FIELDS = ("index", "start", "end", "iterations", "length", "t0", "p_raw", "p", "clamped", "learning_rate",
                "sensitivity", "sensitivity_theory", "clipping_norm", "noise_scale", "delta_0", "delta_b",
                "gradient_norm_bound")


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

    def cumulative_epsilon(self) -> np.ndarray:
        """ε after each iteration by basic composition, t·max_k ε_k: valid for any upload pattern."""
        privacy = self.result.privacy
        return np.arange(1, privacy.iterations + 1) * max(privacy.per_iteration_epsilon)

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
        """One change-point per stage (rounds are 0-based: iteration t is round t − 1)."""
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
            "hypotheses": [h.to_dict() for h in res.hypotheses], "notes": list(res.notes),
            "versions": package_versions(),
        }
        return Schedule(rounds=res.iterations, change_points=points, metadata=metadata, statement=self.statement())

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
