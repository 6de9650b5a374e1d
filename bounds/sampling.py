"""How records join a step, and the accounting method each sampling × neighbouring relation allows.

Every mechanism here adds Gaussian noise of standard deviation ``noise_multiplier × C`` to the sum of
per-record contributions clipped to L2 norm ``C`` (``noise_multiplier`` is always noise std / clipping
norm). What changes is how a step's batch is drawn and which data sets are neighbours:

========================  =====================  ==========================================================
sampling                  neighbouring relation  method (derivations and references: docs/SAMPLING.md)
========================  =====================  ==========================================================
``poisson``               ``add_or_remove_one``  PLD of the Poisson-subsampled Gaussian (tight); RDP
``poisson``               ``replace_one``        PLD, dp-accounting's REPLACE_ONE pair (shift ±C) (tight)
``fixed_size``            ``add_or_remove_one``  Poisson PLD/RDP at rate m/N with noise multiplier σ/2
                                                 (coupling: an added record displaces one; upper bound)
``fixed_size``            ``replace_one``        PLD of the symmetrised pair of Dong, Roth, Su 2022,
                                                 Thm 4.2 at σ/2; RDP: Wang, Balle, Kasiviswanathan 2019,
                                                 Thm 27 at σ/2 (upper bounds)
``with_replacement``      ``add_or_remove_one``  PLD of the mixture of Gaussians with sensitivities 2k,
                                                 k ~ Binomial(s, 1/N) (Choquette-Choo et al. 2024, Cor. 4.7;
                                                 upper bound)
``with_replacement``      ``replace_one``        symmetrised PLD of an advanced-joint-convexity bound on that
                                                 mixture (Balle, Barthe, Gaboardi 2018, Thm 2; upper bound)
``shuffle``               either                 exact Gaussian profile of ⌈T / ⌊1/q⌋⌉ participations,
                                                 no amplification credited (upper bound)
========================  =====================  ==========================================================

The RDP accountant is refused where no RDP bound is implemented (``poisson``/``replace_one`` and
``with_replacement``), with the list of what each combination supports; where PLD cannot answer there,
the call raises. Nothing falls back to Poisson.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from fedplan.bounds import pld, rdp
from fedplan.bounds.validation import check_choice

SAMPLINGS = ("poisson", "fixed_size", "with_replacement", "shuffle")
NEIGHBORING_RELATIONS = ("add_or_remove_one", "replace_one")

SAMPLING_HELP = {
    "poisson": "each record joins a step independently with probability q (Opacus's default)",
    "fixed_size": "exactly m = qN of the N records (or clients) per step, without replacement (Flower, TFF)",
    "with_replacement": "s = qN independent uniform draws from the N records per step (van Dijk Alg. 1, MAPA)",
    "shuffle": "each record in exactly one batch per epoch (balls-in-bins; a DataLoader with shuffle=True and fixed "
               "batches is covered under replace_one), epochs of ⌈N/m⌉ steps (⌊1/q⌋ without N)",
}
RELATION_HELP = {
    "add_or_remove_one": "neighbouring data sets differ by adding or removing one record",
    "replace_one": "neighbouring data sets have the same size and differ in one record",
}

#: Per-step probability mass of K ~ Binomial(s, 1/N) left out of a with-replacement mixture, divided by
#: the number of steps: the leftover is charged to δ and ε explicitly (:meth:`Mechanism.adjustments`).
_MIXTURE_TAIL = 1e-24
#: With-replacement mixtures larger than this are refused (their PLD would be too slow to build).
MAX_MIXTURE_COMPONENTS = 400


class UnsupportedCombinationError(ValueError):
    """An accountant that has no sound method for a sampling and neighbouring relation."""


@dataclass(frozen=True)
class Mechanism:
    """One supported sampling × neighbouring relation: how to account it and how to describe it."""

    sampling: str
    neighboring_relation: str
    #: Method names per accountant (``None``: that accountant is not available for this combination).
    pld_method: str | None
    rdp_method: str | None
    exact_method: str | None = None
    #: "tight" (the PLD's dominating pair is attained) or "upper bound" (a sound bound that may be loose); RDP
    #: answers are always "upper bound".
    bound: str = "tight"

    @property
    def reference_spacing(self) -> bool:
        """Whether PLD spacings stop at dp-accounting's 1e-4 (:data:`bounds.pld.REFERENCE_SPACING`): every sampling
        but with-replacement, whose mixture steps cost up to 50× more per grid point (18 s at 1e-4 for q = 0.01,
        T = 1e4, N = 1e4 under replace-one), so the tolerance alone chooses its spacing."""
        return self.sampling != "with_replacement"

    @property
    def accountants(self) -> tuple[str, ...]:
        return tuple(name for name, method in (("pld", self.pld_method), ("rdp", self.rdp_method),
                                               ("exact", self.exact_method)) if method)

    def method(self, accountant: str) -> str:
        return {"pld": self.pld_method, "rdp": self.rdp_method, "exact": self.exact_method,
                "participation": PARTICIPATION_METHOD}[accountant]

    # ---- the parameters a segment needs ------------------------------------------------------------

    def sample_size(self, sample_rate: float, dataset_size: int | None) -> int | None:
        """Records per step (m or s) when the data set size is known; it must be a whole number."""
        if dataset_size is None:
            return None
        size = sample_rate * dataset_size
        rounded = round(size)
        # A rate typed with a few digits (0.0042667 for 256 of 60 000) is read as the whole count it rounds to.
        if rounded < 1 or abs(size - rounded) > 1e-4 * size:
            raise ValueError(f"sample_rate × dataset_size must be a whole number of records per step for "
                             f"{self.sampling} sampling; got {sample_rate:.10g} × {dataset_size} = {size:.8g}")
        return int(rounded)

    # ---- RDP ---------------------------------------------------------------------------------------

    def rdp_epsilon(self, segments, delta: float) -> tuple[float, float]:
        if self.sampling == "poisson":
            return rdp.epsilon_for_segments(segments, delta)
        if self.neighboring_relation == "add_or_remove_one":  # fixed_size
            return rdp.epsilon_for_segments(_half_noise(segments), delta)
        orders, composed = self._wor_rdp(segments)
        return rdp.epsilon_from_rdp(rdp=composed, orders=orders, delta=delta)

    def rdp_delta(self, segments, epsilon: float) -> tuple[float, float]:
        if self.sampling == "poisson":
            return rdp.delta_for_segments(segments, epsilon)
        if self.neighboring_relation == "add_or_remove_one":
            return rdp.delta_for_segments(_half_noise(segments), epsilon)
        orders, composed = self._wor_rdp(segments)
        return rdp.delta_from_rdp(rdp=composed, orders=orders, epsilon=epsilon)

    @staticmethod
    def _wor_rdp(segments):
        from fedplan.bounds.rdp_without_replacement import ORDERS, rdp_without_replacement_gaussian

        composed = sum(steps * rdp_without_replacement_gaussian(sample_rate=q, noise_multiplier=sigma / 2)
                       for q, sigma, steps in segments)
        return ORDERS, composed

    # ---- PLD ---------------------------------------------------------------------------------------

    def grid_segments(self, segments, dataset_size: int | None):
        """Segments with the noise multiplier divided by the largest shift, for grid-size estimates."""
        if self.sampling == "with_replacement":
            return [(q, sigma / (2 * _mixture(q, dataset_size, _total_steps(segments))[0][-1]), t)
                    for q, sigma, t in segments]
        if self.sampling == "poisson" and self.neighboring_relation == "add_or_remove_one":
            return segments
        return _half_noise(segments)

    def single_step(self, sample_rate: float, noise_multiplier: float, spacing: float,
                    dataset_size: int | None, total_steps: int):
        """PLD of one step (cached)."""
        if self.sampling == "poisson":
            if self.neighboring_relation == "add_or_remove_one":
                return _poisson_step(sample_rate, noise_multiplier, spacing)
            return pld._single_step(sample_rate, noise_multiplier, spacing, self.neighboring_relation)
        if self.sampling == "with_replacement":
            step = _with_replacement_step if self.neighboring_relation == "add_or_remove_one" else \
                _with_replacement_replace_step
            return step(sample_rate, noise_multiplier, spacing, dataset_size, total_steps)
        if self.neighboring_relation == "add_or_remove_one":  # fixed_size
            return _poisson_step(sample_rate, noise_multiplier / 2, spacing)
        return _symmetrised_step(sample_rate, noise_multiplier / 2, spacing)

    def pld_epsilon(self, segments, delta: float, spacing: float, dataset_size: int | None) -> float:
        """Pessimistic PLD ε at a fixed spacing, with the with-replacement tail charged (:meth:`adjustments`)."""
        added_delta, added_epsilon = self.adjustments(segments, dataset_size)
        return pld.epsilon_at_spacing(segments, delta - added_delta, spacing,
                                      self._step_builder(segments, dataset_size)) + added_epsilon

    def pld_epsilons_after_each(self, segments, delta: float, spacing: float, dataset_size: int | None) -> list[float]:
        """:meth:`pld_epsilon` of every prefix of ``segments`` (one pass; steps built for the whole schedule, so the
        last value is :meth:`pld_epsilon` of all of it)."""
        total = _total_steps(segments)
        epsilons, left_out = [], 0.0
        prefixes = pld.composed_prefixes(segments, spacing, self._step_builder(segments, dataset_size))
        for (q, _, steps), composed in zip(segments, prefixes, strict=True):
            if self.sampling == "with_replacement":
                left_out += steps * _mixture(q, dataset_size, total)[2]
            epsilons.append(pld.epsilon_for_delta(composed, delta - left_out) - math.log1p(-left_out))
        return epsilons

    def pld_delta(self, segments, epsilon: float, spacing: float, dataset_size: int | None) -> float:
        added_delta, added_epsilon = self.adjustments(segments, dataset_size)
        return pld.delta_at_spacing(segments, max(epsilon - added_epsilon, 0.0), spacing,
                                    self._step_builder(segments, dataset_size)) + added_delta

    def _step_builder(self, segments, dataset_size: int | None):
        total = _total_steps(segments)
        return lambda q, sigma, spacing: self.single_step(q, sigma, spacing, dataset_size, total)

    def adjustments(self, segments, dataset_size: int | None) -> tuple[float, float]:
        """(δ added, ε added) for mass left out of the PLD: nonzero only for with-replacement mixtures.

        If each step leaves out mass τ_i of K, the T-step output is within total variation Στ_i of the
        PLD's: δ(ε) ≤ δ_PLD(ε + log(1 - Στ)) + Στ (docs/SAMPLING.md §3).
        """
        if self.sampling != "with_replacement":
            return 0.0, 0.0
        total = _total_steps(segments)
        left_out = sum(steps * _mixture(q, dataset_size, total)[2] for q, _, steps in segments)
        return left_out, -math.log1p(-left_out)

    # ---- exact (shuffle) -----------------------------------------------------------------------------

    def gaussian_mu(self, segments, dataset_size: int | None = None) -> float:
        """μ of the composed Gaussian: sensitivity × sqrt(Σ participations / σ²)."""
        sensitivity = 1.0 if self.neighboring_relation == "add_or_remove_one" else 2.0
        return sensitivity * math.sqrt(sum(participations(q, t, dataset_size) / sigma**2 for q, sigma, t in segments))

    def participations(self, segments, dataset_size: int | None = None) -> int:
        return sum(participations(q, t, dataset_size) for q, _, t in segments)

    def exact_delta(self, segments, epsilon: float, dataset_size: int | None = None) -> float:
        return gaussian_delta(self.gaussian_mu(segments, dataset_size), epsilon)

    def exact_epsilon(self, segments, delta: float, dataset_size: int | None = None) -> float:
        return gaussian_epsilon(self.gaussian_mu(segments, dataset_size), delta)


def _total_steps(segments) -> int:
    return sum(int(steps) for _, _, steps in segments)


def _half_noise(segments):
    return [(q, sigma / 2, steps) for q, sigma, steps in segments]


#: How an answer of the participation bound (:func:`chance_of_use`) is certified.
PARTICIPATION_METHOD = (
    "participation bound: a record is in a step's sample with probability at most q_i, so it is used at all with "
    "probability p ≤ 1 − Π(1 − q_i)^T_i; coupling the runs with and without it (or with it replaced) on the same "
    "sampling randomness, their outputs differ only on that event, so the schedule is (0, p)-DP")


def chance_of_use(segments, sampling: str) -> float:
    """An upper bound on the probability that one record enters any step's sample: 1 − Π(1 − q_i)^T_i.

    A step includes a given record with probability q (Poisson), m/N = q (fixed size), 1 − (1 − 1/N)^m ≤ q (with
    replacement); client sampling only lowers it. Shuffling uses every record every epoch: 1.
    """
    if sampling == "shuffle":
        return 1.0
    log_unused = sum(steps * math.log1p(-q) if q < 1 else -math.inf for q, _, steps in segments)
    return -math.expm1(log_unused)


def participations(sample_rate: float, steps: int, dataset_size: int | None = None) -> int:
    """Batches a record joins: one per started epoch. An epoch is ⌈N/m⌉ steps when N is known (a DataLoader's
    length, the last batch smaller), else ⌊1/q⌋ (at least 1; fewer steps per epoch, so never fewer epochs)."""
    if dataset_size is not None:
        steps_per_epoch = math.ceil(dataset_size / round(sample_rate * dataset_size))
    else:
        steps_per_epoch = max(1, math.floor(1 / sample_rate + 1e-12))
    return math.ceil(steps / steps_per_epoch)


MECHANISMS: dict[tuple[str, str], Mechanism] = {
    ("poisson", "add_or_remove_one"): Mechanism(
        "poisson", "add_or_remove_one",
        pld_method="PLD of the Poisson-subsampled Gaussian, pessimistic connect-the-dots (Doroshenko et al. 2022) "
                   "via dp-accounting, adaptive spacing",
        rdp_method="RDP of the sampled Gaussian (Mironov, Talwar, Zhang 2019), improved conversion "
                   "(Canonne, Kamath, Steinke 2020, Prop. 12)"),
    ("poisson", "replace_one"): Mechanism(
        "poisson", "replace_one",
        pld_method="PLD of the Poisson-subsampled Gaussian for replace-one neighbours (contributions ±C, "
                   "dp-accounting REPLACE_ONE), pessimistic connect-the-dots, adaptive spacing",
        rdp_method=None),
    ("fixed_size", "add_or_remove_one"): Mechanism(
        "fixed_size", "add_or_remove_one",
        pld_method="Poisson-subsampled Gaussian PLD at rate m/N and noise multiplier σ/2: the added record "
                   "displaces one of the batch (sensitivity 2C; coupling, docs/SAMPLING.md §2; Lebeda, Regehr, "
                   "Kamath, Steinke 2024)",
        rdp_method="RDP of the sampled Gaussian at rate m/N and noise multiplier σ/2 (same coupling)",
        bound="upper bound"),
    ("fixed_size", "replace_one"): Mechanism(
        "fixed_size", "replace_one",
        pld_method="PLD of the symmetrised subsampled-Gaussian pair C_p(G_{2/σ}) (Dong, Roth, Su 2022, Thm 4.2; "
                   "sensitivity 2C), connect-the-dots from the pair's exact profile, adaptive spacing",
        rdp_method="RDP of sampling without replacement (Wang, Balle, Kasiviswanathan 2019, Thm 27) at noise "
                   "multiplier σ/2 (sensitivity 2C), improved conversion",
        bound="upper bound"),
    ("with_replacement", "add_or_remove_one"): Mechanism(
        "with_replacement", "add_or_remove_one",
        pld_method="PLD of the mixture of Gaussians with sensitivities 2kC, k ~ Binomial(s, 1/N) "
                   "(Choquette-Choo, Ganesh, Steinke, Thakurta 2024, Cor. 4.7), connect-the-dots from its exact "
                   "profile, adaptive spacing",
        rdp_method=None, bound="upper bound"),
    ("with_replacement", "replace_one"): Mechanism(
        "with_replacement", "replace_one",
        pld_method="symmetrised PLD of an advanced-joint-convexity bound (Balle, Barthe, Gaboardi 2018, Thm 2) on "
                   "the mixture of Gaussians with sensitivities 2kC, k ~ Binomial(s, 1/N) given k ≥ 1, and its "
                   "components (docs/SAMPLING.md §3b), adaptive spacing",
        rdp_method=None, bound="upper bound"),
    ("shuffle", "add_or_remove_one"): Mechanism(
        "shuffle", "add_or_remove_one", pld_method=None, rdp_method=None,
        exact_method="exact Gaussian profile (Balle & Wang 2018, Thm 8) of one participation per epoch "
                     "(sensitivity C), no amplification by shuffling credited (Chua et al. 2024)",
        bound="upper bound"),
    ("shuffle", "replace_one"): Mechanism(
        "shuffle", "replace_one", pld_method=None, rdp_method=None,
        exact_method="exact Gaussian profile (Balle & Wang 2018, Thm 8) of one participation per epoch "
                     "(sensitivity 2C), no amplification by shuffling credited (Chua et al. 2024)",
        bound="upper bound"),
}


def supported_combinations() -> str:
    """One line per supported combination with its accountants, for error messages."""
    return "; ".join(f"{s}/{r} ({', '.join(m.accountants)})" for (s, r), m in MECHANISMS.items())


def mechanism(sampling: str, neighboring_relation: str, accountant: str | None = None) -> Mechanism:
    """The mechanism of a sampling and neighbouring relation, or a ValueError if ``accountant`` is not available
    for it (naming what each combination supports)."""
    check_choice("sampling", sampling, SAMPLINGS)
    check_choice("neighboring_relation", neighboring_relation, NEIGHBORING_RELATIONS)
    found = MECHANISMS[(sampling, neighboring_relation)]  # every combination of the two choices is listed
    if accountant == "rdp" and found.rdp_method is None and found.exact_method is None:
        raise UnsupportedCombinationError(
            f"accountant={accountant} is not available for sampling={sampling} with neighboring_relation="
            f"{neighboring_relation}; use {' or '.join(found.accountants)} (supported: {supported_combinations()})")
    return found


# --------------------------------------------------------------------------------------------------
# Single-step PLDs
# --------------------------------------------------------------------------------------------------


def clear_cache() -> None:
    """Forget the single-step PLDs and mixtures built so far (benchmarks time cold calls)."""
    for cached in (_binomial_mixture, _with_replacement_step, _with_replacement_replace_step, _symmetrised_step,
                   _poisson_step):
        cached.cache_clear()


def _mixture(sample_rate: float, dataset_size: int | None, total_steps: int):
    """Multiplicities k = 0 … k_max of the differing record among s = qN draws, their probabilities
    (renormalised) and the left-out tail P(K > k_max) ≤ 1e-24 / T."""
    if dataset_size is None:
        raise ValueError("with_replacement sampling needs dataset_size (N): the multiplicity of a record among "
                         "s = qN draws is Binomial(s, 1/N)")
    draws = round(sample_rate * dataset_size)
    return _binomial_mixture(draws, dataset_size, _MIXTURE_TAIL / max(total_steps, 1))


@functools.lru_cache(maxsize=64)
def _binomial_mixture(draws: int, dataset_size: int, tail: float):
    law = stats.binom(draws, 1 / dataset_size)
    low, top = -1, draws  # the smallest k with P(K > k) ≤ tail, by bisection (scipy's isf is inexact this far out)
    while top - low > 1:
        middle = (low + top) // 2
        low, top = (low, middle) if law.sf(middle) <= tail else (middle, top)
    if top + 1 > MAX_MIXTURE_COMPONENTS:
        raise ValueError(f"with_replacement: s = {draws} draws from N = {dataset_size} give {top + 1} "
                         f"multiplicities to account (limit {MAX_MIXTURE_COMPONENTS}); use fewer draws per step")
    ks = np.arange(top + 1)
    probs = law.pmf(ks)
    left_out = float(law.sf(top)) if top < draws else 0.0
    return ks, probs / probs.sum(), left_out


def _connect_the_dots(deltas: np.ndarray, spacing: float) -> tuple[np.ndarray, float]:
    """Masses at losses l_0 + ih (i = 0 … n) and at +∞ of the discrete PLD whose privacy profile is the chord,
    linear in e^ε, through the exact profile values ``deltas`` at those losses (Doroshenko et al. 2022's
    connect-the-dots idea, built from the profile).

    A profile is convex in e^ε, so the chords lie above it on [l_0, l_n]; left of l_0 the chord runs to
    δ = 1 at e^ε = 0 (above the profile by convexity), right of l_n the profile is bounded by δ_n, which goes
    to +∞. With d_j = δ_j - δ_{j+1} and r = 1/(e^h - 1): ω_0 = 1 - δ_0 - r d_0, ω_i = r(e^h d_{i-1} - d_i),
    ω_n = r e^h d_{n-1}; they sum to 1 - δ_n. Negative masses (rounding at a kink) are dropped, which only
    raises the profile; the caller's mass at the bottom takes up the rest.
    """
    drops = deltas[:-1] - deltas[1:]
    ratio = 1 / math.expm1(spacing)
    grow = math.exp(spacing) * ratio
    masses = np.empty(len(deltas))
    masses[0] = 1 - deltas[0] - ratio * drops[0]
    masses[1:-1] = grow * drops[:-1] - ratio * drops[1:]
    masses[-1] = grow * drops[-1]
    return np.maximum(masses, 0.0), float(deltas[-1])


def _pmf(first_index: int, masses: np.ndarray) -> dict[int, float]:
    indices = np.flatnonzero(masses > 0)
    return dict(zip((indices + first_index).tolist(), masses[indices].tolist(), strict=True))


def _log_difference(log_first: np.ndarray, log_second: np.ndarray) -> np.ndarray:
    """e^a - e^b ≥ 0 from logs, keeping the digits of tiny differences, nudged up 1e-12 against rounding."""
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.exp(log_first) * -np.expm1(np.minimum(log_second - log_first, 0.0))
    return np.where(log_second >= log_first, 0.0, value) * (1 + 1e-12)


class _GaussianMixture:
    """The pair P = Σ_k p_k N(c_k, σ²) vs Q = N(0, σ²), shifts c_k ≥ 0 with c_0 = 0: its privacy loss
    L(y) = log Σ_k p_k exp((c_k y - c_k²/2)/σ²) is convex and increasing in y, from log p_0 up."""

    #: Tail probability left beyond the y-range the grid covers (charged to +∞ or to the chord).
    TAIL = 1e-20

    def __init__(self, shifts: np.ndarray, probs: np.ndarray, sigma: float):
        keep = probs > 0
        self.shifts, self.log_probs, self.sigma = shifts[keep], np.log(probs[keep]), sigma
        bound = -stats.norm.isf(self.TAIL)  # Φ(bound) = TAIL
        self.y_low = bound * sigma
        self.y_high = optimize.brentq(lambda y: self.upper_tail_log(np.array([y]))[0] - math.log(self.TAIL),
                                      0.0, float(self.shifts.max()) - bound * sigma + 1.0)

    def loss(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """L(y) and L'(y)."""
        exponents = self.log_probs + (np.outer(y, self.shifts) - self.shifts**2 / 2) / self.sigma**2
        value = rdp.log_sum_exp_rows(exponents)
        weights = np.exp(exponents - value[:, None])
        return value, weights @ self.shifts / self.sigma**2

    def upper_tail_log(self, y: np.ndarray) -> np.ndarray:
        """log P(Y > y) for Y ~ P."""
        return rdp.log_sum_exp_rows(self.log_probs + special.log_ndtr((self.shifts - y[:, None]) / self.sigma))

    def lower_tail_log(self, y: np.ndarray) -> np.ndarray:
        """log P(Y < y) for Y ~ P."""
        return rdp.log_sum_exp_rows(self.log_probs + special.log_ndtr((y[:, None] - self.shifts) / self.sigma))

    def inverse(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """y with L(y) = value, by Newton from the right (L convex increasing: iterates stay ≥ the root), and
        whether it converged. Values ≤ log p_0 have no root (L > log p_0): y = -∞, reported converged."""
        rising = self.shifts > 0
        reachable = values > self.log_probs[0] if self.shifts[0] == 0 else np.ones(len(values), dtype=bool)
        targets = values[reachable]
        y = np.min((self.sigma**2 * (targets[:, None] - self.log_probs[rising]) + self.shifts[rising]**2 / 2)
                   / self.shifts[rising], axis=1)
        # A start closer to the root: the first point right of it on a table of L (Newton then needs a few steps).
        table_y = np.linspace(self.y_low, self.y_high, 2048)
        table_loss = self.loss(table_y)[0]
        right = np.searchsorted(table_loss, targets)
        inside = right < len(table_y)
        y[inside] = np.minimum(y[inside], table_y[right[inside]])
        active = np.ones(len(targets), dtype=bool)
        converged = np.zeros(len(targets), dtype=bool)
        for _ in range(200):
            value, slope = self.loss(y[active])
            with np.errstate(divide="ignore", invalid="ignore"):
                step = (value - targets[active]) / slope
            stuck = ~np.isfinite(step) | (slope <= 0)
            done = ~stuck & (np.abs(step) <= 1e-12 * (1 + np.abs(y[active])))
            index = np.flatnonzero(active)
            y[index[~stuck & ~done]] -= step[~stuck & ~done]
            converged[index[done]] = True
            active[index[done | stuck]] = False
            if not active.any():
                break
        full = np.full(len(values), -np.inf)
        full[reachable] = y
        ok = np.ones(len(values), dtype=bool)
        ok[reachable] = converged
        return full, ok

    def remove_profile(self, losses: np.ndarray) -> np.ndarray:
        """δ(ε) of (P, Q) at ε = ``losses``: P(Y > y_ε) - e^ε Q(Y > y_ε)."""
        y, converged = self.inverse(losses)
        if not converged.all():
            raise pld.PLDUnavailableError("the mixture's privacy loss could not be inverted on the grid")
        return _log_difference(self.upper_tail_log(y), losses + special.log_ndtr(-y / self.sigma))

    def add_profile(self, losses: np.ndarray) -> np.ndarray:
        """δ(ε) of (Q, P) at ε = ``losses``: Q(Y < y) - e^ε P(Y < y) with L(y) = -ε; where Newton cannot
        reach the root (L(y) → log p_0), Q(Y < y) at the last iterate, which lies right of it, bounds δ."""
        y, converged = self.inverse(-losses)
        exact = _log_difference(special.log_ndtr(y / self.sigma), losses + self.lower_tail_log(y))
        return np.where(converged, exact, np.exp(special.log_ndtr(y / self.sigma)))

    def pld(self, spacing: float):
        bottom, top = (float(v) for v in self.loss(np.array([self.y_low, self.y_high]))[0])
        if self.shifts[0] == 0:
            bottom = min(bottom, float(self.log_probs[0]))
        # The grids start below the smallest loss (log p_0 ≤ L): most of the mass sits just above it, and
        # collapsing it up to the next grid point would add up over many compositions.
        remove_first, remove_last = math.floor(bottom / spacing) - 1, math.ceil(top / spacing)
        add_first, add_last = math.floor(-top / spacing), math.ceil(-bottom / spacing)
        pld.check_grid_size([(1.0, 1.0, 1)], spacing * (remove_last - remove_first + add_last - add_first) / 14,
                            0.0)
        (remove, remove_infinity), (add, add_infinity) = pld.both_sides(
            lambda: _connect_the_dots(self.remove_profile(np.arange(remove_first, remove_last + 1) * spacing), spacing),
            lambda: _connect_the_dots(self.add_profile(np.arange(add_first, add_last + 1) * spacing), spacing),
            remove_last - remove_first)
        return pld.from_masses(spacing, (remove_first, remove, remove_infinity), (add_first, add, add_infinity))


class _PoissonPair(_GaussianMixture):
    """The Poisson-subsampled Gaussian pair (1-q)N(0, σ²) + qN(1, σ²) vs N(0, σ²), whose privacy loss
    L(y) = log(1 - q + q e^{(y - 1/2)/σ²}) inverts in closed form: y = σ² log((e^L - 1 + q)/q) + 1/2."""

    def __init__(self, sample_rate: float, sigma: float):
        self.shifts, self.sigma, self.sample_rate = np.array([0.0, 1.0]), sigma, sample_rate
        with np.errstate(divide="ignore"):
            self.log_probs = np.log(np.array([1.0 - sample_rate, sample_rate]))
        if sample_rate == 1.0:
            self.shifts, self.log_probs = self.shifts[1:], self.log_probs[1:]
        bound = float(special.ndtri(self.TAIL))  # Φ(bound) = TAIL
        self.y_low = bound * sigma
        # P(Y > y) ≤ Φ̄((y - 1)/σ) for both components: the grid covers at least the generic y-range
        self.y_high = 1.0 - bound * sigma

    def inverse(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = np.expm1(values) + self.sample_rate
            y = self.sigma**2 * (np.log(inside) - math.log(self.sample_rate)) + 0.5
        y = np.where(inside > 0, y, -np.inf)
        return y, np.ones(len(values), dtype=bool)

    # The two profiles in closed form. With e^ε - 1 + q = q e^{(y - 1/2)/σ²} at the root y of L(y) = ε, the
    # mixture's P(Y > y) - e^ε Q(Y > y) is q Φ̄((y-1)/σ) - (e^ε - 1 + q) Φ̄(y/σ): two log-Φ evaluations per grid
    # point where the generic form takes three and a log-sum-exp. Hand-written because the one-step PLD is the
    # cost of a q or σ calibration at small σ (0.34 s → 0.11 s for 5e5 points a side);
    # tests/bounds/test_sampling.py checks both against the generic mixture's.

    def remove_profile(self, losses: np.ndarray) -> np.ndarray:
        """δ(ε) of (P, Q): q Φ̄((y-1)/σ) - (e^ε - 1 + q) Φ̄(y/σ) at L(y) = ε, and 1 - e^ε below log(1 - q)."""
        log_inside, reachable = self._log_shifted(losses)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = self.sigma**2 * (log_inside - math.log(self.sample_rate)) + 0.5
            value = _log_difference(math.log(self.sample_rate) + special.log_ndtr((1.0 - y) / self.sigma),
                                    log_inside + special.log_ndtr(-y / self.sigma))
        return np.where(reachable, value, -np.expm1(np.minimum(losses, 0.0)) * (1 + 1e-12))

    def add_profile(self, losses: np.ndarray) -> np.ndarray:
        """δ(ε) of (Q, P): e^ε [(e^-ε - 1 + q) Φ(y/σ) - q Φ((y-1)/σ)] at L(y) = -ε, and 0 above -log(1 - q)
        (the loss of Q against P never exceeds it)."""
        log_inside, reachable = self._log_shifted(-losses)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = self.sigma**2 * (log_inside - math.log(self.sample_rate)) + 0.5
            value = _log_difference(losses + log_inside + special.log_ndtr(y / self.sigma),
                                    losses + math.log(self.sample_rate) + special.log_ndtr((y - 1.0) / self.sigma))
        return np.where(reachable, value, 0.0)

    def _log_shifted(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(log(e^v - 1 + q), whether it is defined, e^v > 1 - q) without overflow or lost digits: for |v| ≤ 1 from
        expm1 (e^v - 1 keeps its digits), beyond as v + log1p((q - 1) e^-v) (exact at q = 1, where e^v - 1 + 1 would
        round e^-37 to a multiple of 1e-16; no overflow where a grid for σ = 0.02 reaches |v| = 1 700)."""
        q = self.sample_rate
        outer = np.abs(values) > 1.0
        result = np.empty_like(values, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # each point takes one of the two forms
            result[~outer] = np.log(np.expm1(values[~outer]) + q)
            far = values[outer]
            result[outer] = far if q == 1.0 else far + np.log1p((q - 1.0) * np.exp(-far))
        return result, np.isfinite(result)


@functools.lru_cache(maxsize=1024)
def _poisson_step(sample_rate: float, noise_multiplier: float, spacing: float):
    """PLD of one Poisson-subsampled Gaussian step under add/remove-one: dp-accounting's pessimistic
    connect-the-dots PLD (``from_gaussian_mechanism`` with ``sampling_prob``), built from the pair's exact
    profile with the privacy loss inverted in closed form. Hand-written because it is measurably faster: a
    schedule whose rate changes every round builds one per round (tests/bounds/test_sampling.py compares the two:
    ε agrees to 1e-8; benchmarks/sampling.py times them)."""
    return _PoissonPair(sample_rate, noise_multiplier).pld(spacing)


@functools.lru_cache(maxsize=16)
def _with_replacement_step(sample_rate: float, noise_multiplier: float, spacing: float, dataset_size: int,
                           total_steps: int):
    """PLD of one with-replacement step: the mixture Σ_k P(K=k) N(2k, σ²) vs N(0, σ²) (docs/SAMPLING.md §3).

    Built by :func:`_connect_the_dots` from the mixture's exact profile (Gaussian tails at the inverse of the
    privacy loss, vectorised): the same pessimistic discretisation dp-accounting's
    ``from_mixture_gaussian_mechanism`` makes, about 100× faster (2.3 s against 0.03 s at spacing 4e-3 for
    11 components; tests compare the two).
    """
    ks, probs, _ = _mixture(sample_rate, dataset_size, total_steps)
    return _GaussianMixture(2.0 * ks, probs, noise_multiplier).pld(spacing)


@functools.lru_cache(maxsize=16)
def _symmetrised_step(sample_rate: float, noise_multiplier: float, spacing: float):
    """Pessimistic PLD of the symmetric pair whose trade-off is C_p(G_{1/σ'}) = min{f_p, f_p⁻¹}**
    (Dong, Roth, Su 2022, Thm 4.2: sampling m of N without replacement, replace-one neighbours).

    For ε ≥ 0 its privacy profile is that of the Poisson "remove" pair (1-p)N(0,σ'²) + pN(1,σ'²) vs
    N(0,σ'²), evaluated exactly at ε = ih and made a symmetric PLD by :func:`_symmetric_pld`
    (docs/SAMPLING.md §1).
    """
    pair = _GaussianMixture(np.array([0.0, 1.0]), np.array([1 - sample_rate, sample_rate]), noise_multiplier)
    top = math.ceil(float(pair.loss(np.array([pair.y_high]))[0][0]) / spacing)
    return _symmetric_pld(pair.remove_profile(np.arange(top + 1) * spacing), spacing)


def _symmetric_pld(deltas: np.ndarray, spacing: float):
    """The symmetric discrete PLD whose profile at ε = ih ≥ 0 is ``deltas`` (a convex function of e^ε): the
    masses of :func:`_connect_the_dots` at losses ih > 0, e^{-ih} times them at -ih, δ at the top of the grid
    at +∞ and the rest at 0. Symmetric, so it dominates for every order once it does for ε ≥ 0."""
    pld.import_libraries()
    from dp_accounting.pld import privacy_loss_distribution

    top = len(deltas) - 1
    grid = np.arange(top + 1) * spacing
    masses, infinity = _connect_the_dots(deltas, spacing)
    masses = masses[1:]
    zero = 1.0 - infinity - float(np.sum(masses * (1 + np.exp(-grid[1:]))))
    if zero < -1e-12:
        raise pld.PLDUnavailableError(f"the symmetrised PLD is not a distribution at spacing {spacing:g} "
                                      f"(mass at 0: {zero:.3g})")
    pmf = {0: max(zero, 0.0), **_pmf(1, masses), **_pmf(-top, (masses * np.exp(-grid[1:]))[::-1])}
    return privacy_loss_distribution.PrivacyLossDistribution.create_from_rounded_probability(
        pmf, infinity, spacing, pessimistic_estimate=True, symmetric=True)


def _chord_weights(left: np.ndarray, right: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(e^at - e^left) / (e^right - e^left), from differences of exponents (e^ε overflows past 709)."""
    with np.errstate(over="ignore"):
        return -np.expm1(left - at) / (np.exp(right - at) - np.exp(left - at))


def _lower_convex_hull(epsilons: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Values at ``epsilons`` (increasing) of the greatest function below the points that is convex in e^ε
    (monotone chain; the chord test uses :func:`_chord_weights`, so no e^ε is formed)."""
    hull: list[int] = []
    for index in range(len(epsilons)):
        while len(hull) >= 2:
            first, middle = hull[-2], hull[-1]
            weight = float(_chord_weights(epsilons[first:first + 1], epsilons[index:index + 1],
                                          epsilons[middle:middle + 1])[0])
            if values[middle] >= values[first] + weight * (values[index] - values[first]):
                hull.pop()
            else:
                break
        hull.append(index)
    vertices = np.asarray(hull)
    right = np.clip(np.searchsorted(epsilons[vertices], epsilons), 1, len(vertices) - 1)
    left = right - 1
    weight = _chord_weights(epsilons[vertices[left]], epsilons[vertices[right]], epsilons)
    chord = values[vertices[left]] + weight * (values[vertices[right]] - values[vertices[left]])
    return np.where(np.isin(np.arange(len(epsilons)), vertices), values, chord)


@functools.lru_cache(maxsize=16)
def _with_replacement_replace_step(sample_rate: float, noise_multiplier: float, spacing: float, dataset_size: int,
                                   total_steps: int):
    """PLD of one with-replacement step under replace-one neighbours (docs/SAMPLING.md §3b).

    With γ = P(K ≥ 1), B̄ = Σ_{k≥1} P(K=k)/γ · N(2k, σ²), α = 1 + (e^ε - 1)/γ and β = e^ε/α, advanced joint
    convexity (Balle, Barthe, Gaboardi 2018, Thm 2) and joint convexity give, for ε ≥ 0,
    δ(ε) ≤ γ[(1-β)·H_α(B̄‖N(0,σ²)) + β·Σ_{k≥1} P(K=k)/γ · δ_{N(2k,σ²),N(0,σ²)}(log α)]. The true profile is
    convex in e^ε, so it also lies below the lower convex hull of that bound on the grid, which
    :func:`_symmetric_pld` turns into a symmetric PLD.
    """
    ks, probs, _ = _mixture(sample_rate, dataset_size, total_steps)
    gamma = float(probs[1:].sum())
    conditional = probs[1:] / gamma
    shifts = 2.0 * ks[1:]
    mixture = _GaussianMixture(shifts, conditional, noise_multiplier)
    top_loss = float(mixture.loss(np.array([mixture.y_high]))[0][0])
    # log(1 + γ(e^L - 1)) and, on the grid, log α = log(1 + (e^ε - 1)/γ) = ε + log(1 - (1-γ)e^{-ε}) - log γ and
    # β = e^ε/α, all in log space (e^ε overflows past 709).
    top = math.ceil(float(np.logaddexp(math.log1p(-gamma), max(top_loss, spacing) + math.log(gamma))) / spacing) + 1
    grid = np.arange(top + 1) * spacing
    inner = grid + np.log1p(-(1 - gamma) * np.exp(-grid)) - math.log(gamma)
    beta = np.exp(grid - inner)
    remove = mixture.remove_profile(inner)
    gaussians = gaussian_profile(shifts[None, :] / noise_multiplier, inner[:, None]) @ conditional
    bound = np.minimum(gamma * ((1 - beta) * remove + beta * gaussians) * (1 + 1e-12), 1.0)
    return _symmetric_pld(_lower_convex_hull(grid, bound), spacing)


# --------------------------------------------------------------------------------------------------
# The Gaussian mechanism's exact profile (shuffle)
# --------------------------------------------------------------------------------------------------


def gaussian_delta(mu: float, epsilon: float) -> float:
    """δ(ε) = Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ) of μ-GDP (Balle & Wang 2018, Thm 8), in log space.

    The difference is formed as Φ(a)(1 - e^{ε + log Φ(b) - log Φ(a)}), so tiny δ keep their digits;
    it is nudged up by 1e-12 relative so that rounding never lowers it.
    """
    if mu == 0:
        return 0.0
    return float(gaussian_profile(np.array([mu]), np.array([epsilon]))[0])


def gaussian_profile(mu: np.ndarray, epsilon: np.ndarray) -> np.ndarray:
    """:func:`gaussian_delta` for arrays (broadcast), μ > 0."""
    return _log_difference(special.log_ndtr(mu / 2 - epsilon / mu), epsilon + special.log_ndtr(-mu / 2 - epsilon / mu))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with :func:`gaussian_delta` ≤ δ, rounded up (bisection on a monotone function)."""
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    high = 1.0
    while gaussian_delta(mu, high) > delta:
        high *= 2
    root = optimize.brentq(lambda e: gaussian_delta(mu, e) - delta, 0.0, high, xtol=1e-14, rtol=1e-13)
    while gaussian_delta(mu, root) > delta:
        root = math.nextafter(root, math.inf) * (1 + 1e-13)
    return root

