"""DP-SCD (Damaskinos thesis, ch. 6): noise calibration, sensitivities, the convergence recursion, the cost model.

Paper: ``damaskinos_thesis.txt`` (``damaskinos L1313`` = line 1313); spec ``specs/damaskinos_dpscd.md``
(its §8 items ``A…``, ours ``DPSCD-…`` in ``docs/ERRATA.md``).

Algorithm 1 (L1313) runs T outer iterations; each samples a mini-batch B of L of the N examples, computes
L independent dual coordinate updates, scales each to |Δ_j| ≤ C and adds Gaussian noise N(0, 2C²σ²) to
the L updated coordinates of α and to the shared vector v. σ is "the smallest noise multiplier with
MA(δ, σ, q = L/N, T) ≤ ε" (Eq. 6.2, L1336-1340).

Privacy model of every number here:

* **Poisson sampling** at rate q = L/N (each example joins an iteration's batch independently); the
  thesis says "randomly sample L examples" and its code shuffles per epoch, which no accountant here
  covers (spec §4.7 C1);
* **add/remove-one** neighbouring data sets, as in the proof of Lemma 2 (L1328; L470's replace-one
  wording would roughly double the sensitivity, spec A7);
* **release of v only** (hence θ = v/(λN)): if α is observed after each iteration the batch is revealed
  and subsampling does not amplify (:func:`epsilon_if_batch_revealed`, spec §4.7 C3);
* T = ⌊epochs·N/L⌋ outer iterations (the code's ``iters = total_updates/lot_size``, spec A3).

Accountants (``accountant=``): ``"ma128"`` is the authors' choice, Abadi et al.'s moments accountant with
integer orders λ = 1…128 and the classic tail bound (spec A4; :func:`bounds.rdp.moments_accountant_epsilon`);
``"rdp"`` and ``"pld"`` are the tight modern accountants of :mod:`bounds.accounting`. All three are upper
bounds on the mechanism's ε, and calibration returns a σ whose computed ε is ≤ the target.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

from fedplan.bounds import accounting, rdp
from fedplan.bounds.references import cite
from fedplan.bounds.search import NoBoundaryError, find_boundary
from fedplan.bounds.theorem import Hypothesis, TheoremResult, all_hold, hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real

ACCOUNTANTS = ("ma128", "rdp", "pld")
TIGHT_ACCOUNTANTS = ("rdp", "pld")
SAMPLING = "poisson (each example joins an iteration's batch independently with probability q = L/N)"
NEIGHBORING_RELATION = "add_or_remove_one"
#: Sensitivity of one iteration's release per algorithm variant (Lemmas 2-4, L1324, L1377, L1427).
VARIANTS_OF_ALGORITHM = ("dpscd", "seq", "primal", "dpsgd")
#: Eq. 6.2's calibration, whatever the accountant.
CALIBRATION_SOURCE = cite("dpscd", "Eq. 6.2", "L1336-1340")
MA128_SOURCE = (f"{CALIBRATION_SOURCE}: Abadi et al. moments accountant, integer orders lambda = 1..128, classic tail "
                "bound (authors' code; ERRATA DPSCD-A4)")
#: Digits of a calibrated MA128 σ: the thesis-grid values are quoted to 7 (14.22328).
MA128_DIGITS = 7
#: Grid sizes of the thesis' tuning (L1546-1549, L1567): 13 values of C and η, 12 of L.
TUNING_VALUES = {"C": 13, "L": 12, "learning_rate": 13}


# --------------------------------------------------------------------------------------------
# Schedule: T and q from epochs, N and L
# --------------------------------------------------------------------------------------------

def _check_size(examples, batch_size) -> tuple[int, int]:
    n = check_int("examples", examples, low=1)
    return n, check_int("batch_size", batch_size, low=1, high=n)


def outer_iterations(*, examples: int, batch_size: int, epochs: float) -> int:
    """T = ⌊epochs·N/L⌋, the number of composed mechanisms (spec A3; L1546 counts T = 50N updates).

    Exact rational arithmetic, so 50·347 786/1000 gives 17 389 whatever the float rounding. Raises if T < 1.
    """
    n, batch = _check_size(examples, batch_size)
    epochs = check_real("epochs", epochs, low=0.0, low_open=True)
    steps = math.floor(Fraction(epochs) * n / batch)
    if steps < 1:
        raise ValueError(f"epochs={epochs:g} with examples={n} and batch_size={batch} gives T = "
                         f"floor(epochs*N/L) = {steps} iterations; need at least 1")
    return steps


def sample_rate(*, examples: int, batch_size: int) -> float:
    """q = L/N, the sampling ratio of each iteration (L1338)."""
    n, batch = _check_size(examples, batch_size)
    return batch / n


# --------------------------------------------------------------------------------------------
# Privacy: ε of a σ, the order-cap floor, calibration (Eq. 6.2)
# --------------------------------------------------------------------------------------------

def epsilon_floor(*, delta: float, max_lambda: int = rdp.MOMENTS_ACCOUNTANT_MAX_LAMBDA) -> float:
    """Lowest ε the moments accountant can certify with orders λ ≤ λ_max: ln(1/δ)/λ_max (spec F7).

    As σ → ∞ every log moment vanishes and ε_MA → ln(1/δ)/λ_max; δ = 1e-3 gives 0.0540 for λ_max = 128,
    so ε = 0.1 (the thesis' smallest) needs λ_max ≥ 70 — the reason for the authors' 128 orders.
    """
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    max_lambda = check_int("max_lambda", max_lambda, low=1)
    return math.log(1 / delta) / max_lambda


def ma_epsilon(*, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
               max_lambda: int = rdp.MOMENTS_ACCOUNTANT_MAX_LAMBDA) -> tuple[float, int]:
    """(ε, λ*) of the moments accountant MA(δ, σ, q, T) with integer orders λ ≤ max_lambda (Eq. 2.11, L491)."""
    steps = check_int("steps", steps, low=1, high=accounting.MAX_STEPS)
    q = accounting.check_sample_rate(sample_rate)
    return rdp.moments_accountant_epsilon(sample_rate=q, noise_multiplier=noise_multiplier, steps=steps,
                                          delta=delta, max_lambda=max_lambda)


def epsilon_for_noise(*, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                      accountant: str = "ma128") -> float:
    """ε of T iterations at noise multiplier σ and rate q under the named accountant (an upper bound)."""
    accountant = check_choice("accountant", accountant, ACCOUNTANTS)
    if accountant == "ma128":
        return ma_epsilon(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps, delta=delta)[0]
    return accounting.get_epsilon(delta=delta, sample_rate=sample_rate, noise_multiplier=noise_multiplier,
                                  steps=steps, accountant=accountant).epsilon


@dataclass(frozen=True)
class NoiseCalibration(TheoremResult):
    """σ from Eq. 6.2 under one accountant, with the ε it achieves (computed at σ, ≤ the target).

    ``order`` is the optimal moment order λ* (ma128) or RDP order α* (rdp; ``None`` for pld).
    ``epsilon_floor`` is ln(1/δ)/128 for ma128 (no σ reaches a lower ε) and 0 for the tight accountants.
    ``variant`` is ``"paper"`` for the authors' MA128 and ``"corrected"`` for a tight accountant.
    """

    noise_multiplier: float
    epsilon: float
    target_epsilon: float
    target_delta: float
    sample_rate: float
    steps: int
    accountant: str
    requested_accountant: str
    order: float | None
    epsilon_floor: float
    variant: str
    source: str
    notes: tuple[str, ...] = ()
    sampling: str = SAMPLING
    neighboring_relation: str = NEIGHBORING_RELATION

    def statement(self) -> str:
        return (f"noise multiplier sigma = {self.noise_multiplier:.8g} gives epsilon = "
                f"{accounting.round_up(self.epsilon):.6g} <= {self.target_epsilon:g} at delta = "
                f"{self.target_delta:g} over T = {self.steps} iterations at sampling rate q = {self.sample_rate:.6g}, "
                f"for add/remove-one neighbouring data sets under Poisson sampling (accountant {self.accountant}: "
                f"{self.source}).")

    def to_dict(self) -> dict:
        return super().to_dict() | {"statement": self.statement()}


def _calibrate_ma128(target_epsilon: float, target_delta: float, q: float, steps: int) -> NoiseCalibration:
    floor = epsilon_floor(delta=target_delta)
    checks = (hypothesis("target_epsilon > ln(1/delta)/128", target_epsilon, ">", floor, "spec F7"),)
    if not checks[0].holds:
        raise ValueError(f"target_epsilon={target_epsilon:g} is not above the lowest epsilon the moments accountant "
                         f"with orders <= 128 can certify at delta={target_delta:g}: ln(1/delta)/128 = {floor:.6g} "
                         "(use accountant 'rdp' or 'pld')")

    def epsilon_at(sigma: float) -> float:
        return rdp.moments_accountant_epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps,
                                              delta=target_delta)[0]

    start = max(0.3, q * math.sqrt(2 * steps * math.log(1 / target_delta)) / target_epsilon)
    try:
        found = find_boundary(epsilon_at, target=target_epsilon, increasing=False, start=start,
                              lower=rdp.MIN_NOISE_MULTIPLIER, upper=rdp.MAX_NOISE_MULTIPLIER, digits=MA128_DIGITS,
                              first_step=1.0, ftol=1e-7, xtol=1e-8)
    except NoBoundaryError as failure:
        raise ValueError(f"target_epsilon={target_epsilon:g} cannot be met by the moments accountant: even "
                         f"sigma={failure.point.x:g} gives epsilon={failure.point.value:.6g}") from None
    sigma = found.safe.x
    epsilon, best = rdp.moments_accountant_epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps,
                                                   delta=target_delta)
    notes = ()
    if best == rdp.MOMENTS_ACCOUNTANT_MAX_LAMBDA:
        notes = (f"the optimal order is the cap lambda = {best}: more orders would certify a smaller sigma "
                 "(spec §4.4 item 1)",)
    return NoiseCalibration(noise_multiplier=sigma, epsilon=epsilon, target_epsilon=target_epsilon,
                            target_delta=target_delta, sample_rate=q, steps=steps, accountant="ma128",
                            requested_accountant="ma128", order=float(best), epsilon_floor=floor, variant="paper",
                            hypotheses=checks, source=MA128_SOURCE, notes=notes)


def calibrate_noise(*, target_epsilon: float, target_delta: float, sample_rate: float, steps: int,
                    accountant: str = "ma128") -> NoiseCalibration:
    """Smallest σ with ε_accountant(δ, σ, q, T) ≤ target_epsilon (Eq. 6.2, L1336-1340; spec F6, A1-A2).

    ``"ma128"`` searches on 7-digit numbers and returns the smallest one whose computed ε is ≤ the target
    (the thesis' "= ε" read as "≤ ε", A1; its 1 %-stopping rule replaced by that precision, A2). It raises
    ``ValueError`` when the target is not above ln(1/δ)/128, the floor of that accountant. ``"rdp"``/``"pld"``
    delegate to :func:`bounds.accounting.calibrate_noise_multiplier` (PLD falls back to RDP when it is
    slower than its time budget; ``accountant`` then says ``"rdp"``).
    """
    accountant = check_choice("accountant", accountant, ACCOUNTANTS)
    target_epsilon = check_real("target_epsilon", target_epsilon, low=0.0, low_open=True)
    target_delta = check_real("target_delta", target_delta, low=0.0, high=1.0, low_open=True, high_open=True)
    q = accounting.check_sample_rate(sample_rate)
    steps = accounting.check_steps(steps)
    if accountant == "ma128":
        return _calibrate_ma128(target_epsilon, target_delta, q, steps)
    found = accounting.calibrate_noise_multiplier(target_epsilon=target_epsilon, target_delta=target_delta,
                                                  sample_rate=q, steps=steps, accountant=accountant)
    order = None
    if found.accountant == "rdp":
        order = rdp.epsilon_for_segments([(q, found.value, steps)], target_delta)[1]
    notes = (f"fallback: {found.fallback_reason}",) if found.fallback_reason else ()
    return NoiseCalibration(noise_multiplier=found.value, epsilon=found.epsilon, target_epsilon=target_epsilon,
                            target_delta=target_delta, sample_rate=q, steps=steps, accountant=found.accountant,
                            requested_accountant=accountant, order=order, epsilon_floor=0.0, variant="corrected",
                            hypotheses=(), source=f"{CALIBRATION_SOURCE}; accountant: {found.source}", notes=notes)


def compare_accountants(*, target_epsilon: float, target_delta: float, sample_rate: float, steps: int,
                        accountants=ACCOUNTANTS) -> tuple[NoiseCalibration, ...]:
    """The same Eq. 6.2 calibration under each accountant, side by side (MA128 first: the authors' choice).

    MSD (N = 347 786, 50 epochs, δ = 1e-3), ε = 0.1, L = 1000: σ = 14.22328 (MA128), 7.83913 (RDP), smaller
    still with PLD — the tight accountants certify the same ε with about half the noise (spec §4.5).
    """
    return tuple(calibrate_noise(target_epsilon=target_epsilon, target_delta=target_delta, sample_rate=sample_rate,
                                 steps=steps, accountant=check_choice("accountant", name, ACCOUNTANTS))
                 for name in accountants)


def epsilon_if_batch_revealed(*, noise_multiplier: float, epochs: int, delta: float) -> float:
    """ε (MA128) if α is released after each iteration: the batch is then public, no amplification (spec C3).

    Each example is then in ``epochs`` unamplified Gaussian releases with multiplier σ (q = 1, T = epochs):
    for MSD ε = 0.1, L = 1000 (σ = 14.22328, 50 epochs) this is 1.975, not 0.1.
    """
    epochs = check_int("epochs", epochs, low=1)
    return ma_epsilon(noise_multiplier=noise_multiplier, sample_rate=1.0, steps=epochs, delta=delta)[0]


def sensitivity(*, algorithm: str = "dpscd", clipping_norm: float, batch_size: int = 1) -> float:
    """L2 sensitivity S_f of one iteration's release (spec §3.6).

    ``"dpscd"`` √2·C (Lemma 2, L1324); ``"seq"`` (SeqDP-SCD, Lemma 4, L1427) and ``"primal"``
    (PrimalDP-SCD, Lemma 3, L1377, printed √((4L²−2)C), erratum A9) √(4L²−2)·C; ``"dpsgd"`` C.
    The per-coordinate noise std is S_f·σ.
    """
    algorithm = check_choice("algorithm", algorithm, VARIANTS_OF_ALGORITHM)
    c = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    batch = check_int("batch_size", batch_size, low=1)
    factor = {"dpscd": math.sqrt(2), "seq": math.sqrt(4 * batch**2 - 2), "primal": math.sqrt(4 * batch**2 - 2),
              "dpsgd": 1.0}[algorithm]
    return factor * c


# --------------------------------------------------------------------------------------------
# Convergence: Lemma 5, (6.5), Lemma 6 and the recursion of Theorem 7
# --------------------------------------------------------------------------------------------

#: (μ, ν) of the applications of §6.5 (spec §2.3): ℓ_i is 1/μ-smooth, ℓ_i* is ν-smooth.
LOSS_CONSTANTS = {"ridge": (1.0, 1.0), "logistic": (4.0, math.inf), "hinge": (0.0, math.inf)}


def update_rate(*, mu: float, regularization: float, examples: int, batch_size: int, kappa: float = 0.0) -> float:
    """1 − A = (1−κ)μλL/(μλN + L), the expected relative decrease of S(α) per iteration (Lemma 5 (6.4), L1470,
    with the scaling loss (6.5), L1476). L = 1, κ = 0 gives SDCA's μλ/(μλN + 1) (L1472)."""
    mu = check_real("mu", mu, low=0.0, low_open=True)
    lam = check_real("regularization", regularization, low=0.0, low_open=True)
    n, batch = _check_size(examples, batch_size)
    kappa = check_real("kappa", kappa, low=0.0, high=1.0, high_open=True)
    return (1 - kappa) * mu * lam * batch / (mu * lam * n + batch)


def nu_prime(*, nu: float, regularization: float, examples: int, variant: str = "corrected") -> float:
    """ν′ of Lemma 6: ``"paper"`` ν + 1/(λN²) (L1491-1494); ``"corrected"`` ν/N + 1/(λN²).

    The data term of F* carries the 1/N of (2.5), so it is (ν/N)-smooth; with ‖x_j‖ = 1 the trace argument
    of spec §5.4 gives ν/N + 1/(λN²), exact for ridge regression (the printed constant is ~N× loose; A6).
    """
    check_choice("variant", variant, ("corrected", "paper"))
    nu = check_real("nu", nu, low=0.0, low_open=True)
    lam = check_real("regularization", regularization, low=0.0, low_open=True)
    n = check_int("examples", examples, low=1)
    return (nu / n if variant == "corrected" else nu) + 1 / (lam * n**2)


@dataclass(frozen=True)
class ConvergenceBound(TheoremResult):
    """E S(α^(T)) ≤ A^T S_0 + ½ν′Ls²(1 − A^T)/(1 − A) (the unrolled recursion of Theorem 7, L1508-1512).

    The recursion needs only Lemmas 5-6 and (6.5): it holds for every A ∈ (0, 1) whenever the inputs
    validate (μ > 0, finite ν, κ ∈ [0, 1)). ``hypotheses`` are those of Theorem 7's asymptotic rate (6.7):
    L(2(1−κ)μλ − 1) > μλN (L1498, i.e. A < ½), which needs μλ > 1 — false for every experiment of the thesis
    (μλ ≤ 4e-4); when they fail the rate (6.7) is not proved and the result is marked ``"no guarantee"``
    (ERRATA DPSCD-A22; the number, the unrolled recursion, is still shown, with a note saying so).
    ``informative`` says whether the bound is below S_0 (otherwise it certifies nothing).
    """

    bound: float
    initial_suboptimality: float
    contraction: float
    rate: float
    noise_variance: float
    noise_increase: float
    steady_state: float
    nu_prime: float
    steps: int
    informative: bool
    variant: str
    notes: tuple[str, ...]
    source: str = cite("dpscd", "Lemma 5 (6.4), (6.5), Lemma 6 (6.6), Theorem 7", "L1470, L1476, L1491, L1498-1512")

    @property
    def theorem7_applies(self) -> bool:
        """Theorem 7's rate (6.7) is proved (its hypotheses hold); the recursion bound holds regardless."""
        return self.valid

    def to_dict(self) -> dict:
        return super().to_dict() | {"theorem7_applies": self.theorem7_applies}


def theorem7_hypotheses(*, mu: float, regularization: float, examples: int, batch_size: int,
                        kappa: float = 0.0) -> tuple[Hypothesis, ...]:
    """Theorem 7's condition L(2(1−κ)μλ − 1) > μλN (L1498) and its necessary condition μλ > 1 (spec §5.5)."""
    mu = check_real("mu", mu, low=0.0, low_open=True)
    lam = check_real("regularization", regularization, low=0.0, low_open=True)
    n, batch = _check_size(examples, batch_size)
    kappa = check_real("kappa", kappa, low=0.0, high=1.0, high_open=True)
    return (hypothesis("mu*lambda > 1", mu * lam, ">", 1.0, "spec §5.5 (needed by L1498 since L <= N)"),
            hypothesis("L(2(1-kappa)mu*lambda - 1) > mu*lambda*N", batch * (2 * (1 - kappa) * mu * lam - 1), ">",
                       mu * lam * n, "Damaskinos Theorem 7, L1498 (A < 1/2, L1519)"))


def suboptimality_bound(*, initial_suboptimality: float, mu: float, nu: float, regularization: float, examples: int,
                        batch_size: int, clipping_norm: float, noise_multiplier: float, steps: int,
                        kappa: float = 0.0, variant: str = "corrected") -> ConvergenceBound:
    """Bound on the expected dual suboptimality after T iterations of Algorithm 1 (spec §5.5, boxed form).

    s² = 2C²σ² is the per-coordinate noise variance (A5: the thesis writes "σ²"); ν′ from :func:`nu_prime`
    (``variant``); κ the scaling factor of (6.5), an empirical input (A16). Applies when ℓ_i is 1/μ-smooth
    and ℓ_i* ν-smooth (μ > 0, ν < ∞: ridge regression among the thesis' applications, A8).
    MSD ridge (λ = 1e-4, L = 1000, C = 0.1, σ = 14.2233, 50 epochs): 1 − A = 9.664e-5, A^T = 0.186, noise term
    1.70e7 (paper ν′) or 50.4 (corrected) — both above S_0: the bound is uninformative there.
    """
    s0 = check_real("initial_suboptimality", initial_suboptimality, low=0.0)
    steps = check_int("steps", steps, low=0)
    c = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    sigma = check_real("noise_multiplier", noise_multiplier, low=0.0)
    rate = update_rate(mu=mu, regularization=regularization, examples=examples, batch_size=batch_size, kappa=kappa)
    constant = nu_prime(nu=nu, regularization=regularization, examples=examples, variant=variant)
    contraction = 1 - rate
    variance = 2 * c**2 * sigma**2
    increase = 0.5 * constant * batch_size * variance
    decayed = contraction**steps
    # (1 - A^T)/(1 - A) without cancellation when A is within 1e-16 of 1: -expm1(T log A) / rate.
    accumulated = -math.expm1(steps * math.log1p(-rate)) / rate
    bound = decayed * s0 + increase * accumulated
    checks = theorem7_hypotheses(mu=mu, regularization=regularization, examples=examples, batch_size=batch_size,
                                 kappa=kappa)
    notes = ["DPSCD-A5: the noise variance is s^2 = 2 C^2 sigma^2 (Algorithm 1), not the thesis' sigma^2",
             "DPSCD-A6: " + ("nu' = nu/N + 1/(lambda N^2) (corrected Lemma 6)" if variant == "corrected"
                             else "nu' = nu + 1/(lambda N^2) as printed (about N times loose)")]
    if not all_hold(checks):
        notes.append("DPSCD-A22: Theorem 7's conditions fail (they need mu*lambda > 1); the value is the unrolled "
                     "recursion of Lemmas 5-6, which Theorem 7 as stated does not cover")
    return ConvergenceBound(bound=bound, initial_suboptimality=s0, contraction=contraction, rate=rate,
                            noise_variance=variance, noise_increase=increase, steady_state=increase / rate,
                            nu_prime=constant, steps=steps, informative=bound < s0, variant=variant,
                            notes=tuple(notes), hypotheses=checks)


# --------------------------------------------------------------------------------------------
# Cost model (§6.3.2, L1346-1350)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CostModel:
    """Work of Algorithm 1 for T iterations (L1346-1350, counted explicitly in spec §6).

    Per iteration: L subproblems of O(M) each (x_jᵀv and Δv), L + M Gaussian draws; in total T·L coordinate
    updates (the thesis' "O(T·M)" counts T as coordinate updates, A3), ≈ 4·T·L·M flops for dense data,
    T(L + M) draws, memory N + M besides X, L independent updates per iteration. ``tuning_configurations``
    is the grid search of L1567: (L, C) for DP-SCD, (η, L, C) for DP-SGD.
    """

    steps: int
    coordinate_updates: int
    flops: int
    gaussian_draws: int
    draws_per_update: float
    parallel_width: int
    memory_floats: int
    tuning_configurations: dict
    source: str = "Damaskinos §6.3.2, L1346-1350; tuning L1567"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def cost_model(*, examples: int, features: int, batch_size: int, epochs: float) -> CostModel:
    """Cost of DP-SCD for ``epochs`` passes; the Gaussian overhead per update, 1 + M/L, falls with L (L1348)."""
    n, batch = _check_size(examples, batch_size)
    m = check_int("features", features, low=1)
    steps = outer_iterations(examples=n, batch_size=batch, epochs=epochs)
    grid = TUNING_VALUES
    return CostModel(steps=steps, coordinate_updates=steps * batch, flops=4 * steps * batch * m,
                     gaussian_draws=steps * (batch + m), draws_per_update=1 + m / batch, parallel_width=batch,
                     memory_floats=n + m,
                     tuning_configurations={"DP-SCD": grid["L"] * grid["C"], "SeqDP-SCD": grid["L"] * grid["C"],
                                            "DP-SGD": grid["learning_rate"] * grid["L"] * grid["C"], "SCD": 1})
