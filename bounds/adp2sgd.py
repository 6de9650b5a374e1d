"""Xu, Zhang, Wang, A(DP)²SGD: Theorem 2's noise σ ↔ ε with its feasibility band, tight accounting of the same
schedule, and the utility side (Theorem 1, Propositions 1 and 2).

Paper: ``xu_adp2sgd.txt``; docstrings cite its lines (``xu L171`` = line 171). Spec with errata:
``specs/xu_adp2sgd.md`` (its §6 items ``#n``; ours are ``XU-n`` in ``docs/ERRATA.md``).

Setting (xu L72-112). K workers, worker k holds n_k records; each of T (global) iterations one worker,
chosen uniformly (p_k = 1/K, assumed by the proof at L520), draws B of its records without replacement,
averages their gradients (each clipped to G: the paper's "f_i is G-Lipschitz", L171) and adds Gaussian
noise. Neighbouring data sets differ by **replacing** one record (Definition 1, L56).

Privacy model of every number (spec §0, §4):

* **What the noise is added to.** The proof bounds the sensitivity of each worker's *averaged* minibatch
  gradient, Δ₂ = 2G/B (L518), so Theorem 2's σ is the noise std on that mean. Algorithm 1 writes the
  gradient as a *sum* (L77, L109-110); noise on the sum needs std B·σ (erratum XU-1). Internally we
  work with Xu's z = σ/Δ₂ (``noise_to_sensitivity``: noise std / replace-one sensitivity; fedplan's
  ``noise_multiplier``, noise std / clipping norm on the sum, of the same noise is 2z).
* **Paper closed form** (Theorem 2, L171-175, with Lemma 2, L508): records sampled without replacement
  at rate γ = B/(K n₍₁₎) (L520: worker selection and minibatch treated as one sampling, the paper's
  modelling), replace-one neighbours, RDP 5γ²α/z² per step, valid only where z² ≥ 1.5 and
  α ≤ log(1/(γ(1+z²))). Outside that band Theorem 2 certifies nothing.
* **Tight, same model**: Wang-Balle-Kasiviswanathan (2019) Thm 27 RDP of the Gaussian under sampling
  without replacement, replace-one neighbours, q = γ, T steps (:mod:`bounds.rdp_without_replacement`; equal
  to dp-accounting's value wherever its floating-point differences are accurate).
* **Tight, per worker** (conservative, no amplification by worker selection, spec §6 #6): q = B/n₍₁₎
  over the updates of one worker.
* **Reference**: Poisson sampling at rate γ with add/remove-one neighbours (:mod:`bounds.accounting`),
  noise multiplier σ/(G/B) = 2z; a different neighbouring relation, shown for familiarity only.

Hypotheses. Every closed form returns a frozen result carrying the formula's value(s), ``hypotheses``
and ``valid``. **A result with ``valid=False`` is the formula's value, not a guarantee**: its
``guarantee`` is ``"no guarantee"`` (:class:`bounds.theorem.TheoremResult`) and the planner and CLI show it with
the failing hypotheses.
The searches over μ or z (:func:`paper_noise_for_epsilon`, :func:`paper_epsilon_for_noise`) follow the same
contract: where no choice satisfies Theorem 2 they return the printed formula's number at the best μ with the
failing hypothesis and its numbers (``feasible`` is ``valid``), never ``None``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from scipy import optimize

from fedplan.bounds import rdp, rdp_without_replacement
from fedplan.bounds.rdp_without_replacement import rdp_without_replacement_gaussian
from fedplan.bounds.references import cite
from fedplan.bounds.theorem import VARIANTS, Hypothesis, TheoremResult, all_hold, hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real

SOURCE = "Xu, Zhang, Wang, A(DP)2SGD (xu_adp2sgd.txt)"
NEIGHBORING_RELATION = "replace_one"
PAPER_SAMPLING = ("without replacement at rate gamma = B/(K n_(1)) per iteration: uniform worker choice and a "
                  "minibatch of B local records, modelled as one sampling as the paper does (xu L520)")
PER_WORKER_SAMPLING = ("without replacement at rate B/n_(1) over the updates of one worker (no amplification by "
                       "worker selection)")
POISSON_REFERENCE = ("Poisson sampling at rate gamma, add/remove-one neighbours, noise multiplier sigma/(G/B) = 2z "
                     "(reference only: a different neighbouring relation and sampling)")
NOISE_ON_MEAN = "each worker's averaged minibatch gradient (1/B) sum of per-example gradients clipped to G (xu L518)"
NOISE_ON_SUM = "the summed minibatch gradient as Algorithm 1 writes it (xu L109-110)"
#: Lemma 2's noise condition σ²/Δ² ≥ 1.5 (xu L508), compared with this relative slack: fl(√1.5)² < 1.5.
MIN_NOISE_SQUARED = 1.5
RELATIVE_SLACK = 1e-12
#: The least-noise search aims this fraction inside the target, so rounding cannot put ε above it.
CALIBRATION_MARGIN = 1e-10
#: Integer RDP orders of the tight without-replacement accountant (Thm 27 is evaluated exactly up to 256, as in
#: dp-accounting; fewer orders can only raise ε).
WOR_MAX_ORDER = rdp_without_replacement.MAX_ORDER
WOR_ORDERS: tuple[float, ...] = rdp_without_replacement.ORDERS
TIGHT_DIGITS = 6
SAMPLINGS = ("paper", "per_worker")
#: Largest K and n_k: γ = B/(K n₍₁₎) ≥ 10⁻²¹ keeps 5Tγ²/z² (and γ³ at the band's top) far from underflow.
MAX_WORKERS = 10**9
MAX_EXAMPLES_PER_WORKER = 10**12


#: The errata touching Theorem 2's numbers (docs/ERRATA.md).
XU1_NOTE = "XU-1: Theorem 2's sigma is the noise on each worker's averaged gradient; on the sum it is B times larger"
XU2_NOTE = ("XU-2: Theorem 2 certifies only z in [sqrt(1.5), sqrt(1/(e gamma) - 1)) and epsilon above a floor "
            "(Lemma 2's conditions, xu L508)")
XU3_NOTE = ("XU-3: the certificate is not monotone in the noise; the corrected variant is its monotone envelope "
            "min over z' <= z")


def _check_variant(variant: str) -> str:
    return check_choice("variant", variant, VARIANTS)


# --------------------------------------------------------------------------------------------
# The setting
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Setting:
    """K workers with n_k records each (a number, or one per worker), batch B, T iterations, δ (xu L171-175).

    Only the smallest local data set n₍₁₎ enters the privacy analysis (L175). ``worker_steps`` is the most
    updates one worker makes (used by the per-worker accountant); default ⌈T/K⌉, the count of equal-speed
    workers under the global counter of App. A (L309), an assumption the user must make true.
    """

    workers: int
    examples_per_worker: int | tuple[int, ...]
    batch_size: int
    steps: int
    delta: float
    worker_steps: int | None = None

    def __post_init__(self) -> None:
        k = check_int("workers", self.workers, low=1, high=MAX_WORKERS)
        sizes = self.examples_per_worker
        top = MAX_EXAMPLES_PER_WORKER
        if np.ndim(sizes) == 0:
            sizes = (check_int("examples_per_worker", sizes, low=1, high=top),)
        else:
            sizes = tuple(check_int(f"examples_per_worker[{i}]", n, low=1, high=top) for i, n in enumerate(sizes))
            if len(sizes) != k:
                raise ValueError(f"examples_per_worker must be a number or one value per worker ({k}); "
                                 f"got {len(sizes)} values")
        batch = check_int("batch_size", self.batch_size, low=1, high=min(sizes))
        steps = check_int("steps", self.steps, low=1, high=10**12)
        default_worker_steps = -(-steps // k)
        worker_steps = (default_worker_steps if self.worker_steps is None
                        else check_int("worker_steps", self.worker_steps, low=1, high=steps))
        values = {"workers": k, "examples_per_worker": sizes[0] if len(sizes) == 1 else sizes, "batch_size": batch,
                  "steps": steps, "worker_steps": worker_steps,
                  "delta": check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def smallest_dataset(self) -> int:
        """n₍₁₎ = min_k n_k (xu L175)."""
        sizes = self.examples_per_worker
        return sizes if isinstance(sizes, int) else min(sizes)

    @property
    def gamma(self) -> float:
        """γ = B/(K n₍₁₎), the per-iteration sampling rate of one record (xu L520)."""
        return self.batch_size / (self.workers * self.smallest_dataset)

    @property
    def log_inv_delta(self) -> float:
        """Λ = log(1/δ) (natural log, xu L171)."""
        return -math.log(self.delta)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["examples_per_worker"] = (list(self.examples_per_worker) if isinstance(self.examples_per_worker, tuple)
                                       else self.examples_per_worker)
        return data | {"smallest_dataset": self.smallest_dataset, "gamma": self.gamma}


def noise_std(*, noise_to_sensitivity: float, clipping_norm: float, batch_size: int,
              noise_on: str = "mean") -> float:
    """Noise std for z (``noise_to_sensitivity``): 2Gz/B on the mean gradient (xu L518), 2Gz on the sum."""
    z = check_real("noise_to_sensitivity", noise_to_sensitivity, low=0.0, low_open=True)
    g = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    b = check_int("batch_size", batch_size, low=1)
    return 2 * g * z / b if check_choice("noise_on", noise_on, ("mean", "sum")) == "mean" else 2 * g * z


def noise_to_sensitivity_of_std(*, std: float, clipping_norm: float, batch_size: int, noise_on: str = "mean") -> float:
    """Inverse of :func:`noise_std`: z (``noise_to_sensitivity``) = σB/(2G) for noise on the mean, σ/(2G) on the
    sum."""
    sigma = check_real("std", std, low=0.0, low_open=True)
    return sigma / noise_std(noise_to_sensitivity=1.0, clipping_norm=clipping_norm, batch_size=batch_size,
                             noise_on=noise_on)


# --------------------------------------------------------------------------------------------
# Theorem 2 as printed (one μ)
# --------------------------------------------------------------------------------------------

def rdp_order(*, epsilon: float, delta: float, mu: float) -> float:
    """α = log(1/δ)/((1−μ)ε) + 1 (xu L171, L526)."""
    return -math.log(delta) / ((1 - mu) * epsilon) + 1


def unconstrained_mu(*, epsilon: float, delta: float) -> float:
    """μ* = 1 + a − √(a(1+a)), a = log(1/δ)/ε: minimises σ² ∝ α/μ without Lemma 2's conditions (spec §4.3).

    Refuses ε > log(1/δ)·2¹⁰⁰, where 1 − μ* ≈ √a would round to 0 and α = log(1/δ)/((1 − μ)ε) + 1 divide by it.
    """
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    largest = -math.log(delta) * 2.0**100  # a ≥ 2⁻¹⁰⁰: 1 − μ* ≈ √a ≥ 2⁻⁵⁰, far from rounding to 0
    if epsilon > largest:
        raise ValueError(f"epsilon must be at most {largest:.3g} at delta = {delta:g} (above it Theorem 2's "
                         f"mu* = 1 + a - sqrt(a(1 + a)), a = log(1/delta)/epsilon, rounds to 1); got {epsilon!r}")
    a = -math.log(delta) / epsilon
    return 1 + a - math.sqrt(a * (1 + a))


def _noise_condition(z_squared: float, source: str) -> Hypothesis:
    return hypothesis("sigma^2/Delta^2 >= 1.5 (Lemma 2)", z_squared * (1 + RELATIVE_SLACK), ">=", MIN_NOISE_SQUARED,
                      source)


def _order_conditions(alpha: float, gamma: float, z_squared: float, source: str) -> tuple[Hypothesis, ...]:
    """Lemma 2's order condition α ≤ log(1/(γ(1+z²))) (xu L508), i.e. (7) (L173), with γ(1+z²) < 1 first."""
    inside = gamma * (1 + z_squared)
    first = hypothesis("gamma (1 + sigma^2/Delta^2) < 1", inside, "<", 1.0, source)
    if not first.holds:
        return first, Hypothesis("alpha <= log(1/(gamma (1 + sigma^2/Delta^2))) (7)", False,
                                 f"alpha = {alpha:.6g} > log of a number <= 1", source)
    return first, hypothesis("alpha <= log(1/(gamma (1 + sigma^2/Delta^2))) (7)", alpha * (1 - RELATIVE_SLACK), "<=",
                             -math.log(inside), source)


@dataclass(frozen=True)
class Theorem2(TheoremResult):
    """Theorem 2's noise for one (ε, μ) (xu L171-175), on the quantity named by ``noise_added_to``.

    ``noise_std`` is the printed σ (L171). Under ``variant="corrected"`` it is added to each worker's
    averaged minibatch gradient (the proof's sensitivity 2G/B, L518); ``noise_std_sum`` = B·σ is the std
    for noise on the summed gradient. Under ``variant="paper"`` σ is added to the sum as Algorithm 1
    writes it (L109-110), which the proof does not cover: a failing hypothesis says so (erratum XU-1).
    """

    epsilon: float
    delta: float
    mu: float
    alpha: float
    noise_to_sensitivity: float
    noise_std: float
    noise_std_sum: float
    log_condition_rhs: float
    noise_added_to: str
    variant: str
    neighboring_relation: str = NEIGHBORING_RELATION
    sampling: str = PAPER_SAMPLING
    source: str = cite("xu", "Theorem 2 (proof L516-534)", "L171-175")
    notes: tuple[str, ...] = (XU1_NOTE, XU2_NOTE)


def theorem2(*, setting: Setting, epsilon: float, mu: float, clipping_norm: float = 1.0,
             variant: str = "corrected") -> Theorem2:
    """σ² = 20G²Tα/(K²n₍₁₎²με), α = log(1/δ)/((1−μ)ε)+1 and its conditions (xu L171-173).

    Conditions: ε ≤ 10B²Tα/(3K²n₍₁₎²μ) (L171; ⇔ σ²/Δ² ≥ 1.5, L528-530) and (7) (L173;
    ⇔ α ≤ log(1/(γ(1+z²))), spec §3.6). ``log_condition_rhs`` is the log on the right of (7) as printed.
    """
    variant = _check_variant(variant)
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    mu = check_real("mu", mu, low=0.0, high=1.0, low_open=True, high_open=True)
    g = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    k, n, b, t = setting.workers, setting.smallest_dataset, setting.batch_size, setting.steps
    alpha = rdp_order(epsilon=epsilon, delta=setting.delta, mu=mu)
    sigma = math.sqrt(20 * g**2 * t * alpha / (k**2 * n**2 * mu * epsilon))
    z = sigma * b / (2 * g)
    rhs = math.log(k**3 * n**3 * mu * epsilon / (k**2 * n**2 * mu * epsilon * b + 5 * t * alpha * b**3))
    hypotheses = [
        hypothesis("epsilon <= 10 B^2 T alpha / (3 K^2 n_(1)^2 mu)", epsilon * (1 - RELATIVE_SLACK), "<=",
                   10 * b**2 * t * alpha / (3 * k**2 * n**2 * mu), "xu L171, L530"),
        _noise_condition(z**2, "xu L508, L528"),
        *_order_conditions(alpha, setting.gamma, z**2, "xu L173, L508, L532"),
    ]
    if variant == "paper":
        hypotheses.append(hypothesis("L2 sensitivity of the noised gradient <= 2G/B", 2 * g, "<=", 2 * g / b,
                                     "xu L109-110 vs L518"))
    return Theorem2(epsilon=epsilon, delta=setting.delta, mu=mu, alpha=alpha, noise_to_sensitivity=z,
                    noise_std=sigma, noise_std_sum=b * sigma, log_condition_rhs=rhs,
                    noise_added_to=NOISE_ON_MEAN if variant == "corrected" else NOISE_ON_SUM, variant=variant,
                    hypotheses=tuple(hypotheses))


# --------------------------------------------------------------------------------------------
# The paper's certificate in z (noise_to_sensitivity, best μ), the band, the floor
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Certificate(TheoremResult):
    """Theorem 2's ε for z (``noise_to_sensitivity``) with the best μ (spec §4.4 A3): α = min(1+√(Λ/ρ), α_max).

    The number is the formula's even where Lemma 2's conditions fail (then ``valid`` is False, ``guarantee`` "no
    guarantee" and the failing hypothesis carries the numbers); where α_max ≤ 1 no order satisfies (7) and α is the
    unconstrained 1+√(Λ/ρ). ``constrained`` says the cap α_max was applied. ``variant`` is that of
    :func:`paper_epsilon_for_noise` (``None`` from :func:`certificate`).
    """

    noise_to_sensitivity: float
    epsilon: float
    alpha: float
    alpha_max: float
    mu: float
    constrained: bool
    variant: str | None = None
    neighboring_relation: str = NEIGHBORING_RELATION
    sampling: str = PAPER_SAMPLING
    source: str = cite("xu", "Theorem 2 with the best mu (proof L524-532)", "L171-173")
    notes: tuple[str, ...] = (XU2_NOTE, XU3_NOTE)

    @property
    def feasible(self) -> bool:
        """Theorem 2 certifies this noise (every hypothesis holds)."""
        return self.valid

    def to_dict(self) -> dict:
        return super().to_dict() | {"feasible": self.feasible}


def _total_rdp_slope(setting: Setting, z: float) -> float:
    """ρ with total RDP ρ·α after T iterations: 5Tγ²/z² (xu L520-522)."""
    return 5 * setting.steps * setting.gamma**2 / z**2


def certificate(*, setting: Setting, noise_to_sensitivity: float) -> Certificate:
    """ε = ρα + Λ/(α−1) (Theorem 2 with Lemma 4, xu L171-173, L512, L522) at z = σ/Δ₂, minimised over μ
    (⇔ over α within Lemma 2's range, spec §4.4): ρ = 5Tγ²/z², α = min(1+√(Λ/ρ), α_max), α_max = log(1/(γ(1+z²))).

    Hypotheses: z² ≥ 1.5 (L508, L528) and γ(1+z²) < 1/e, i.e. α_max > 1 (some order satisfies (7), L173, L508).
    Where α_max ≤ 1 the value is the unconstrained optimum ρ + 2√(ρΛ) (the printed σ formula of L171 at the
    μ minimising it, (7) ignored) and the second hypothesis fails: what reading Theorem 2 without (7) would claim,
    which can fall far below the floor. CIFAR-10 set-up (spec TV-P2): z = 2 gives 11.32318025 (certified); z = 1
    gives 26.4864 (z² ≥ 1.5 fails), z = 9 gives 2.1844 (α_max = 0.868 ≤ 1: no guarantee, the floor is 8.3437).
    """
    z = check_real("noise_to_sensitivity", noise_to_sensitivity, low=rdp.MIN_NOISE_MULTIPLIER,
                   high=rdp.MAX_NOISE_MULTIPLIER)
    hypotheses = (_noise_condition(z**2, "xu L508, L528"),
                  hypothesis("gamma (1 + z^2) < 1/e (so alpha_max > 1)", setting.gamma * (1 + z**2), "<",
                             math.exp(-1), "xu L173, L508"))
    lam, rho = setting.log_inv_delta, _total_rdp_slope(setting, z)
    alpha_max = -math.log(setting.gamma * (1 + z**2))
    best = math.sqrt(lam / rho)  # α − 1 at the unconstrained optimum (kept apart from 1: it can be below 1e-16)
    excess = min(best, alpha_max - 1) if hypotheses[1].holds else best
    epsilon = rho * (1 + excess) + lam / excess
    return Certificate(z, epsilon, 1 + excess, alpha_max, rho * (1 + excess) / epsilon, excess < best,
                       hypotheses=hypotheses)


def noise_band(*, setting: Setting) -> tuple[float, float]:
    """The z interval [√1.5, z_max) where Theorem 2 can certify anything; z_max = √(1/(eγ) − 1) (spec §4.1).

    Raises ``ValueError`` when the interval is empty (γ(1 + 1.5) ≥ 1/e).
    """
    top_squared = 1 / (math.e * setting.gamma) - 1
    if top_squared <= MIN_NOISE_SQUARED:
        raise ValueError(f"Theorem 2 certifies no noise level: gamma = B/(K n_(1)) = {setting.gamma:.6g} must be "
                         f"< 1/(2.5 e) = {1 / (2.5 * math.e):.6g} (xu L173, L508)")
    return math.sqrt(MIN_NOISE_SQUARED), math.sqrt(top_squared)


def _band_inside(setting: Setting) -> tuple[float, float]:
    """The band's ends moved inside by the relative slack (the top end is open)."""
    low, high = noise_band(setting=setting)
    return low, high * (1 - 1e-12)


@dataclass(frozen=True)
class Floor:
    """The smallest ε Theorem 2 can certify (spec §4.4): min over z of the certificate, and where it is."""

    epsilon: float
    noise_to_sensitivity: float
    band: tuple[float, float]
    analytic_lower_bound: float
    neighboring_relation: str = NEIGHBORING_RELATION
    sampling: str = PAPER_SAMPLING
    source: str = cite("xu", "Theorem 2 minimised over mu and sigma (spec §4.4)", "L171-173")

    def to_dict(self) -> dict:
        return asdict(self)


def epsilon_floor(*, setting: Setting) -> Floor:
    """min_z ε_paper(z) over the band, by bounded Brent on the (unimodal) certificate, and the analytic lower
    bound log(1/δ)/(log(1/(2.5γ)) − 1) (spec §4.4). CIFAR-10 set-up of the paper: 8.3436582 at z = 3.1471447.
    """
    low, high = _band_inside(setting)
    lower_bound = setting.log_inv_delta / (math.log(1 / (2.5 * setting.gamma)) - 1)

    def value(z: float) -> float:
        return certificate(setting=setting, noise_to_sensitivity=z).epsilon

    found = optimize.minimize_scalar(value, bounds=(low, high), method="bounded",
                                     options={"xatol": 1e-10 * high, "maxiter": 500})
    z, eps = (low, value(low)) if value(low) <= found.fun else (float(found.x), float(found.fun))
    return Floor(epsilon=eps, noise_to_sensitivity=z, band=(low, math.sqrt(1 / (math.e * setting.gamma) - 1)),
                 analytic_lower_bound=lower_bound)


def paper_epsilon_for_noise(*, setting: Setting, noise_to_sensitivity: float,
                            variant: str = "corrected") -> Certificate:
    """ε Theorem 2 certifies for z (``noise_to_sensitivity``) (spec A3).

    ``variant="paper"``: the certificate at z itself (more noise can make it worse, spec §0 #3).
    ``"corrected"``: the monotone envelope min_{z' ≤ z} ε_paper(z') over the z' Theorem 2 certifies (adding
    noise is post-processing, erratum XU-3); its ``noise_to_sensitivity`` is the z' the certificate is computed at,
    never above the given z. Where no z' ≤ z is certified (z² < 1.5, or an empty band) it is :func:`certificate`
    at z: the formula's number, ``valid`` False.
    """
    variant = _check_variant(variant)
    at_z = replace(certificate(setting=setting, noise_to_sensitivity=noise_to_sensitivity), variant=variant)
    if variant == "paper" or at_z.noise_to_sensitivity**2 * (1 + RELATIVE_SLACK) < MIN_NOISE_SQUARED:
        return at_z
    try:
        floor = epsilon_floor(setting=setting)
    except ValueError:  # the band is empty: nothing to improve on
        return at_z
    if noise_to_sensitivity <= floor.noise_to_sensitivity:
        return at_z
    best = replace(certificate(setting=setting, noise_to_sensitivity=floor.noise_to_sensitivity), variant=variant)
    return best if not at_z.valid or best.epsilon < at_z.epsilon else at_z


@dataclass(frozen=True)
class PaperNoise(TheoremResult):
    """The least noise Theorem 2 certifies for a target ε (best μ; spec §4.3 A2), or, where no noise is certified,
    Theorem 2's formula at the unconstrained best μ* with ``valid`` False (``feasible`` is ``valid``).

    ``theorem`` is :func:`theorem2` at the chosen μ; ``hypotheses`` are the band's ("some noise level is
    certified"), the floor's (target ≥ :func:`epsilon_floor`, when the band is not empty) and the theorem's.
    ``floor`` is ``None`` only when the band is empty (then no ε is certified at all). ``certified_epsilon`` is
    :func:`paper_epsilon_for_noise` (corrected) at the delivered noise, or None where that noise is below the
    accountants' smallest, 1e-3 (Theorem 2's formula at a target below the floor: a setting with a tiny γ).
    """

    target_epsilon: float
    theorem: Theorem2
    certified_epsilon: float | None
    floor: Floor | None
    variant: str
    neighboring_relation: str = NEIGHBORING_RELATION
    sampling: str = PAPER_SAMPLING
    source: str = cite("xu", "Theorem 2, least sigma over mu (spec §4.3)", "L171-173")
    notes: tuple[str, ...] = (XU1_NOTE, XU2_NOTE)

    @property
    def feasible(self) -> bool:
        """Theorem 2 certifies the target at this noise (every hypothesis holds)."""
        return self.valid

    @property
    def noise_to_sensitivity(self) -> float:
        return self.theorem.noise_to_sensitivity

    @property
    def mu(self) -> float:
        return self.theorem.mu

    @property
    def reason(self) -> str:
        """The failing hypotheses with their numbers ("" when Theorem 2 certifies the target)."""
        return "; ".join(f"{item.name}: {item.detail}" for item in self.hypotheses if not item.holds)

    def to_dict(self) -> dict:
        return super().to_dict() | {"feasible": self.feasible,
                                    "noise_to_sensitivity": self.noise_to_sensitivity, "mu": self.mu,
                                    "reason": self.reason}


def _mu_at_noise_floor(setting: Setting, epsilon: float) -> float:
    """The smaller root μ ∈ (0, μ*] of z²(μ) = 5Tγ²α(μ)/(με) = 1.5 (z² decreases on (0, μ*), spec §4.3)."""
    top = unconstrained_mu(epsilon=epsilon, delta=setting.delta)

    def excess(mu: float) -> float:
        alpha = rdp_order(epsilon=epsilon, delta=setting.delta, mu=mu)
        return math.log(5 * setting.steps * setting.gamma**2 * alpha / (mu * epsilon)) - math.log(MIN_NOISE_SQUARED)

    if excess(top) > 0:
        return top
    # excess grows like log(1/μ) near 0, where Brent's steps fall back to bisection: reaching a root r from
    # [1e-300, μ*] to 4·eps·r takes up to log2(1/(4 eps r)) ≈ 1 047 halvings (scipy stops at 100 by default;
    # a target ε = 1e29 at δ = 0.9 put the root near 1e-30).
    return optimize.brentq(excess, 1e-300, top, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=1100)


def paper_noise_for_epsilon(*, setting: Setting, target_epsilon: float, clipping_norm: float = 1.0,
                            variant: str = "corrected") -> PaperNoise:
    """Least z with Theorem 2 certifying ``target_epsilon`` at some μ (spec A2, z-domain form).

    z_min = √1.5 if the certificate there is ≤ target (Lemma 2's noise condition binds; the delivered noise
    then certifies less than the target), else the first crossing of the certificate below the floor's z.
    μ is then the one Theorem 2 needs at (ε, z_min), and :func:`theorem2` re-checks every condition; ε is the
    target, or at a crossing the certificate there (a fraction 1e-10 inside the target, against rounding).
    Below the floor (:func:`epsilon_floor`) or with an empty band no σ works: the result is :func:`theorem2` at
    the target and the unconstrained best μ* (:func:`unconstrained_mu`), and the hypothesis "target epsilon >=
    floor" or "some noise level is certified" fails with its numbers (CIFAR-10 set-up: 8.3436 >= 8.34366).
    A target so small that this z (``noise_to_sensitivity``) exceeds the accountants' 1e8 (CIFAR-10 set-up:
    ε ≤ 1e-7) raises ``ValueError`` naming ``target_epsilon``.
    """
    target = check_real("target_epsilon", target_epsilon, low=0.0, low_open=True)
    variant = _check_variant(variant)
    gate = [hypothesis("some noise level is certified: gamma (1 + 1.5) < 1/e", setting.gamma * (1 + MIN_NOISE_SQUARED),
                       "<", math.exp(-1), "xu L173, L508; spec §4.1")]
    floor = epsilon_floor(setting=setting) if gate[0].holds else None
    if floor is not None:
        gate.append(hypothesis("target epsilon >= the smallest epsilon Theorem 2 certifies (floor)", target, ">=",
                               floor.epsilon, "xu L171-173; spec §4.4"))
    if not all_hold(gate):
        mu = unconstrained_mu(epsilon=target, delta=setting.delta)
    elif certificate(setting=setting, noise_to_sensitivity=floor.band[0]).epsilon <= target:
        mu = _mu_at_noise_floor(setting, target)
    else:
        aim = target * (1 - CALIBRATION_MARGIN)
        z = optimize.brentq(lambda x: certificate(setting=setting, noise_to_sensitivity=x).epsilon - aim,
                            floor.band[0], floor.noise_to_sensitivity, xtol=1e-14, rtol=1e-13)
        crossing = certificate(setting=setting, noise_to_sensitivity=z)
        mu, target = crossing.mu, min(target, crossing.epsilon)
    theorem = theorem2(setting=setting, epsilon=target, mu=mu, clipping_norm=clipping_norm, variant=variant)
    if theorem.noise_to_sensitivity > rdp.MAX_NOISE_MULTIPLIER:
        raise ValueError(f"target_epsilon={target:g} is too small: Theorem 2's formula needs noise_to_sensitivity "
                         f"{theorem.noise_to_sensitivity:.3g} for it, above the largest the accountants take "
                         f"({rdp.MAX_NOISE_MULTIPLIER:g}); " + "; ".join(f"{item.name}: {item.detail}"
                                                                       for item in gate if not item.holds))
    certified = None
    if theorem.noise_to_sensitivity >= rdp.MIN_NOISE_MULTIPLIER:
        certified = paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=theorem.noise_to_sensitivity,
                                            variant="corrected").epsilon
    return PaperNoise(target, theorem, certified, floor, variant, hypotheses=(*gate, *theorem.hypotheses))


# --------------------------------------------------------------------------------------------
# Tight accounting of the same schedule
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TightEpsilon:
    """ε of a schedule by an accountant, with its sampling and neighbouring relation spelled out."""

    epsilon: float
    delta: float
    noise_to_sensitivity: float
    sample_rate: float
    steps: int
    order: float
    sampling: str
    neighboring_relation: str
    accountant: str
    capped: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _schedule(setting: Setting, sampling: str) -> tuple[float, int, str]:
    if check_choice("sampling", sampling, SAMPLINGS) == "paper":
        return setting.gamma, setting.steps, PAPER_SAMPLING
    return setting.batch_size / setting.smallest_dataset, setting.worker_steps, PER_WORKER_SAMPLING


def tight_epsilon(*, setting: Setting, noise_to_sensitivity: float, sampling: str = "paper",
                  conversion: str = "improved") -> TightEpsilon:
    """ε of T without-replacement Gaussian steps (WBK'19 Thm 27, replace-one), minimised over orders 2…256.

    ``sampling="paper"``: q = γ over T iterations (the paper's model, for a like-for-like comparison);
    ``"per_worker"``: q = B/n₍₁₎ over ``setting.worker_steps`` updates. ``conversion``: ``"improved"``
    (Canonne-Kamath-Steinke 2020) or ``"classic"`` (the paper's Lemma 4, L512). ``capped`` flags an
    optimum at order 256 (then only an upper bound of what more orders would give).
    """
    q, steps, label = _schedule(setting, sampling)
    per_step = rdp_without_replacement_gaussian(sample_rate=q, noise_multiplier=noise_to_sensitivity)
    eps, order = rdp.epsilon_from_rdp(rdp=steps * per_step, orders=WOR_ORDERS, delta=setting.delta,
                                      conversion=conversion)
    return TightEpsilon(epsilon=eps, delta=setting.delta, noise_to_sensitivity=float(noise_to_sensitivity),
                        sample_rate=q, steps=steps, order=order, sampling=label,
                        neighboring_relation=NEIGHBORING_RELATION,
                        accountant=f"RDP, Wang-Balle-Kasiviswanathan 2019 Thm 27, {conversion} "
                                   "conversion", capped=order == WOR_MAX_ORDER)


#: Orders of the per-step curve (a subset of :data:`WOR_ORDERS`: fewer orders can only raise ε).
CURVE_ORDERS: tuple[float, ...] = tuple(float(order) for order in [*range(2, 65), 96, 128, 192, 256])


def tight_epsilon_after_each_step(*, setting: Setting, noise_to_sensitivity: float) -> np.ndarray:
    """Tight ε (same model as :func:`tight_epsilon` with ``sampling="paper"``, improved conversion) after each of
    the T iterations, on :data:`CURVE_ORDERS`: an upper bound of the full-grid value at every step."""
    per_step = rdp_without_replacement_gaussian(sample_rate=setting.gamma, noise_multiplier=noise_to_sensitivity,
                                                orders=CURVE_ORDERS)
    cumulative = np.arange(1, setting.steps + 1, dtype=float)[:, None] * per_step[None, :]
    per_order = rdp._epsilon_per_order(cumulative, np.asarray(CURVE_ORDERS), setting.delta, "improved")
    return np.maximum(per_order.min(axis=1), 0.0)


def tight_noise_to_sensitivity(*, setting: Setting, target_epsilon: float, sampling: str = "paper") -> TightEpsilon:
    """Least z (``noise_to_sensitivity``; 6 significant digits, rounded up) whose tight ε (:func:`tight_epsilon`)
    is ≤ the target.

    The returned ε was computed at the returned z. Raises ``ValueError`` if even z = 10⁴ does not reach it.
    """
    target = check_real("target_epsilon", target_epsilon, low=0.0, low_open=True)

    def excess(log_z: float) -> float:
        return (tight_epsilon(setting=setting, noise_to_sensitivity=math.exp(log_z), sampling=sampling).epsilon
                - target)

    low, high = math.log(0.05), math.log(1e4)
    if excess(high) > 0:
        raise ValueError(f"target_epsilon={target:g} cannot be met by the tight accountant with "
                         "noise_to_sensitivity up to 1e4")
    if excess(low) <= 0:
        return tight_epsilon(setting=setting, noise_to_sensitivity=math.exp(low), sampling=sampling)
    root = optimize.brentq(excess, low, high, xtol=1e-9)
    z = float(f"{math.exp(root):.{TIGHT_DIGITS}g}")
    while True:
        result = tight_epsilon(setting=setting, noise_to_sensitivity=z, sampling=sampling)
        if result.epsilon <= target:
            return result
        z = float(f"{z * (1 + 10.0 ** (1 - TIGHT_DIGITS)):.{TIGHT_DIGITS}g}")


def poisson_reference(*, setting: Setting, noise_to_sensitivity: float, accountant: str = "rdp"):
    """Reference ε (:mod:`bounds.accounting`): Poisson sampling at rate γ, add/remove-one neighbours, T steps,
    noise multiplier 2z (the add/remove sensitivity of the mean gradient is G/B, half the replace-one 2G/B).

    Not comparable with the replace-one numbers of this module; shown because DP-SGD libraries report it.
    """
    from fedplan.bounds import accounting

    z = check_real("noise_to_sensitivity", noise_to_sensitivity, low=0.0, low_open=True)
    return accounting.get_epsilon(delta=setting.delta, sample_rate=setting.gamma, noise_multiplier=2 * z,
                                  steps=setting.steps, accountant=accountant)


# --------------------------------------------------------------------------------------------
# Utility: Theorem 1, Propositions 1 and 2
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Topology:
    """Spectral gap ρ of E[A_tᵀA_t] (Assumption 2.1, xu L135) and K ≥ 2 workers."""

    workers: int
    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "workers", check_int("workers", self.workers, low=2))
        object.__setattr__(self, "rho", check_real("rho", self.rho, low=0.0, high=1.0, high_open=True))

    @property
    def rho_bar(self) -> float:
        """ρ̄ = (K−1)/K (1/(1−ρ) + 2√ρ/(1−√ρ)²) (xu L155)."""
        k, rho = self.workers, self.rho
        return (k - 1) / k * (1 / (1 - rho) + 2 * math.sqrt(rho) / (1 - math.sqrt(rho)) ** 2)


def rho_bar(*, rho: float, workers: int) -> float:
    """ρ̄ of xu L155 (ρ ∈ [0, 1), K ≥ 2)."""
    return Topology(workers=workers, rho=rho).rho_bar


@dataclass(frozen=True)
class Theorem1Constants(TheoremResult):
    """C₁, C₂, C₃ of Theorem 1 (xu L151-153) and the conditions C₁ > 0, C₂ ≥ 0, C₃ ≤ 1 (L145)."""

    C1: float
    C2: float
    C3: float
    rho_bar: float
    source: str = cite("xu", "Theorem 1", "L145-155")


def theorem1_constants(*, learning_rate: float, batch_size: int, smoothness: float, topology: Topology,
                       staleness: int) -> Theorem1Constants:
    """C₁ = 1 − 24η²B²L²(τ(K−1)/K + ρ̄) (L151), C₃ (L151), C₂ (L153); they depend on η and B only via ηB.

    C₁ ≤ 0 voids the other two (they divide by C₁), so C₁ > 0 is checked first and reported as failing.
    """
    eta = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    b = check_int("batch_size", batch_size, low=1)
    return _constants(eta * b, check_real("smoothness", smoothness, low=0.0, low_open=True), topology,
                      check_int("staleness", staleness, low=0))


def _constants(x: float, lip: float, topology: Topology, tau: int) -> Theorem1Constants:
    """The constants at x = ηB."""
    k, rb = topology.workers, topology.rho_bar
    spread = tau * (k - 1) / k + rb
    c1 = 1 - 24 * x**2 * lip**2 * spread
    c3 = 0.5 + x * lip * tau**2 / k + (6 * x**2 * lip**2 + x * k * lip + 12 * x**3 * lip**3 * tau**2 / k) * 2 * rb / c1
    c2 = (-(x * lip**2 / k + 6 * x**2 * lip**3 / k**2 + 12 * x**3 * lip**4 * tau**2 / k**3) * 4 * x**2 * spread / c1
          + x / (2 * k) - x**2 * lip / k**2 - 2 * x**3 * lip**2 * tau**2 / k**3)
    first = hypothesis("C1 > 0", c1, ">", 0.0, "xu L145, L151")
    if not first.holds:
        rest = (Hypothesis("C2 >= 0", False, "undefined: C1 <= 0", "xu L145, L153"),
                Hypothesis("C3 <= 1", False, "undefined: C1 <= 0", "xu L145, L151"))
    else:
        rest = (hypothesis("C2 >= 0", c2, ">=", 0.0, "xu L145, L153"), hypothesis("C3 <= 1", c3, "<=", 1.0,
                                                                                  "xu L145, L151"))
    return Theorem1Constants(C1=c1, C2=c2, C3=c3, rho_bar=rb, hypotheses=(first, *rest))


@dataclass(frozen=True, kw_only=True)
class Problem:
    """Constants of the utility analysis: L (smoothness, L145), F(w⁰)−F* (``initial_gap``), ς² and v²
    (Assumption 1, L129), model dimension d (L110)."""

    smoothness: float
    initial_gap: float
    variance: float
    dissimilarity: float
    dimension: int

    def __post_init__(self) -> None:
        for name in ("smoothness",):
            object.__setattr__(self, name, check_real(name, getattr(self, name), low=0.0, low_open=True))
        for name in ("initial_gap", "variance", "dissimilarity"):
            object.__setattr__(self, name, check_real(name, getattr(self, name), low=0.0))
        object.__setattr__(self, "dimension", check_int("dimension", self.dimension, low=1))


@dataclass(frozen=True)
class UtilityBound(TheoremResult):
    """A utility bound's value (average E‖∇F(θ^t)‖² over the run), its terms and its checked hypotheses."""

    value: float
    terms: dict
    variant: str
    source: str
    details: dict = field(default_factory=dict)


def theorem1_bound(*, problem: Problem, topology: Topology, learning_rate: float, batch_size: int, steps: int,
                   staleness: int, noise_std_sum: float) -> UtilityBound:
    """2(F(w⁰)−F*)K/(ηTB) + 2ηL(ς²B + 6v²B² + dσ²)/(BK) (xu L147), σ the std of noise on the *sum* gradient
    (the proof's E‖n‖² = dσ² next to Bς², L367, L423): use ``Theorem2.noise_std_sum``."""
    eta = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    b, t = check_int("batch_size", batch_size, low=1), check_int("steps", steps, low=1)
    sigma = check_real("noise_std_sum", noise_std_sum, low=0.0)
    k, lip = topology.workers, problem.smoothness
    constants = theorem1_constants(learning_rate=eta, batch_size=b, smoothness=lip, topology=topology,
                                   staleness=staleness)
    terms = {"optimisation": 2 * problem.initial_gap * k / (eta * t * b),
             "variance": 2 * eta * lip * problem.variance / k,
             "heterogeneity": 12 * eta * lip * problem.dissimilarity * b / k,
             "dp_noise": 2 * eta * lip * problem.dimension * sigma**2 / (b * k)}
    return UtilityBound(value=sum(terms.values()), terms=terms, hypotheses=constants.hypotheses, variant="corrected",
                        source=cite("xu", "Theorem 1", "L147"),
                        details={"C1": constants.C1, "C2": constants.C2, "C3": constants.C3,
                                 "rho_bar": constants.rho_bar})


@dataclass(frozen=True)
class MinSteps(TheoremResult):
    """Proposition 1's smallest T (xu L161), the term attaining it and the re-check of C₁-C₃ at η = K/(B√T)
    (its ``hypotheses``: Theorem 1's C₁ > 0, C₂ ≥ 0, C₃ ≤ 1, L145, which Proposition 1 claims T_min ensures)."""

    steps: float
    terms: dict
    largest: str
    constants: Theorem1Constants
    variant: str
    source: str = cite("xu", "Proposition 1", "L159-165")
    notes: tuple[str, ...] = ("XU-5: the printed staleness term 64 tau^2/K^2 does not ensure C3 <= 1; corrected: "
                              "64 tau^4/K^2",)


def proposition1_min_steps(*, smoothness: float, topology: Topology, staleness: int,
                           variant: str = "corrected") -> MinSteps:
    """T ≥ L²K² max{192(τ(K−1)/K + ρ̄), 1024K²ρ̄², 64τ^p/K², (K−1)^½/K^⅙ (8√6 τ^⅔ + 8)²(τ + ρ̄K/(K−1))^⅔} (L161).

    ``variant="paper"``: p = 2 as printed; ``"corrected"``: p = 4 (so that ηBLτ²/K = Lτ²/√T ≤ 1/8; with the
    printed term C₃ ≤ 1 fails for large τ, erratum XU-5). The constants are re-checked at η = K/(B√T_min).
    """
    variant = _check_variant(variant)
    lip = check_real("smoothness", smoothness, low=0.0, low_open=True)
    tau = check_int("staleness", staleness, low=0)
    k, rb = topology.workers, topology.rho_bar
    power = 2 if variant == "paper" else 4
    terms = {"consensus": 192 * (tau * (k - 1) / k + rb), "spectral": 1024 * k**2 * rb**2,
             "staleness": 64 * tau**power / k**2,
             "mixed": (k - 1) ** 0.5 / k ** (1 / 6) * (8 * math.sqrt(6) * tau ** (2 / 3) + 8) ** 2
             * (tau + rb * k / (k - 1)) ** (2 / 3)}
    largest = max(terms, key=terms.get)
    steps = lip**2 * k**2 * terms[largest]
    constants = _constants(k / math.sqrt(steps), lip, topology, tau)
    return MinSteps(steps=steps, terms={name: lip**2 * k**2 * value for name, value in terms.items()},
                    largest=largest, constants=constants, variant=variant, hypotheses=constants.hypotheses)


def proposition1_rate(*, problem: Problem, topology: Topology, batch_size: int, steps: int, staleness: int,
                      noise_std_sum: float) -> UtilityBound:
    """(2(F(w⁰)−F*) + 2L(ς²/B + 6v² + dσ²/B²))/√T with η = K/(B√T) (xu L163-165), σ on the sum gradient.

    Hypotheses: T ≥ Proposition 1's T_min (corrected τ⁴ term) and C₁-C₃ at η = K/(B√T).
    """
    b, t = check_int("batch_size", batch_size, low=1), check_int("steps", steps, low=1)
    sigma = check_real("noise_std_sum", noise_std_sum, low=0.0)
    lip = problem.smoothness
    minimum = proposition1_min_steps(smoothness=lip, topology=topology, staleness=staleness)
    constants = _constants(topology.workers / math.sqrt(t), lip, topology, check_int("staleness", staleness, low=0))
    root = math.sqrt(t)
    terms = {"optimisation": 2 * problem.initial_gap / root, "variance": 2 * lip * problem.variance / b / root,
             "heterogeneity": 12 * lip * problem.dissimilarity / root,
             "dp_noise": 2 * lip * problem.dimension * sigma**2 / b**2 / root}
    hypotheses = (hypothesis("T >= T_min (Proposition 1, tau^4 term)", t, ">=", minimum.steps, "xu L161"),
                  *constants.hypotheses)
    return UtilityBound(value=sum(terms.values()), terms=terms, hypotheses=hypotheses, variant="corrected",
                        source=cite("xu", "Proposition 1", "L163-165"),
                        details={"learning_rate": topology.workers / (b * root), "min_steps": minimum.steps})


def proposition2_c4(*, batch_size: int, mu: float, epsilon: float, delta: float, variant: str = "corrected") -> float:
    """C₄ of Proposition 2 (xu L187).

    ``"paper"``: 4√5(1 + 1/(B²μ(1−μ))) as printed. ``"corrected"``: the exact constant when the noise that
    Theorem 2 certifies is placed consistently (std B·σ on the sum gradient of L165),
    4√5(1 + 1/(μ(1−μ)) + ε/(μ log(1/δ))) (spec §3.8, sympy-checked; erratum XU-6).
    """
    variant = _check_variant(variant)
    b = check_int("batch_size", batch_size, low=1)
    mu = check_real("mu", mu, low=0.0, high=1.0, low_open=True, high_open=True)
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    if variant == "paper":
        return 4 * math.sqrt(5) * (1 + 1 / (b**2 * mu * (1 - mu)))
    return 4 * math.sqrt(5) * (1 + 1 / (mu * (1 - mu)) + epsilon / (mu * -math.log(delta)))


def proposition2(*, problem: Problem, topology: Topology, examples_per_worker, batch_size: int, delta: float,
                 epsilon: float, mu: float, clipping_norm: float, staleness: int,
                 variant: str = "corrected") -> UtilityBound:
    """Proposition 2 (xu L183-189): T from (8) and E‖∇F(θ̃)‖² ≤ C₄ G√(dL·D·log(1/δ))/(K n₍₁₎ ε),
    D = F(w⁰)−F* + L(ς²/B + 6v²).

    K is the topology's. Hypotheses: Theorem 2's conditions at T = ⌈T(8)⌉ and this μ, and T(8) ≥ Proposition 1's T_min.
    """
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    g = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    k, lip = topology.workers, problem.smoothness
    data = {"examples_per_worker": examples_per_worker, "batch_size": batch_size, "delta": delta}
    probe = Setting(workers=k, steps=1, **data)
    b, n, lam = probe.batch_size, probe.smallest_dataset, probe.log_inv_delta
    gap = problem.initial_gap + lip * (problem.variance / b + 6 * problem.dissimilarity)
    steps = 2 * gap * k**2 * n**2 * epsilon**2 / (40 * problem.dimension * lip * g**2 * lam)
    c4 = proposition2_c4(batch_size=b, mu=mu, epsilon=epsilon, delta=probe.delta, variant=variant)
    value = c4 * g * math.sqrt(problem.dimension * lip * gap * lam) / (k * n * epsilon)
    whole_steps = max(1, math.ceil(steps))
    theorem = theorem2(setting=Setting(workers=k, steps=whole_steps, **data), epsilon=epsilon,
                       mu=mu, clipping_norm=g)
    minimum = proposition1_min_steps(smoothness=lip, topology=topology, staleness=staleness)
    hypotheses = (*theorem.hypotheses,
                  hypothesis("T of (8) >= T_min (Proposition 1, tau^4 term)", steps, ">=", minimum.steps, "xu L161"))
    return UtilityBound(value=value, terms={"C4": c4}, hypotheses=hypotheses, variant=variant,
                        source=cite("xu", "Proposition 2", "L183-189"), details={"steps": steps, "D": gap,
                                                                      "min_steps": minimum.steps})


# --------------------------------------------------------------------------------------------
# Remark 1: the intermediate iterate (erratum XU-8)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Remark1(TheoremResult):
    """Remark 1's ε for the iterate after t of the T iterations, next to the ε fedplan certifies for it.

    Remark 1 (xu L179, no proof) says w_k^t is (√(t/T)·ε, δ)-DP when σ is Theorem 2's for (ε, δ). After t
    iterations the iterate has seen t noisy gradients, so the paper's own certificate for it is Theorem 2 over
    those t iterations at the same noise (``certified_epsilon``, ``certificate``). Lemma 2's order cap
    α ≤ log(1/(γ(1+z²))) (L508) does not depend on t, so the certificate stays above log(1/δ)/(α_max − 1) as
    t → 0 while the claim goes to 0: the hypothesis "claimed eps_t >= certified eps_t" fails for small t
    (spec §3.7, erratum XU-8). ``tight_epsilon`` is :func:`tight_epsilon` over the same t iterations (the
    paper's sampling model): what the mechanism itself spends, which Theorem 2 cannot show.
    """

    step: int
    steps: int
    noise_to_sensitivity: float
    epsilon: float
    claimed_epsilon: float
    certified_epsilon: float
    certificate: Certificate
    tight_epsilon: float
    delta: float
    variant: str
    notes: tuple[str, ...] = ("XU-8: Remark 1's sqrt(t/T) epsilon is not what Theorem 2 certifies for the first t "
                              "iterations (Lemma 2's order cap does not depend on t)",)
    neighboring_relation: str = NEIGHBORING_RELATION
    sampling: str = PAPER_SAMPLING
    source: str = cite("xu", "Remark 1 against Theorem 2 and Lemma 2 over the first t iterations",
                       "L179, L171-173, L508")


def remark1(*, setting: Setting, step: int, noise_to_sensitivity: float | None = None,
            epsilon: float | None = None, variant: str = "corrected") -> Remark1:
    """Remark 1 (xu L179) at iteration t = ``step`` of T = ``setting.steps``: the claimed √(t/T)·ε against the
    ε that Theorem 2 (L171-173, Lemma 2 L508) certifies for the first t iterations at the same noise.

    Give z (``noise_to_sensitivity``; ε is then Theorem 2's certificate for all T iterations) or the budget ε
    (z is then the least noise Theorem 2 needs for it, :func:`paper_noise_for_epsilon`), not both.
    ``variant`` is :func:`paper_epsilon_for_noise`'s, for T and for t alike: ``"paper"`` the certificate at
    z, ``"corrected"`` its monotone envelope (erratum XU-3). CIFAR-10 set-up, z = 2, t = 586 ≈ T/100
    (spec §3.7): claimed 1.1324, certified 4.3902 (paper) and 3.6514 (corrected), erratum XU-8.
    """
    variant = _check_variant(variant)
    t = check_int("step", step, low=1, high=setting.steps)
    if (noise_to_sensitivity is None) == (epsilon is None):
        raise ValueError("give exactly one of noise_to_sensitivity and epsilon; got "
                         f"noise_to_sensitivity={noise_to_sensitivity!r}, epsilon={epsilon!r}")
    if epsilon is None:
        whole = paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=noise_to_sensitivity,
                                        variant=variant)
        if not whole.valid:
            failing = "; ".join(f"{item.name}: {item.detail}" for item in whole.hypotheses if not item.holds)
            raise ValueError(f"noise_to_sensitivity={noise_to_sensitivity!r} is outside the noise Theorem 2 "
                             f"certifies (xu L173, L508): {failing}")
        z, budget = float(noise_to_sensitivity), whole.epsilon
    else:
        budget = check_real("epsilon", epsilon, low=0.0, low_open=True)
        noise = paper_noise_for_epsilon(setting=setting, target_epsilon=budget)
        if not noise.feasible:
            raise ValueError(f"epsilon={epsilon!r} is not certified by Theorem 2 at any noise: {noise.reason}")
        z = noise.noise_to_sensitivity
    first = Setting(workers=setting.workers, examples_per_worker=setting.examples_per_worker,
                    batch_size=setting.batch_size, steps=t, delta=setting.delta)
    part = paper_epsilon_for_noise(setting=first, noise_to_sensitivity=z, variant=variant)
    claimed = math.sqrt(t / setting.steps) * budget
    claim = hypothesis("claimed eps_t >= certified eps_t (Remark 1)", claimed, ">=", part.epsilon, "xu L179")
    return Remark1(t, setting.steps, z, budget, claimed, part.epsilon, part,
                   tight_epsilon(setting=first, noise_to_sensitivity=z).epsilon, setting.delta, variant,
                   hypotheses=(*part.hypotheses, claim))
