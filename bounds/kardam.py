"""Staleness dampening (AdaSGD, Kardam) and Kardam's filters and bounds (Damaskinos thesis, ch. 3 and 5).

Paper: ``damaskinos_thesis.txt`` (``damaskinos L612`` = line 612); spec ``specs/damaskinos_async_byzantine.md``
(its §6 items ``A-…``, ``K-…``). Everything is a pure function of numbers, numpy arrays or a frozen
:class:`Dampening`, cheap enough to be called once per received gradient by a simulator.

* AdaSGD (FLeet, L591-625) weighs a gradient of staleness τ by Λ(τ) = e^{−βτ}, with β chosen so that Λ meets
  DynSGD's 1/(τ+1) at τ_thres/2: β = 2 ln(1 + τ_thres/2)/τ_thres (L612, garbled; resolved A-1). τ_thres = 12
  gives Λ(6) = 1/7 ≈ 0.14, the printed value (L707).
* Kardam (L1094-1194) accepts a gradient if it passes the Lipschitz filter and the frequency filter, combines
  M accepted gradients with weights Λ(τ) (Def. 9, L1170) and scales the step by φ_t = M/ΣΛ(τ_i) (Eq. 5.2).
  Theorem 4 (L1879) bounds the ergodic mean of E‖∇F‖² through the decay bound χ ≥ τΛ(τ) (Eq. 5.3) and
  φ_max; :func:`kardam_bound` is its explicit form with Definition 10's learning rate (Theorem 5).

Staleness τ counts model updates between a worker's pull and its push (L608, Def. 6 L1056).
Dampening and the adaptive rate post-process already-privatised gradients: they change no (ε, δ).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from fedplan.bounds.references import cite
from fedplan.bounds.theorem import TheoremResult, hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real

DAMPENING_KINDS = ("inverse", "exponential", "stretched", "constant")
#: Tolerance on Σ p(τ) = 1 for a staleness distribution.
PMF_TOLERANCE = 1e-9
#: Largest τ_max of a staleness distribution (its p(τ) is one float per τ).
MAX_STALENESS = 10**7


# --------------------------------------------------------------------------------------------
# Dampening functions Λ(τ)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Dampening:
    """A staleness dampening function Λ(τ), τ ≥ 0 (Def. 9, L1170).

    ``"inverse"`` 1/(1+τ) (DynSGD, L697); ``"exponential"`` e^{−rate·τ} (Kardam Fig. 5.3, L1238; AdaSGD with
    rate β); ``"stretched"`` e^{−rate·τ^{1/root}} (Remark 2, L1932); ``"constant"`` 1 (FedAvg, staleness-unaware:
    not a dampening function in the sense of Def. 9, which needs Λ strictly decreasing).
    Call it on a number or an array of staleness values.
    """

    kind: str
    rate: float = 0.0
    root: float = 1.0

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, DAMPENING_KINDS)
        needs_rate = self.kind in ("exponential", "stretched")
        check_real("rate", self.rate, low=0.0, low_open=needs_rate)
        check_real("root", self.root, low=0.0, low_open=True)

    def __call__(self, tau):
        """Λ(τ) for a number or array τ ≥ 0 (a float for a number)."""
        taus = np.asarray(tau, dtype=float)
        if np.any(~(taus >= 0)):
            raise ValueError(f"staleness tau must be >= 0 and finite; got {tau!r}")
        if self.kind == "inverse":
            values = 1.0 / (1.0 + taus)
        elif self.kind == "exponential":
            values = np.exp(-self.rate * taus)
        elif self.kind == "stretched":
            values = np.exp(-self.rate * taus ** (1.0 / self.root))
        else:
            values = np.ones_like(taus)
        return float(values) if values.ndim == 0 else values

    @property
    def satisfies_definition_9(self) -> bool:
        """Bijective, strictly decreasing, Λ(0) = 1 (Def. 9, L1170): all kinds but ``"constant"``."""
        return self.kind != "constant"

    def inverse(self, weight: float) -> float:
        """Λ⁻¹(v): the staleness whose weight is v ∈ (0, 1] (used by Lemma 9, L1803)."""
        if not self.satisfies_definition_9:
            raise ValueError("the constant dampening is not invertible (Def. 9 needs Λ strictly decreasing)")
        v = check_real("weight", weight, low=0.0, high=1.0, low_open=True)
        if self.kind == "inverse":
            return 1.0 / v - 1.0
        if self.kind == "exponential":
            return -math.log(v) / self.rate
        return (-math.log(v) / self.rate) ** self.root

    def argmax_of_tau_weight(self) -> float:
        """τ maximising τΛ(τ) over τ ≥ 0 (unimodal): 1/rate (exponential), (root/rate)^root (stretched)."""
        if self.kind == "exponential":
            return 1.0 / self.rate
        if self.kind == "stretched":
            return (self.root / self.rate) ** self.root
        return math.inf  # τ/(1+τ) and τ increase for ever


def adasgd_beta(*, tau_thres: float) -> float:
    """β = 2 ln(1 + τ_thres/2)/τ_thres: e^{−βτ} meets 1/(τ+1) at τ_thres/2 (L612, resolved A-1).

    τ_thres = 12 (D1, L705): β = 0.324318; τ_thres = 24 (D2): 0.213746.
    """
    tau_thres = check_real("tau_thres", tau_thres, low=0.0, low_open=True)
    return 2 * math.log1p(tau_thres / 2) / tau_thres


def adasgd_dampening(*, tau_thres: float) -> Dampening:
    """AdaSGD's Λ(τ) = e^{−βτ} with :func:`adasgd_beta` (L612); Λ(τ_thres/2) = 1/(1 + τ_thres/2)."""
    return Dampening("exponential", rate=adasgd_beta(tau_thres=tau_thres))


def adasgd_weight(*, dampening: Dampening, staleness: float, similarity: float, similarity_floor: float = 0.0) -> float:
    """AdaSGD's weight min(1, Λ(τ)/sim) (Eq. 3.3, L603); 1 if sim ≤ floor (sim = 0: new labels, A-4).

    ``similarity`` is the Bhattacharyya coefficient of the gradient's label distribution with the global one
    (Eq. 3.4, L618). With boosting the weight is no longer a function of τ: Kardam's theory does not cover it (A-8).
    """
    sim = check_real("similarity", similarity, low=0.0, high=1.0)
    floor = check_real("similarity_floor", similarity_floor, low=0.0, high=1.0)
    if sim <= floor:
        return 1.0
    return min(1.0, dampening(staleness) / sim)


def crossing(*, first: Dampening, second: Dampening, low: float, high: float) -> float:
    """Staleness τ ∈ [low, high] where two dampening functions are equal (brentq; needs a sign change).

    e^{−0.2τ} meets 1/(1+τ) at τ = 13.302 (Kardam uses larger weights below 13, L1248).
    """
    low = check_real("low", low, low=0.0)
    high = check_real("high", high, low=low, low_open=True)

    def difference(tau: float) -> float:
        return first(tau) - second(tau)

    if difference(low) * difference(high) > 0:
        raise ValueError(f"the two dampening functions do not cross in [{low:g}, {high:g}] "
                         f"(difference {difference(low):.3g} and {difference(high):.3g} at the ends)")
    return float(optimize.brentq(difference, low, high, xtol=1e-12, rtol=1e-12))


# --------------------------------------------------------------------------------------------
# Staleness distributions and expected dampening
# --------------------------------------------------------------------------------------------

def gaussian_staleness_pmf(*, mean: float, std: float, tau_min: int = 0, tau_max: int | None = None) -> np.ndarray:
    """p(τ), τ = 0..τ_max, of round(N(mean, std²)) clipped to [τ_min, τ_max] (τ-controller, App. A.1, L1658).

    Default τ_max = ⌈mean + 3·std⌉: the thesis' D1 = N(6, 2) on [0, 12] and D2 = N(12, 4) on [0, 24] (L695).
    The clipped tails pile onto the ends: D1 has p(0) = p(12) = 0.00298.
    """
    mean = check_real("mean", mean, low=0.0)
    std = check_real("std", std, low=0.0, low_open=True)
    tau_min = check_int("tau_min", tau_min, low=0)
    if tau_max is None:
        if mean + 3 * std > MAX_STALENESS:
            raise ValueError(f"mean + 3 std (the default tau_max) must be <= {MAX_STALENESS:g}; got mean={mean:g}, "
                             f"std={std:g}")
        tau_max = math.ceil(mean + 3 * std)
    tau_max = check_int("tau_max", tau_max, low=tau_min, high=MAX_STALENESS)
    with np.errstate(over="ignore"):  # a subnormal std (τ_thres = 1e-320) gives ±inf edges, which ndtr takes as 0, 1
        edges = (np.arange(tau_min, tau_max) + 0.5 - mean) / std
    cdf = np.concatenate(([0.0], special.ndtr(edges), [1.0]))
    pmf = np.zeros(tau_max + 1)
    pmf[tau_min:] = np.diff(cdf)
    return pmf


def _check_pmf(probabilities) -> np.ndarray:
    pmf = np.asarray(probabilities, dtype=float)
    if pmf.ndim != 1 or pmf.size == 0 or np.any(~(pmf >= 0)) or abs(pmf.sum() - 1) > PMF_TOLERANCE:
        raise ValueError("probabilities must be a non-empty array of p(tau), tau = 0, 1, ..., that are >= 0 and "
                         f"sum to 1; got sum {pmf.sum() if pmf.size else 0:.12g}")
    return pmf


def expected_dampening(*, dampening: Dampening, probabilities) -> float:
    """E_τ[Λ(τ)] under the staleness distribution p(τ), τ = 0, 1, … (spec §4.3, ours).

    D1 = N(6, 2): inverse 0.1602, AdaSGD (τ_thres = 12) 0.1768, e^{−0.2τ} 0.3267, e^{−0.5τ} 0.0825.
    """
    pmf = _check_pmf(probabilities)
    return float(np.dot(pmf, dampening(np.arange(pmf.size))))


# --------------------------------------------------------------------------------------------
# Kardam: decay bound χ, adaptive rate φ, Theorems 4-5, Remark 2
# --------------------------------------------------------------------------------------------

def decay_bound(*, dampening: Dampening, tau_max: float = math.inf, integer: bool = True) -> float:
    """χ = sup τΛ(τ) over the staleness support 0 ≤ τ ≤ τ_max (Eq. 5.3, L1214-1216).

    ``integer=True`` takes the sup over integer staleness (what a run can produce); τΛ(τ) is unimodal, so the
    two integers around its maximiser suffice. Inverse 1/(1+τ) on [0, 12]: 12/13; e^{−0.2τ}: 1.8394 (τ = 5);
    AdaSGD τ_thres = 24 on [0, 24]: 1.717 (sup over reals 1/(eβ) = 1.721). Raises for the constant dampening
    with unbounded staleness (χ = ∞).
    """
    tau_max = math.inf if tau_max == math.inf else check_real("tau_max", tau_max, low=0.0)
    if dampening.kind == "constant" and tau_max == math.inf:
        raise ValueError("chi is infinite for the constant dampening with unbounded staleness: give tau_max")
    peak = min(dampening.argmax_of_tau_weight(), tau_max)
    if peak == math.inf:  # inverse dampening on unbounded support: sup τ/(1+τ) = 1, approached, not attained
        return 1.0
    if integer:
        peak_floor = math.floor(peak)
        candidates = [peak_floor, min(peak_floor + 1, math.floor(tau_max))]
    else:
        candidates = [peak]
    return max(tau * dampening(tau) for tau in candidates)


def adaptive_rate(*, dampening: Dampening, staleness) -> float:
    """φ_t = M/Σ_i Λ(τ_i) over the M gradients of one step (Eq. 5.2, L1189); φ_t ≥ 1."""
    taus = np.asarray(staleness, dtype=float)
    if taus.ndim != 1 or taus.size == 0:
        raise ValueError("staleness must be a non-empty one-dimensional array (the M gradients of one step)")
    return float(taus.size / np.sum(dampening(taus)))


def max_adaptive_rate(*, dampening: Dampening, tau_max: float) -> float:
    """φ_max = 1/Λ(τ_max): every gradient of a step maximally stale (ours). AdaSGD τ_thres = 12 on [0, 12]: 49."""
    weight = dampening(check_real("tau_max", tau_max, low=0.0))
    if not weight > 0:
        raise ValueError(f"the dampening weight Λ(τ_max) at the largest staleness τ_max = {tau_max:g} is 0 in floating "
                         "point: a step of maximally stale gradients would get an unbounded rate 1/Λ(τ_max)")
    return 1.0 / weight


def kardam_learning_rate(*, loss_gap: float, lipschitz: float, steps: int, gradients_per_step: int,
                         dimension: int, gradient_std: float) -> float:
    """Baseline γ = √(ΔF/(K·T·M·d·σ²)) of Definition 10 (Eq. 5.2, L1189); γ_t = γ·φ_t."""
    gap = check_real("loss_gap", loss_gap, low=0.0, low_open=True)
    k = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    t = check_int("steps", steps, low=1)
    m = check_int("gradients_per_step", gradients_per_step, low=1)
    d = check_int("dimension", dimension, low=1)
    sigma = check_real("gradient_std", gradient_std, low=0.0, low_open=True)
    return math.sqrt(gap / (k * t * m * d * sigma**2))


@dataclass(frozen=True)
class KardamBound(TheoremResult):
    """Theorem 4 with Definition 10's γ: the explicit Theorem 5 (L1879, L1923; spec §3.4).

    B(T) = (2 + φ_max)√(ΔF·K·d·σ²/(T·M)) + ΔF·K·χ·φ_max^c/T + dσ² + 2DKσ√d + K²D², c = 1 as printed
    (``variant="paper"``) or 2 (``"corrected"``: the proof drops a factor φ_t between L1909 and L1911, K-P1).
    The floor dσ² + 2DKσ√d + K²D² does not vanish as T grows (as printed; K-P2). Theorem 4 also needs
    n ≥ 3f+1 (K-N) and Assumptions 1-5; ``hypotheses`` holds the checkable one: the prerequisite of L1883
    fails whenever γKM > 1 (all M gradients of a step equally stale, K-P5). ``notes`` name the errata of
    docs/ERRATA.md that touch the number (KARDAM-P1, KARDAM-N, and KARDAM-P5 when the prerequisite fails).
    """

    bound: float
    learning_rate: float
    optimisation_term: float
    staleness_term: float
    floor: float
    steps: int
    variant: str
    notes: tuple[str, ...]
    source: str = cite("damaskinos", "Theorem 4, Theorem 5, Definition 10", "L1877-1891, L1921-1930, L1185-1192")


def kardam_bound(*, steps: int, loss_gap: float, lipschitz: float, decay_bound: float, max_adaptive_rate: float,
                 dimension: int, gradient_std: float, gradients_per_step: int = 1, confinement_radius: float = 0.0,
                 variant: str = "corrected") -> KardamBound:
    """Bound on (1/T)Σ E‖∇F(θ_t)‖² after T Kardam steps (Theorem 4 with γ of Definition 10 = Theorem 5 explicit).

    ΔF = 1, K = 1, T = 1e4, M = 1, d = 10, σ = 0.1, D = 0, χ = 1.134, φ_max = 49: γ = 0.031623 and
    B = 0.26683 (paper variant). ``gradient_std`` σ is the per-coordinate std of one worker's gradient
    (Assumption 2, L1068); ``confinement_radius`` D the radius of Lemma 8 (unknown; 0 idealises it).
    """
    check_choice("variant", variant, ("corrected", "paper"))
    gamma = kardam_learning_rate(loss_gap=loss_gap, lipschitz=lipschitz, steps=steps,
                                 gradients_per_step=gradients_per_step, dimension=dimension, gradient_std=gradient_std)
    chi = check_real("decay_bound", decay_bound, low=0.0)
    phi = check_real("max_adaptive_rate", max_adaptive_rate, low=1.0)
    radius = check_real("confinement_radius", confinement_radius, low=0.0)
    k, d, sigma, m = float(lipschitz), int(dimension), float(gradient_std), int(gradients_per_step)
    exponent = 2 if variant == "corrected" else 1
    optimisation = (2 + phi) * gamma * k * d * sigma**2
    staleness = gamma**2 * k**2 * m * chi * phi**exponent * d * sigma**2
    floor = d * sigma**2 + 2 * radius * k * sigma * math.sqrt(d) + k**2 * radius**2
    checks = (hypothesis("gamma*K*M <= 1", gamma * k * m, "<=", 1.0, "prerequisite L1883, ERRATA KARDAM-P5"),)
    notes = [("KARDAM-P1: the staleness term carries phi_max^2 (the proof drops a factor phi_t between L1909 and "
              "L1911)") if variant == "corrected" else "KARDAM-P1: phi_max as printed (the proof needs phi_max^2)",
             "KARDAM-N: Theorem 4 also needs n >= 3f + 1 workers and Assumptions 1-5, not checked here"]
    if not checks[0].holds:
        notes.append("KARDAM-P5: the prerequisite of L1883 fails (gamma*K*M > 1): Theorem 4 does not apply")
    return KardamBound(bound=optimisation + staleness + floor, learning_rate=gamma, optimisation_term=optimisation,
                       staleness_term=staleness, floor=floor, steps=int(steps), variant=variant, notes=tuple(notes),
                       hypotheses=checks)


@dataclass(frozen=True)
class StepsToTarget(TheoremResult):
    """The smallest T whose Theorem-5 bound :func:`kardam_bound` is ≤ ``target`` (spec §4.4, ERRATA KARDAM-P7).

    ``bound`` and ``learning_rate`` are B(T) and Definition 10's γ at that T; ``hypotheses`` are those of the bound
    at that T (γKM ≤ 1, L1883): past T ≥ ΔF·K·M/(dσ²) they hold. ``notes``: the bound's errata and KARDAM-P7.
    """

    steps: int
    target: float
    bound: float
    learning_rate: float
    variant: str
    notes: tuple[str, ...]
    source: str = cite("damaskinos", "Theorem 5 made explicit: the smallest T with Theorem 4's bound <= a target",
                       "L1921-1930, L1877-1891")


def steps_to_target(*, target: float, loss_gap: float, lipschitz: float, decay_bound: float,
                    max_adaptive_rate: float, dimension: int, gradient_std: float, gradients_per_step: int = 1,
                    confinement_radius: float = 0.0, variant: str = "corrected") -> StepsToTarget:
    """Smallest T with :func:`kardam_bound` ≤ target (spec §4.4): B = a/√T + b/T + floor is a quadratic in 1/√T.

    Raises ``ValueError`` if the target is not above the floor (no T reaches it). Example of
    :func:`kardam_bound` with target 0.5: T = 1894 (paper variant). The answer is marked "no guarantee" when
    Theorem 4's prerequisite γKM ≤ 1 fails at that T (KARDAM-P5).
    """
    target = check_real("target", target, low=0.0, low_open=True)
    common = dict(loss_gap=loss_gap, lipschitz=lipschitz, decay_bound=decay_bound,
                  max_adaptive_rate=max_adaptive_rate, dimension=dimension, gradient_std=gradient_std,
                  gradients_per_step=gradients_per_step, confinement_radius=confinement_radius, variant=variant)
    at_one = kardam_bound(steps=1, **common)
    if target <= at_one.floor:
        raise ValueError(f"target={target:g} is not above the floor d*sigma^2 + 2DK*sigma*sqrt(d) + K^2 D^2 = "
                         f"{at_one.floor:.6g} of Theorem 4: no number of steps reaches it")
    a, b, slack = at_one.optimisation_term, at_one.staleness_term, target - at_one.floor
    u = 2 * slack / (a + math.sqrt(a * a + 4 * b * slack))  # positive root of b u² + a u = slack, u = 1/√T
    steps = max(1, math.ceil(1 / u**2))
    while steps > 1 and kardam_bound(steps=steps - 1, **common).bound <= target:
        steps -= 1
    while (reached := kardam_bound(steps=steps, **common)).bound > target:
        steps += 1
    notes = (*reached.notes, "KARDAM-P7: the O(.) of Theorem 5 made explicit, solved for T")
    return StepsToTarget(steps=steps, target=target, bound=reached.bound, learning_rate=reached.learning_rate,
                         variant=reached.variant, notes=notes, hypotheses=reached.hypotheses)


@dataclass(frozen=True)
class Remark2Window(TheoremResult):
    """The window (β/e, upper] of rates α of Remark 2 (L1932) on integer staleness τ_low..τ_high.

    ``hypotheses``: the window is not empty, β/e < upper ((B.2) with (B.3) for every τ of the range, L1949, L1958);
    an empty window is shown, but no α then makes e^{−ατ^{1/β}} beat 1/(1+τ). ``notes``: KARDAM-P8.
    """

    lower: float
    upper: float
    root: float
    tau_low: int
    tau_high: int
    notes: tuple[str, ...] = ("KARDAM-P8: the condition (B.3) for every tau of the range (min over it), not at one "
                              "tau",)
    source: str = cite("damaskinos", "Remark 2, (B.2), (B.3)", "L1932-1964")


def remark2_window(*, root: float, tau_low: int, tau_high: int) -> Remark2Window:
    """(β/e, min_τ ln(τ+1)/τ^{1/β}]: the rates α for which e^{−ατ^{1/β}} has a smaller Theorem-5 bound than
    1/(1+τ) on integer staleness τ_low..τ_high (Remark 2, L1932; the min over the range is ours, K-P8).

    The thesis' settings (L1964): β = 1.85 on [1, 10] gives (0.680577, 0.690700]. Empty when low ≥ high: then
    "no guarantee".
    """
    beta = check_real("root", root, low=0.0, low_open=True)
    low_tau = check_int("tau_low", tau_low, low=1)
    high_tau = check_int("tau_high", tau_high, low=low_tau)
    taus = np.arange(low_tau, high_tau + 1, dtype=float)
    lower, upper = beta / math.e, float(np.min(np.log1p(taus) / taus ** (1 / beta)))
    check = hypothesis("beta/e < min_tau ln(tau+1)/tau^(1/beta)  (window not empty)", lower, "<", upper,
                       "(B.2) L1949, (B.3) L1958")
    return Remark2Window(lower=lower, upper=upper, root=beta, tau_low=low_tau, tau_high=high_tau, hypotheses=(check,))


@dataclass(frozen=True)
class AcceptRatioBand(TheoremResult):
    """Theorem 1's band (n−2f)/(n−f) ≤ SL ≤ (n−f)/n (L1116-1122) with Kardam's hypothesis n ≥ 3f + 1 (KARDAM-N)."""

    lower: float
    upper: float
    workers: int
    byzantine: int
    notes: tuple[str, ...] = ("KARDAM-N: n >= 3f + 1 (the printed n > 3f + 1 of Theorem 3 excludes the experiments' "
                              "n = 10, f = 3)",)
    source: str = cite("damaskinos", "Theorem 1", "L1116-1122")


def accept_ratio_bounds(*, workers: int, byzantine: int) -> AcceptRatioBand:
    """Theorem 1 (L1116-1122): (n−2f)/(n−f) ≤ SL ≤ (n−f)/n; n = 10, f = 3 gives (0.571429, 0.7).

    SL is the share of delivered honest gradients that pass the Lipschitz filter; the ideal no-attack drop
    ratio is f/n (K-F4, K-P12). Defined for n > f. The hypothesis is Kardam's n ≥ 3f + 1 (L1120 "n ≈ 3f", liveness
    with 2f + 1 honest workers L1786; resolved KARDAM-N), which gives the proof's n − 2f ≥ 1 useful workers (L1122)
    and two honest workers around the quantile K̂_t (L1108): below it the band is shown without guarantee.
    """
    f = check_int("byzantine", byzantine, low=0)
    n = check_int("workers", workers, low=f + 1)
    check = hypothesis("n >= 3f + 1", n, ">=", 3 * f + 1, "L1120, L1786 (KARDAM-N)")
    return AcceptRatioBand(lower=(n - 2 * f) / (n - f), upper=(n - f) / n, workers=n, byzantine=f,
                           hypotheses=(check,))


# --------------------------------------------------------------------------------------------
# Kardam's filters (L1100-1130)
# --------------------------------------------------------------------------------------------

def empirical_lipschitz(*, gradient, other_gradient, model, other_model) -> float:
    """‖g − g′‖/‖θ − θ′‖ (Def. 8, L1100), ∞ when the two models are equal (such a candidate is rejected, K-L1)."""
    numerator = float(np.linalg.norm(np.asarray(gradient, dtype=float) - np.asarray(other_gradient, dtype=float)))
    denominator = float(np.linalg.norm(np.asarray(model, dtype=float) - np.asarray(other_model, dtype=float)))
    return numerator / denominator if denominator > 0 else math.inf


def lipschitz_threshold(*, coefficients, workers: int, byzantine: int) -> float:
    """K̂_t = the (n−f)/n quantile of the workers' coefficients: sorted, index ⌈(n−f)/n·|P|⌉ − 1 (L1108, K-L2)."""
    f = check_int("byzantine", byzantine, low=0)
    n = check_int("workers", workers, low=f + 1)
    values = np.sort(np.asarray(coefficients, dtype=float))
    if values.ndim != 1 or values.size == 0:
        raise ValueError("coefficients must be a non-empty one-dimensional array of per-worker K_p")
    return float(values[math.ceil((n - f) / n * values.size) - 1])


def lipschitz_filter_accepts(*, coefficient: float, coefficients, workers: int, byzantine: int) -> bool:
    """Lipschitz filter: accept iff K̂_t^p ≤ K̂_t (L1108)."""
    return bool(coefficient <= lipschitz_threshold(coefficients=coefficients, workers=workers, byzantine=byzantine))


def frequency_filter_accepts(*, recent_workers: Sequence, candidate, byzantine: int, literal: bool = False) -> bool:
    """Frequency filter (L1130) on the ids of the last accepted gradients (the last 2f are used).

    Default: accept iff the candidate is not among the last 2f accepted workers — the printed rule when the
    window is pre-filled with 2f distinct sentinels (spec K-F2, proven equivalent; deadlock-free).
    ``literal=True`` applies the printed rule as is: with the candidate appended, the f largest multiplicities
    must sum to ≤ f (with a window shorter than 2f it admits repeats and can then reject everyone, K-F2).
    """
    f = check_int("byzantine", byzantine, low=0)
    window = list(recent_workers)[-2 * f:] if f else []
    if not literal:
        return candidate not in window
    counts = sorted(Counter([*window, candidate]).values(), reverse=True)
    return sum(counts[:f]) <= f


def frequency_reject_probability(*, workers: int, byzantine: int) -> float:
    """2f/n: share of candidates the frequency filter rejects under i.i.d. uniform arrivals (ours, K-F2)."""
    f = check_int("byzantine", byzantine, low=0)
    n = check_int("workers", workers, low=2 * f + 1)
    return 2 * f / n
