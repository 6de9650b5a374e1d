"""Benchmark: ε and σ calibration for every sampling, fedplan against dp-accounting on the same mechanism.

For each sampling × neighbouring relation of ``bounds/sampling.py`` that dp-accounting can express as a
``DpEvent``, both libraries account the same mechanism in the same run (fedplan's noise_multiplier σ is
noise std / clipping norm; docs/SAMPLING.md for the sensitivity convention):

==============================  ===========================================================================
fedplan                         dp-accounting anchor
==============================  ===========================================================================
poisson / add_or_remove_one     ``PLDAccountant(ADD_OR_REMOVE_ONE)``, ``PoissonSampledDpEvent(q, Gaussian(σ))``
poisson / replace_one           ``PLDAccountant(REPLACE_ONE)``, the same event
fixed_size / add_or_remove_one  ``PLDAccountant(ADD_OR_REMOVE_ONE)``, ``PoissonSampledDpEvent(m/N, Gaussian(σ/2))``
fixed_size / replace_one (RDP)  ``RdpAccountant(REPLACE_ONE)``, ``SampledWithoutReplacementDpEvent(N, m,
                                Gaussian(σ/2))``; fedplan's (tighter) PLD has no event: its ε and σ are
                                reported next to the RDP ones
with_replacement / add_or_rem.  ``PLDAccountant(ADD_OR_REMOVE_ONE)``, ``MixtureOfGaussiansDpEvent(σ, [2k],
                                Binomial(s, 1/N) pmf)`` truncated as ``sampling._binomial_mixture`` does
shuffle / either                ``PLDAccountant(ADD_OR_REMOVE_ONE)``, ``SelfComposedDpEvent(Gaussian(σ /
                                sensitivity), participations)``: the no-amplification bound fedplan reports
==============================  ===========================================================================

Each event is composed T times (``SelfComposedDpEvent``). The anchor is what a user reaches for:
``accountant.compose(event).get_epsilon(δ)`` and ``mechanism_calibration.calibrate_dp_mechanism`` with the
accountant's defaults (PLD spacing 1e-4, tolerance 1e-6). Calibration gets the explicit bracket
[σ_fedplan / 2, 2 σ_fedplan], which saves dp-accounting its bracket search (it favours the anchor).
fedplan is timed cold: its memoised answers and its argument-keyed single-step caches are cleared first.

The ε ratio compares fedplan's ε with dp-accounting's on a grid at least as fine: at spacing
min(1e-4, h/2) where fedplan answered by PLD at spacing h (both pessimistic, so a finer grid can only
lower dp-accounting's number); the RDP anchor for RDP rows; dp-accounting's exact Gaussian profile for
shuffle. A ratio below 1 is flagged. For calibration the ratio is fedplan's ε at its σ over that reference
ε at the same σ, and σ_fedplan / σ_dp-accounting is recorded.

    python benchmarks/sampling.py                   # the full grid (about 8 minutes on 2 cores)
    python benchmarks/sampling.py --sampling poisson/replace_one --epsilon-point 0.01,2,100 --no-calibration
    python benchmarks/sampling.py --json results.json
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from dp_accounting import dp_event, mechanism_calibration  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_mechanism  # noqa: E402
from dp_accounting.privacy_accountant import NeighboringRelation  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402
from scipy import optimize, stats  # noqa: E402

from fedplan.bounds import accounting, sampling  # noqa: E402

DATASET_SIZE = 10_000
DELTA = 1e-5
#: (q, σ, T) for ε; (target ε, q, T) for σ calibration.
EPSILON_GRID = list(itertools.product((1e-3, 1e-2, 1e-1), (0.8, 2.0, 8.0), (100, 10_000)))
#: T = 100 is left out of calibration to keep the run near 10 minutes on 2 cores: dp-accounting takes
#: 5–28 s per calibration there (small σ), where fedplan's Poisson calibration takes 0.1–0.2 s.
CALIBRATION_GRID = list(itertools.product((1.0, 8.0), (1e-3, 1e-2, 1e-1), (10_000,)))
#: dp-accounting builds a mixture-of-Gaussians PLD slowly at small σ (41 s at q = 0.001, σ = 0.8, T = 1e4;
#: 225 s at q = 0.1, σ = 0.8, T = 100), so with_replacement leaves out σ = 0.8 and calibrates one point
#: whose σ is large. q = 0.1 (s = 1000 draws) stays in: fedplan refuses it (mixture component limit).
WITH_REPLACEMENT_EPSILON_GRID = tuple(itertools.product((1e-3, 1e-2, 1e-1), (2.0, 8.0), (100, 10_000)))
WITH_REPLACEMENT_CALIBRATION_GRID = ((1.0, 1e-2, 10_000), (1.0, 1e-1, 10_000))
#: Shuffle leaves out σ = 0.8 at T = 1e4 (ε from 24 to 2000): dp-accounting's Gaussian PLD at spacing 1e-4 takes
#: up to 107 s there (ε ≈ 2000), fedplan's closed form microseconds.
SHUFFLE_EPSILON_GRID = tuple(point for point in EPSILON_GRID if point[1:] != (0.8, 10_000))
DEFAULT_SPACING = 1e-4
#: Per-step tail of K ~ Binomial(s, 1/N) that fedplan leaves out of a with-replacement mixture (÷ T).
MIXTURE_TAIL = 1e-24
#: Below this, fedplan is "not much faster" and the point is listed for attention; also over this many seconds.
ATTENTION_SPEED_RATIO = 10.0
ATTENTION_SECONDS = 1.0


# ------------------------------------------------------------------------------------------------
# The mechanisms, as dp-accounting events
# ------------------------------------------------------------------------------------------------


def binomial_mixture(draws: int, dataset_size: int, steps: int) -> tuple[list[float], list[float]]:
    """Sensitivities 2k, k = 0 … k_max, and renormalised Binomial(s, 1/N) probabilities, where k_max is
    the smallest k with P(K > k) ≤ 1e-24 / T (the truncation of ``sampling._binomial_mixture``)."""
    law = stats.binom(draws, 1 / dataset_size)
    tail = MIXTURE_TAIL / max(steps, 1)
    top = 0
    while top < draws and law.sf(top) > tail:
        top += 1
    ks = np.arange(top + 1)
    probs = law.pmf(ks)
    keep = probs > 0
    probs = probs[keep] / probs[keep].sum()
    return [float(2 * k) for k in ks[keep]], [float(p) for p in probs]


@dataclass(frozen=True)
class Case:
    """One sampling × neighbouring relation: fedplan's call and dp-accounting's accountant and event."""

    sampling: str
    neighboring_relation: str
    fedplan_accountant: str  # what fedplan is asked for ("pld", "rdp"; shuffle answers "exact")
    anchor: str  # "pld" or "rdp": dp-accounting's accountant
    anchor_relation: NeighboringRelation
    #: (q, σ, T, N) -> the composed event dp-accounting accounts.
    event: Callable[[float, float, int, int], dp_event.DpEvent]
    description: str
    #: Also time fedplan's PLD here (a bound dp-accounting has no event for).
    extra_pld: bool = False
    #: Grids for this case when the default grid would take dp-accounting too long (None: the default).
    epsilon_grid: tuple | None = None
    calibration_grid: tuple | None = None

    @property
    def name(self) -> str:
        return f"{self.sampling}/{self.neighboring_relation}"

    def accountant(self, spacing: float = DEFAULT_SPACING):
        if self.anchor == "rdp":
            return rdp_privacy_accountant.RdpAccountant(neighboring_relation=self.anchor_relation)
        return pld_privacy_accountant.PLDAccountant(self.anchor_relation, value_discretization_interval=spacing)

    def epsilon(self, q: float, sigma: float, steps: int, spacing: float = DEFAULT_SPACING) -> float:
        return self.accountant(spacing).compose(self.event(q, sigma, steps, DATASET_SIZE)).get_epsilon(DELTA)


def _poisson(q, sigma, steps, size):
    return dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)


def _fixed_size_add_remove(q, sigma, steps, size):
    return _poisson(q, sigma / 2, steps, size)


def _fixed_size_replace(q, sigma, steps, size):
    return dp_event.SelfComposedDpEvent(dp_event.SampledWithoutReplacementDpEvent(
        size, round(q * size), dp_event.GaussianDpEvent(sigma / 2)), steps)


def _with_replacement(q, sigma, steps, size):
    sensitivities, probs = binomial_mixture(round(q * size), size, steps)
    return dp_event.SelfComposedDpEvent(dp_event.MixtureOfGaussiansDpEvent(sigma, sensitivities, probs), steps)


def _shuffle(sensitivity):
    def event(q, sigma, steps, size):
        return dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(sigma / sensitivity),
                                            sampling.participations(q, steps))
    return event


ADD, REPLACE = NeighboringRelation.ADD_OR_REMOVE_ONE, NeighboringRelation.REPLACE_ONE
CASES = [
    Case("poisson", "add_or_remove_one", "pld", "pld", ADD, _poisson,
         "PLD(ADD_OR_REMOVE_ONE) + PoissonSampled(q, Gaussian(σ))"),
    Case("poisson", "replace_one", "pld", "pld", REPLACE, _poisson,
         "PLD(REPLACE_ONE) + PoissonSampled(q, Gaussian(σ))"),
    Case("fixed_size", "add_or_remove_one", "pld", "pld", ADD, _fixed_size_add_remove,
         "PLD(ADD_OR_REMOVE_ONE) + PoissonSampled(m/N, Gaussian(σ/2))"),
    Case("fixed_size", "replace_one", "rdp", "rdp", REPLACE, _fixed_size_replace,
         "RDP(REPLACE_ONE) + SampledWithoutReplacement(N, m, Gaussian(σ/2))", extra_pld=True),
    Case("with_replacement", "add_or_remove_one", "pld", "pld", ADD, _with_replacement,
         "PLD(ADD_OR_REMOVE_ONE) + MixtureOfGaussians(σ, 2k, Binomial(s, 1/N))",
         epsilon_grid=WITH_REPLACEMENT_EPSILON_GRID, calibration_grid=WITH_REPLACEMENT_CALIBRATION_GRID),
    Case("shuffle", "add_or_remove_one", "pld", "pld", ADD, _shuffle(1.0),
         "PLD(ADD_OR_REMOVE_ONE) + Gaussian(σ) × participations", epsilon_grid=SHUFFLE_EPSILON_GRID),
    Case("shuffle", "replace_one", "pld", "pld", ADD, _shuffle(2.0),
         "PLD(ADD_OR_REMOVE_ONE) + Gaussian(σ/2) × participations", epsilon_grid=SHUFFLE_EPSILON_GRID),
]


def exact_shuffle_epsilon(case: Case, q: float, sigma: float, steps: int) -> float:
    """dp-accounting's exact Gaussian profile for the composed shuffle event (no discretisation)."""
    sensitivity = 1.0 if case.neighboring_relation == "add_or_remove_one" else 2.0
    deviation = sigma / (sensitivity * math.sqrt(sampling.participations(q, steps)))
    loss = privacy_loss_mechanism.GaussianPrivacyLoss(deviation)
    gap = lambda epsilon: loss.get_delta_for_epsilon(epsilon) - DELTA  # noqa: E731
    if gap(0.0) <= 0:
        return 0.0
    high = 1.0
    while gap(high) > 0:
        high *= 2
    return optimize.brentq(gap, 0.0, high, xtol=1e-15, rtol=1e-14)


#: dp-accounting's default RDP orders with every integer order up to 256 added (fedplan's orders for
#: sampling without replacement): dp-accounting's defaults jump from 63 to 128 to 256, which alone makes
#: its ε up to ~1.8× larger for small ε.
FINE_RDP_ORDERS = np.array(sorted(set(rdp_privacy_accountant.DEFAULT_RDP_ORDERS) | set(range(2, 257))), dtype=float)


@functools.lru_cache(maxsize=64)
def _wor_rdp_one_step(q: float, sigma: float) -> np.ndarray:
    """dp-accounting's one-step RDP of SampledWithoutReplacement(N, m, Gaussian(σ)) at FINE_RDP_ORDERS: the
    function its RdpAccountant calls for this event, kept per (q, σ) so that each T costs a product."""
    return rdp_privacy_accountant._compute_rdp_sample_wor_gaussian(q, sigma, FINE_RDP_ORDERS)


def fine_rdp_epsilon(q: float, sigma: float, steps: int) -> float:
    """dp-accounting's ε for T steps of the fixed-size/replace-one event at every order in FINE_RDP_ORDERS."""
    m = round(q * DATASET_SIZE)
    rdp = steps * _wor_rdp_one_step(m / DATASET_SIZE, sigma / 2)
    return float(rdp_privacy_accountant.compute_epsilon(FINE_RDP_ORDERS, rdp, DELTA)[0])


def reference_epsilon(case: Case, q: float, sigma: float, steps: int, fedplan_result, anchor_epsilon=None):
    """dp-accounting's ε on a grid at least as fine as fedplan's (see the module docstring), and its spacing."""
    if case.sampling == "shuffle":
        return exact_shuffle_epsilon(case, q, sigma, steps), "exact"
    if case.anchor == "rdp":
        return fine_rdp_epsilon(q, sigma, steps), "rdp, all orders ≤ 256"
    spacing = DEFAULT_SPACING
    if fedplan_result.accountant == "pld" and fedplan_result.pld_spacing is not None:
        spacing = min(DEFAULT_SPACING, fedplan_result.pld_spacing / 2)
    if spacing == DEFAULT_SPACING and anchor_epsilon is not None:
        return anchor_epsilon, spacing
    return case.epsilon(q, sigma, steps, spacing), spacing


# ------------------------------------------------------------------------------------------------
# Measurements
# ------------------------------------------------------------------------------------------------


def cold() -> None:
    """Forget fedplan's memoised answers and the single-step caches keyed by the call's arguments."""
    accounting.clear_cache()


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start


def fedplan_epsilon(case: Case, q: float, sigma: float, steps: int, accountant: str):
    cold()
    return timed(accounting.get_epsilon, delta=DELTA, sample_rate=q, noise_multiplier=sigma, steps=steps,
                 accountant=accountant, sampling=case.sampling, neighboring_relation=case.neighboring_relation,
                 dataset_size=DATASET_SIZE, time_budget=None)


def fedplan_sigma(case: Case, epsilon: float, q: float, steps: int, accountant: str):
    cold()
    return timed(accounting.calibrate_noise_multiplier, target_epsilon=epsilon, target_delta=DELTA,
                 sample_rate=q, steps=steps, accountant=accountant, sampling=case.sampling,
                 neighboring_relation=case.neighboring_relation, dataset_size=DATASET_SIZE, time_budget=None)


def dp_accounting_sigma(case: Case, epsilon: float, q: float, steps: int, guess: float) -> float:
    """dp-accounting's own calibration of the same event (accountant defaults, bracket around ``guess``)."""
    return mechanism_calibration.calibrate_dp_mechanism(
        case.accountant, lambda sigma: case.event(q, sigma, steps, DATASET_SIZE), epsilon, DELTA,
        bracket_interval=mechanism_calibration.ExplicitBracketInterval(guess / 2, guess * 2))


def refused(kind: str, case: Case, point: dict, error: ValueError) -> dict:
    """A point fedplan refuses (e.g. a with-replacement mixture over its component limit): no comparison."""
    return {"kind": kind, "sampling": case.sampling, "neighboring_relation": case.neighboring_relation, **point,
            "delta": DELTA, "refused": str(error)}


def measure_epsilon(case: Case, q: float, sigma: float, steps: int) -> dict:
    try:
        ours, ours_seconds = fedplan_epsilon(case, q, sigma, steps, case.fedplan_accountant)
    except ValueError as error:
        return refused("epsilon", case, {"sample_rate": q, "noise_multiplier": sigma, "steps": steps}, error)
    theirs, theirs_seconds = timed(case.epsilon, q, sigma, steps)
    (reference, reference_spacing), reference_seconds = timed(reference_epsilon, case, q, sigma, steps, ours, theirs)
    if not isinstance(reference_spacing, float) or reference_spacing == DEFAULT_SPACING:
        reference_seconds = theirs_seconds  # PLD rows only: the anchor is fine enough, or RDP/exact reference
    row = {
        "kind": "epsilon", "sampling": case.sampling, "neighboring_relation": case.neighboring_relation,
        "sample_rate": q, "noise_multiplier": sigma, "steps": steps, "delta": DELTA,
        "epsilon_ours": ours.epsilon, "accountant_ours": ours.accountant, "spacing_ours": ours.pld_spacing,
        "fallback_reason": ours.fallback_reason,
        "epsilon_theirs": theirs, "epsilon_reference": reference, "reference_spacing": reference_spacing,
        "epsilon_ratio": ours.epsilon / reference, "epsilon_ratio_anchor": ours.epsilon / theirs,
        "seconds_ours": ours_seconds, "seconds_theirs": theirs_seconds, "speed_ratio": theirs_seconds / ours_seconds,
        # dp-accounting on the finer grid, where one was needed: its time for fedplan's accuracy.
        "seconds_reference": reference_seconds, "speed_ratio_matched": reference_seconds / ours_seconds,
    }
    if case.extra_pld:
        pld_result, pld_seconds = fedplan_epsilon(case, q, sigma, steps, "pld")
        row.update(epsilon_pld_ours=pld_result.epsilon, accountant_pld_ours=pld_result.accountant,
                   seconds_pld_ours=pld_seconds, pld_over_theirs=pld_result.epsilon / theirs,
                   pld_speed_ratio=theirs_seconds / pld_seconds)
    return row


def measure_calibration(case: Case, epsilon: float, q: float, steps: int) -> dict:
    try:
        ours, ours_seconds = fedplan_sigma(case, epsilon, q, steps, case.fedplan_accountant)
    except ValueError as error:
        return refused("calibration", case, {"target_epsilon": epsilon, "sample_rate": q, "steps": steps}, error)
    theirs, theirs_seconds = timed(dp_accounting_sigma, case, epsilon, q, steps, ours.value)
    # dp-accounting's ε at our σ, on a grid at least as fine as ours.
    reference, reference_spacing = reference_epsilon(case, q, ours.value, steps, ours)
    row = {
        "kind": "calibration", "sampling": case.sampling, "neighboring_relation": case.neighboring_relation,
        "target_epsilon": epsilon, "sample_rate": q, "steps": steps, "delta": DELTA,
        "sigma_ours": ours.value, "sigma_theirs": theirs, "sigma_ratio": ours.value / theirs,
        "epsilon_ours": ours.epsilon, "accountant_ours": ours.accountant, "spacing_ours": ours.pld_spacing,
        "fallback_reason": ours.fallback_reason,
        "epsilon_reference": reference, "reference_spacing": reference_spacing,
        "epsilon_ratio": ours.epsilon / reference, "reference_within_target": reference <= epsilon,
        "seconds_ours": ours_seconds, "seconds_theirs": theirs_seconds, "speed_ratio": theirs_seconds / ours_seconds,
    }
    if case.extra_pld:
        pld_result, pld_seconds = fedplan_sigma(case, epsilon, q, steps, "pld")
        row.update(sigma_pld_ours=pld_result.value, accountant_pld_ours=pld_result.accountant,
                   seconds_pld_ours=pld_seconds, pld_sigma_over_theirs=pld_result.value / theirs,
                   pld_speed_ratio=theirs_seconds / pld_seconds)
    return row


def below(row: dict) -> bool:
    """fedplan's ε under dp-accounting's on a grid at least as fine (beyond float rounding)."""
    return "refused" not in row and row["epsilon_ratio"] < 1 - 1e-9


def attention(row: dict) -> bool:
    return "refused" not in row and (row["speed_ratio"] < ATTENTION_SPEED_RATIO
                                     or row["seconds_ours"] > ATTENTION_SECONDS)


# ------------------------------------------------------------------------------------------------
# Summary
# ------------------------------------------------------------------------------------------------


def _speed(rows: list[dict], ratio="speed_ratio", seconds="seconds_ours") -> dict | None:
    if not rows:
        return None
    ratios = [row[ratio] for row in rows]
    return {"points": len(rows), "median_speed_ratio": statistics.median(ratios), "worst_speed_ratio": min(ratios),
            "max_seconds_ours": max(row[seconds] for row in rows),
            "max_seconds_theirs": max(row["seconds_theirs"] for row in rows)}


def summarise(rows: list[dict]) -> dict:
    summary = {}
    for case in CASES:
        everything = [row for row in rows if (row["sampling"], row["neighboring_relation"]) ==
                      (case.sampling, case.neighboring_relation)]
        mine = [row for row in everything if "refused" not in row]
        if not mine:
            if everything:
                summary[case.name] = {"anchor": case.description, "refused": len(everything)}
            continue
        eps_rows = [row for row in mine if row["kind"] == "epsilon"]
        cal_rows = [row for row in mine if row["kind"] == "calibration"]
        entry = {
            "anchor": case.description,
            "epsilon": _speed(eps_rows), "calibration": _speed(cal_rows),
            "min_epsilon_ratio": min(row["epsilon_ratio"] for row in mine),
            "max_epsilon_ratio": max(row["epsilon_ratio"] for row in mine),
            "below": len([row for row in mine if below(row)]),
            "accountants_ours": sorted({row["accountant_ours"] for row in mine}),
            "refused": len(everything) - len(mine),
        }
        if eps_rows:
            matched = [row["speed_ratio_matched"] for row in eps_rows]
            entry.update(min_epsilon_ratio_anchor=min(row["epsilon_ratio_anchor"] for row in eps_rows),
                         max_epsilon_ratio_anchor=max(row["epsilon_ratio_anchor"] for row in eps_rows),
                         median_speed_ratio_matched=statistics.median(matched), worst_speed_ratio_matched=min(matched))
        if cal_rows:
            entry.update(min_sigma_ratio=min(row["sigma_ratio"] for row in cal_rows),
                         max_sigma_ratio=max(row["sigma_ratio"] for row in cal_rows),
                         all_reference_within_target=all(row["reference_within_target"] for row in cal_rows))
        if case.extra_pld:
            entry["pld"] = {
                "epsilon": _speed(eps_rows, "pld_speed_ratio", "seconds_pld_ours"),
                "calibration": _speed(cal_rows, "pld_speed_ratio", "seconds_pld_ours"),
                "epsilon_over_theirs": [min(r["pld_over_theirs"] for r in eps_rows),
                                        max(r["pld_over_theirs"] for r in eps_rows)] if eps_rows else None,
                "sigma_over_theirs": [min(r["pld_sigma_over_theirs"] for r in cal_rows),
                                      max(r["pld_sigma_over_theirs"] for r in cal_rows)] if cal_rows else None,
            }
        summary[case.name] = entry
    return summary


def _cell(speed: dict | None) -> tuple[str, str]:
    if speed is None:
        return "–", "–"
    return (f"{speed['median_speed_ratio']:.1f}× / {speed['worst_speed_ratio']:.1f}×",
            f"{speed['max_seconds_ours']:.3f}")


def markdown_table(summary: dict) -> str:
    lines = ["| sampling / relation | ε speed ratio median / worst | ε: slowest fedplan s | "
             "σ speed ratio median / worst | σ: slowest fedplan s | ε_fedplan / ε_dp-acc (min – max) | "
             "σ_fedplan / σ_dp-acc (min – max) | below | refused |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, entry in summary.items():
        if "min_epsilon_ratio" not in entry:
            lines.append(f"| {name} | – | – | – | – | – | – | – | {entry['refused']} |")
            continue
        eps, eps_time = _cell(entry["epsilon"])
        cal, cal_time = _cell(entry["calibration"])
        sigma = (f"{entry['min_sigma_ratio']:.5f} – {entry['max_sigma_ratio']:.5f}"
                 if "min_sigma_ratio" in entry else "–")
        accountant = "RDP" if "rdp" in entry["accountants_ours"] and len(entry["accountants_ours"]) == 1 else ""
        label = f"{name}{' (' + accountant + ')' if accountant else ''}"
        lines.append(f"| {label} | {eps} | {eps_time} | {cal} | {cal_time} | "
                     f"{entry['min_epsilon_ratio']:.5f} – {entry['max_epsilon_ratio']:.5f} | {sigma} | "
                     f"{entry['below']} | {entry['refused']} |")
        if "pld" in entry:
            pld = entry["pld"]
            eps, eps_time = _cell(pld["epsilon"])
            cal, cal_time = _cell(pld["calibration"])
            ratio = (f"{pld['epsilon_over_theirs'][0]:.3f} – {pld['epsilon_over_theirs'][1]:.3f}"
                     if pld["epsilon_over_theirs"] else "–")
            sigma = (f"{pld['sigma_over_theirs'][0]:.3f} – {pld['sigma_over_theirs'][1]:.3f}"
                     if pld["sigma_over_theirs"] else "–")
            lines.append(f"| {name} (fedplan PLD vs dp-acc RDP, no event) | {eps} | {eps_time} | {cal} | "
                         f"{cal_time} | {ratio} | {sigma} | n/a | |")
    return "\n".join(lines)


def accuracy_table(summary: dict) -> str:
    """ε against dp-accounting's default (spacing 1e-4) answer, and the ε speed ratio against dp-accounting
    on the grid fine enough to match fedplan's accuracy."""
    lines = ["| sampling / relation | ε_fedplan / ε_dp-acc at its default (min – max) | "
             "ε speed ratio at matched grid, median / worst |", "|---|---|---|"]
    for name, entry in summary.items():
        if "min_epsilon_ratio_anchor" in entry:
            lines.append(f"| {name} | {entry['min_epsilon_ratio_anchor']:.5f} – {entry['max_epsilon_ratio_anchor']:.5f}"
                         f" | {entry['median_speed_ratio_matched']:.1f}× / {entry['worst_speed_ratio_matched']:.1f}× |")
    return "\n".join(lines)


def _plain(value):
    """numpy scalars (dp-accounting returns them) as JSON numbers and booleans."""
    return value.item()


def _point(text: str, types) -> tuple:
    values = text.split(",")
    if len(values) != len(types):
        raise argparse.ArgumentTypeError(f"expected {len(types)} comma-separated values, got {text!r}")
    return tuple(kind(float(value)) for kind, value in zip(types, values, strict=True))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sampling", action="append", choices=[case.name for case in CASES],
                        help="only this sampling/relation (repeatable; default all)")
    parser.add_argument("--epsilon-point", action="append", metavar="Q,SIGMA,T",
                        type=functools.partial(_point, types=(float, float, int)),
                        help="ε grid point instead of the default grid (repeatable)")
    parser.add_argument("--calibration-point", action="append", metavar="EPS,Q,T",
                        type=functools.partial(_point, types=(float, float, int)),
                        help="calibration grid point instead of the default grid (repeatable)")
    parser.add_argument("--no-epsilon", action="store_true", help="skip the ε comparisons")
    parser.add_argument("--no-calibration", action="store_true", help="skip the calibration comparisons")
    parser.add_argument("--json", metavar="FILE", help="also write the rows and summary as JSON")
    args = parser.parse_args(argv)
    cases = [case for case in CASES if not args.sampling or case.name in args.sampling]

    print(f"N = {DATASET_SIZE}, δ = {DELTA:g}; ratios are dp-accounting time / fedplan time", flush=True)
    rows = []
    for case in cases:
        print(f"\n## {case.name}: fedplan {case.fedplan_accountant} vs dp-accounting {case.description}", flush=True)
        epsilon_points = [] if args.no_epsilon else (args.epsilon_point or case.epsilon_grid or EPSILON_GRID)
        calibration_points = [] if args.no_calibration else (
            args.calibration_point or case.calibration_grid or CALIBRATION_GRID)
        for q, sigma, steps in epsilon_points:
            row = measure_epsilon(case, q, sigma, steps)
            rows.append(row)
            if "refused" in row:
                print(f"eps  q={q:<6g} sigma={sigma:<4g} T={steps:<6d} fedplan refuses: {row['refused']}", flush=True)
                continue
            extra = (f" | PLD {row['epsilon_pld_ours']:.6g} ({row['seconds_pld_ours']:.3f}s)"
                     if case.extra_pld else "")
            print(f"eps  q={q:<6g} sigma={sigma:<4g} T={steps:<6d} ours {row['epsilon_ours']:<11.6g}"
                  f"[{row['accountant_ours']}] theirs {row['epsilon_theirs']:<11.6g} ratio {row['epsilon_ratio']:.6f}"
                  f"{' BELOW' if below(row) else ''} | {row['seconds_ours']:.3f}s vs {row['seconds_theirs']:.3f}s "
                  f"= {row['speed_ratio']:.1f}x{extra}", flush=True)
        for epsilon, q, steps in calibration_points:
            row = measure_calibration(case, epsilon, q, steps)
            rows.append(row)
            if "refused" in row:
                print(f"cal  eps={epsilon:<3g} q={q:<6g} T={steps:<6d} fedplan refuses: {row['refused']}", flush=True)
                continue
            extra = (f" | PLD sigma {row['sigma_pld_ours']:.6g} ({row['seconds_pld_ours']:.3f}s)"
                     if case.extra_pld else "")
            print(f"cal  eps={epsilon:<3g} q={q:<6g} T={steps:<6d} sigma ours {row['sigma_ours']:<10.6g}"
                  f"[{row['accountant_ours']}] theirs {row['sigma_theirs']:<10.6g} eps ratio {row['epsilon_ratio']:.6f}"
                  f"{' BELOW' if below(row) else ''} | {row['seconds_ours']:.3f}s vs {row['seconds_theirs']:.3f}s "
                  f"= {row['speed_ratio']:.1f}x{extra}", flush=True)

    summary = summarise(rows)
    print()
    print(markdown_table(summary))
    print()
    print(accuracy_table(summary))
    flagged = [row for row in rows if below(row)]
    slow = [row for row in rows if attention(row)]
    compared = [row for row in rows if "refused" not in row]
    print(f"\nε_fedplan below dp-accounting's at a finer grid: {len(flagged)} of {len(compared)}; "
          f"points fedplan refuses: {len(rows) - len(compared)}")
    for row in flagged:
        print("  BELOW", {key: row[key] for key in row if not key.startswith("seconds")})
    print(f"points where fedplan is less than {ATTENTION_SPEED_RATIO:g}× faster or takes over "
          f"{ATTENTION_SECONDS:g} s: {len(slow)}")
    for row in slow:
        point = (f"eps={row['target_epsilon']:g} q={row['sample_rate']:g} T={row['steps']}" if row["kind"] ==
                 "calibration" else f"q={row['sample_rate']:g} sigma={row['noise_multiplier']:g} T={row['steps']}")
        print(f"  {row['sampling']}/{row['neighboring_relation']} {row['kind']} {point}: "
              f"{row['seconds_ours']:.3f}s vs {row['seconds_theirs']:.3f}s = {row['speed_ratio']:.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"dataset_size": DATASET_SIZE, "delta": DELTA, "rows": rows,
                                               "summary": summary}, indent=2, default=_plain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
