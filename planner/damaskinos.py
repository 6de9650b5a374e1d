"""The Damaskinos thesis beyond DP-SCD: AdaSGD's staleness dampening and the Byzantine capacity of the rules.

:func:`staleness_dampening` gives AdaSGD's β for a staleness threshold, the dampening Λ(τ) it gives next to
DynSGD's 1/(τ+1), and the expectation of both under a Gaussian staleness law (Damaskinos L612, L707, Eq. 5.3).
:func:`byzantine_capacity` and :func:`byzantine_min_workers` give the largest number of Byzantine workers n
workers tolerate and the smallest n that tolerates f (:mod:`bounds.byzantine`). ``fedplan staleness beta``,
``fedplan byzantine max-f|min-n`` call these (through :mod:`fedplan.planner.tasks.damaskinos`).
"""

from __future__ import annotations

from collections.abc import Sequence

from fedplan.bounds import byzantine, kardam

#: A Gaussian staleness law reaches mean + 3 std at most (:func:`bounds.kardam.gaussian_staleness_pmf`).
MAX_STALENESS = kardam.MAX_STALENESS


def staleness_law(*, staleness_threshold: float, staleness_mean: float | None = None,
                  staleness_std: float | None = None) -> tuple[float, float]:
    """(mean, std) of the Gaussian staleness law: by default τ_thres/2 and τ_thres/6 (τ_thres = mean + 3 std)."""
    mean = staleness_threshold / 2 if staleness_mean is None else staleness_mean
    std = staleness_threshold / 6 if staleness_std is None else staleness_std
    return mean, std


def staleness_dampening(*, staleness_threshold: float, staleness_values: Sequence[float] | None = None,
                        staleness_mean: float | None = None, staleness_std: float | None = None) -> dict:
    """β = 2 ln(1 + τ_thres/2)/τ_thres (L612), Λ(τ) = e^{−βτ} at ``staleness_values`` (default 0, τ_thres/2,
    τ_thres, 4τ_thres) next to 1/(τ+1), and both expected under round(N(mean, std²)) clipped to [0, ⌈mean+3std⌉]."""
    adasgd = kardam.adasgd_dampening(tau_thres=staleness_threshold)
    inverse = kardam.Dampening("inverse")
    taus = (staleness_values if staleness_values is not None
            else [0.0, staleness_threshold / 2, staleness_threshold, 4 * staleness_threshold])
    mean, std = staleness_law(staleness_threshold=staleness_threshold, staleness_mean=staleness_mean,
                              staleness_std=staleness_std)
    pmf = kardam.gaussian_staleness_pmf(mean=mean, std=std)
    tau_max = pmf.size - 1
    half = staleness_threshold / 2
    expected = kardam.expected_dampening(dampening=adasgd, probabilities=pmf)
    chi = kardam.decay_bound(dampening=adasgd, tau_max=tau_max)
    return {
        "tau_thres": staleness_threshold, "beta": adasgd.rate, "crossing_tau": half,
        "dampening_at_crossing": adasgd(half), "inverse_at_crossing": inverse(half),
        "dampening": {f"{tau:g}": adasgd(tau) for tau in taus},
        "inverse_dampening": {f"{tau:g}": inverse(tau) for tau in taus},
        "staleness_law": {"mean": mean, "std": std, "tau_max": tau_max},
        "expected_dampening": {"adasgd": expected,
                               "inverse": kardam.expected_dampening(dampening=inverse, probabilities=pmf)},
        "decay_bound": chi,
        "max_adaptive_rate": kardam.max_adaptive_rate(dampening=adasgd, tau_max=tau_max),
        "statement": (f"AdaSGD dampening Lambda(tau) = exp(-{adasgd.rate:.6g} tau) meets DynSGD's 1/(tau+1) at "
                      f"tau = {half:g} with weight {adasgd(half):.6g} (Damaskinos L612, L707). Under staleness "
                      f"round(N({mean:g}, {std:g}^2)) clipped to [0, {tau_max}] its mean weight is "
                      f"{expected:.4g}; chi = sup tau Lambda(tau) = {chi:.4g} (Eq. 5.3)."),
    }


def byzantine_capacity(*, workers: int, rule: str) -> dict:
    """The largest f that ``rule`` tolerates with n = ``workers``, and the same for every rule (None where n is
    too small for the rule)."""
    result = byzantine.max_byzantine(workers=workers, rule=rule)
    others = {}
    for other in byzantine.RULES:
        try:
            others[other] = byzantine.max_byzantine(workers=result.workers, rule=other).max_faults
        except ValueError:
            others[other] = None
    return {**result.to_dict(), "max_f": result.max_faults, "all_rules": others, "statement": result.statement()}


def byzantine_min_workers(*, faults: int, rule: str) -> dict:
    """The smallest number of workers with which ``rule`` tolerates ``faults`` Byzantine ones."""
    workers = byzantine.min_workers(faults=faults, rule=rule)
    requirement = byzantine.requirement_text(rule=rule)
    return {"rule": rule, "faults": faults, "min_workers": workers, "requirement": requirement,
            "source": byzantine.REQUIREMENTS[rule][2],
            "statement": f"{rule} needs at least n = {workers} workers to tolerate f = {faults} Byzantine "
                         f"workers ({requirement})."}
