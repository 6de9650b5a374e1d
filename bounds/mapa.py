"""Li et al., asynchronous FL with DP for edge intelligence: AUDP and the multi-stage MAPA schedule.

Paper: ``li_mapa_async_fl_dp.txt``; every docstring cites its lines (``li L279`` = line 279).
Spec with errata: ``specs/li_mapa.md`` (its items ``T-n``, ``I-n``, ``R-n``; ours are ``LI-n`` in the errata).

Setting (li L84-95). K edge servers run asynchronous SGD against a Cloud: each edge computes the mean
gradient of a mini-batch of b samples drawn **with replacement** from its own data (L91, L102), adds
noise and uploads it; the Cloud applies the uploads one at a time in FIFO order with staleness
τ(t) ≤ τ_max (Assumption 2, L97-100). The paper plans with τ_max = K (L401).

Privacy model of every number here:

* **Mechanism** (Eq. (6), L166): noise with density ∝ exp(−ε‖η‖/ΔS) on R^N, scale λ = ΔS/ε, added by
  the edge to its mini-batch gradient before upload (local DP against the Cloud and the other edges).
* **Neighbouring relation**: replace-one — two mini-batches that differ in one sample (Def. 2 L145,
  proof of Theorem 1 L191-197). ΔS = 2G/b is the L2 sensitivity of the mean when every per-sample
  gradient has norm ≤ G (Theorem 1) or is clipped to G = bΔS/2 (MAPA, Remark 4 L343; the clipping must
  be per sample, erratum LI-8). No subsampling amplification is claimed.
* **Per iteration**: each upload is pure ε_k-DP. The paper never totals (L387); :func:`composition_totals`
  does: basic (the paper's Σ_t ε_{k(t)}, valid for any upload pattern), per edge (each edge's data only
  enter its own uploads; round-robin upload counts) and advanced composition per edge.
* Theorem 3's "(ε, δ)" is not standard DP: δ is the Chebyshev probability that the *assumed*
  sensitivity fails (I-3). MAPA clips to the assumed sensitivity, so δ only picks ΔS₀ and never enters
  the ledger.

Noise models (erratum LI-1). Every bound uses E‖η‖² = 2λ² (L744, ``noise_model="paper"``). The density
that Theorem 1 proves private has E‖η‖² = N(N+1)λ² on R^N (``noise_model="corrected"``, needs the model
dimension N); 2λ² is only right for N = 1. The noise model changes Δ_b and hence the schedule (P, γ,
T_s), never the per-iteration ε.

Theorem results follow :class:`bounds.theorem.TheoremResult`: a result whose hypotheses fail still carries its
number, with ``valid = False`` and ``guarantee = "no guarantee"`` (the failed hypothesis says why);
out-of-range inputs raise ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from fedplan.bounds import composition
from fedplan.bounds.references import cite
from fedplan.bounds.theorem import Hypothesis, TheoremResult, hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real

PAPER = "Li et al., asynchronous FL with DP for edge intelligence (AUDP/MAPA)"
NOISE_MODELS = ("corrected", "paper")
THEOREM2_VARIANTS = ("corrected", "paper", "paper_log")
UPDATE_RULES = ("theta", "theory")
P_REFERENCES = ("current", "initial")
MECHANISM = ("Laplace-type (L2) mechanism: noise with density proportional to exp(-epsilon ||eta|| / Delta S) on R^N "
             "added by the edge to its mini-batch gradient (li Eq. (6), L166); each upload is pure epsilon_k-DP "
             "(Theorem 1, Remark 4)")
NEIGHBORING_RELATION = ("replace_one between mini-batches (mini-batches differing in one sample, li L145, L191), "
                        "not between data sets: batches are drawn with replacement, so a record drawn j times "
                        "into a batch makes that upload j*epsilon_k-DP, up to b*epsilon_k (group privacy)")
SAMPLING = ("mini-batch of b samples drawn with replacement from the edge's local data (li L91, L102); "
            "no subsampling amplification")
UPLOAD_PATTERN = "round robin: edge k makes floor((T - k)/K) + 1 of the T uploads (cyclic delays, li L401)"


def per_record_upload_epsilon(*, epsilon: float, batch_size: int) -> float:
    """Worst-case ε of one upload per record of the edge's data: b·ε_k (group privacy, erratum LI-16).

    Each upload is ε_k-DP for mini-batches differing in one sample (li L145); drawn with replacement
    (li L91, L102), one record can fill all b slots of a batch, and b slots changed cost at most b·ε_k.
    """
    epsilon = check_real("epsilon", epsilon, low=0.0)
    return check_int("batch_size", batch_size, low=1) * epsilon


#: Stages beyond this many are refused (MAPA with p_reference="initial" settles on a constant stage length).
MAX_STAGES = 100_000
#: A stage sensitivity below this is refused (ΔS⁴ in T_s would underflow; no clip is that small in practice).
SMALLEST_SENSITIVITY = 1e-60


def _as_dict(value):
    if hasattr(value, "__dataclass_fields__"):
        return {item.name: _as_dict(getattr(value, item.name)) for item in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_as_dict(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_dict(item) for key, item in value.items()}
    return value


class _Result:
    """``to_dict()`` for JSON, for the results that are not a theorem's (stages, composition totals)."""

    def to_dict(self) -> dict:
        return _as_dict(self)


def _positive(name: str, value) -> float:
    return check_real(name, value, low=0.0, low_open=True)


#: The largest per-sample gradient std σ accepted: σ² (Δ_b = σ²/b + Δ₀, li L203) and its products stay finite.
MAX_GRADIENT_STD = 1e100


def _gradient_std(sigma) -> float:
    return check_real("sigma", sigma, low=0.0, high=MAX_GRADIENT_STD)


def _finite(name: str, compute, inputs: str) -> float:
    """``compute()`` when it is a finite float, else a ValueError naming the quantity and the inputs behind it."""
    try:
        value = float(compute())
    except (OverflowError, ZeroDivisionError):
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"{name} is not a finite number for {inputs}: the inputs are outside the range these "
                         "formulas can evaluate")
    return value


def _staleness(max_staleness) -> int:
    return check_int("max_staleness", max_staleness, low=0)


# --------------------------------------------------------------------------------------------
# Theorem 1: sensitivity, clipping and the noise (li L185-199, Eq. (6) L166)
# --------------------------------------------------------------------------------------------

def sensitivity_from_gradient_bound(*, gradient_bound: float, batch_size: int) -> float:
    """ΔS = 2G/b for per-sample gradient norms ≤ G (Theorem 1, li L189; replace-one mini-batches)."""
    return 2.0 * _positive("gradient_bound", gradient_bound) / check_int("batch_size", batch_size, low=1)


def clipping_norm_from_sensitivity(*, sensitivity: float, batch_size: int) -> float:
    """Per-sample clip C = bΔS/2 that makes ΔS the sensitivity of the mini-batch mean (Remark 4, li L343)."""
    return _positive("sensitivity", sensitivity) * check_int("batch_size", batch_size, low=1) / 2.0


def noise_second_moment(*, scale: float, noise_model: str = "corrected", model_dim: int | None = None) -> float:
    """E‖η‖² of the Eq. (6) noise with scale λ: ``"paper"`` 2λ² (li L744), ``"corrected"`` N(N+1)λ².

    The density ∝ exp(−‖η‖/λ) on R^N has radius ‖η‖ ~ Gamma(N, λ), whose second moment is N(N+1)λ²
    (erratum LI-1); ``model_dim`` N is required for it.
    """
    scale = check_real("scale", scale, low=0.0)
    noise_model = check_choice("noise_model", noise_model, NOISE_MODELS)
    if noise_model == "paper":
        return _finite("E||eta||^2", lambda: 2.0 * scale**2, f"scale = {scale:g}")
    if model_dim is None:
        raise ValueError("noise_model='corrected' needs model_dim N (E||eta||^2 = N(N+1) lambda^2); "
                         "give model_dim or noise_model='paper'")
    dim = check_int("model_dim", model_dim, low=1)
    return _finite("E||eta||^2", lambda: dim * (dim + 1.0) * scale**2, f"scale = {scale:g}, model_dim = {dim}")


def _paper_noise_checks(noise_model: str, model_dim: int | None) -> tuple[Hypothesis, ...]:
    """Under ``noise_model="paper"`` with a given N: N = 1, the only dimension where E‖η‖² = 2λ² (LI-1)."""
    if noise_model == "paper" and model_dim is not None:
        return (hypothesis("model dimension N = 1 (E||eta||^2 = 2 lambda^2 only for N = 1)", model_dim, "<=", 1,
                           "li L744; erratum LI-1"),)
    return ()


@dataclass(frozen=True)
class LaplaceNoise(TheoremResult):
    """Noise of one upload at sensitivity ΔS and budget ε (Theorem 1, li L185-199): pure ε-DP.

    ``variant`` is the noise model of E‖η‖² (LI-1); the paper model with a given N > 1 fails a hypothesis.
    """

    scale: float
    second_moment: float
    sensitivity: float
    epsilon: float
    noise_model: str
    model_dim: int | None
    mechanism: str = MECHANISM
    neighboring_relation: str = NEIGHBORING_RELATION
    notes: tuple[str, ...] = ("LI-1: E||eta||^2 is N(N+1) lambda^2 on R^N (corrected) or 2 lambda^2 (paper, N = 1)",
                              "LI-16: the upload is epsilon-DP between mini-batches differing in one sample; per "
                              "record of the edge's data up to b*epsilon (batches drawn with replacement)")
    source: str = cite("li", "Theorem 1, Eq. (6), E||eta||^2", "L185-199, L166, L744")

    @property
    def variant(self) -> str:
        return self.noise_model


def laplace_noise(*, sensitivity: float, epsilon: float, noise_model: str = "corrected",
                  model_dim: int | None = None) -> LaplaceNoise:
    """λ = ΔS/ε (li L141, L166) and E‖η‖² under ``noise_model``; the upload is ε-DP (replace-one)."""
    sensitivity = _positive("sensitivity", sensitivity)
    epsilon = _positive("epsilon", epsilon)
    scale = sensitivity / epsilon
    moment = noise_second_moment(scale=scale, noise_model=noise_model, model_dim=model_dim)
    return LaplaceNoise(scale=scale, second_moment=moment, sensitivity=sensitivity, epsilon=epsilon,
                        noise_model=noise_model, model_dim=model_dim,
                        hypotheses=_paper_noise_checks(noise_model, model_dim))


def delta_b(*, sigma: float, batch_size: int, sensitivity: float, epsilon: float, noise_model: str = "corrected",
            model_dim: int | None = None) -> float:
    """Δ_b = σ²/b + Δ₀ with Δ₀ = E‖η‖² at the smallest ε_k (Table 1 L123-124, li L203)."""
    sigma = _gradient_std(sigma)
    batch_size = check_int("batch_size", batch_size, low=1)
    noise = laplace_noise(sensitivity=sensitivity, epsilon=epsilon, noise_model=noise_model, model_dim=model_dim)
    return sigma**2 / batch_size + noise.second_moment


# --------------------------------------------------------------------------------------------
# Theorem 3: initial sensitivity from a failure probability (li L277-287)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Theorem3(TheoremResult):
    """ΔS and δ of Eq. (12) with the Chebyshev ratio u = 4σ²/(b²ΔS²) (admissible iff u < 1)."""

    sensitivity: float
    failure_probability: float
    chebyshev_ratio: float
    sigma: float
    batch_size: int
    meaning: str = ("delta is the probability (Chebyshev, per-sample variance sigma^2) that the assumed sensitivity "
                    "fails; not a standard DP delta (erratum LI-3)")
    notes: tuple[str, ...] = ("LI-3: delta is a Chebyshev failure probability of the assumed sensitivity, not a DP "
                              "delta; only the admissible root of Eq. (12) is used",)
    source: str = cite("li", "Theorem 3, Eq. (12), proof L285", "L279")


def _admissible(ratio: float) -> Hypothesis:
    return hypothesis("4 sigma^2/(b^2 Delta S^2) < 1 (admissible branch of Eq. (12))", ratio, "<", 1.0, "li L279, L285")


def theorem3_sensitivity(*, sigma: float, batch_size: int, delta: float) -> Theorem3:
    """Smallest ΔS with (1 − 4σ²/(b²ΔS²))² ≥ 1 − δ: ΔS = 2σ√(1+√(1−δ)) / (b√δ) (li Eq. (12), L279).

    The stable form of 2σ/(b√(1−√(1−δ))) (no cancellation as δ → 0); the other algebraic root is
    spurious (negative Chebyshev factor, erratum LI-3).
    """
    sigma = _positive("sigma", sigma)
    batch_size = check_int("batch_size", batch_size, low=1)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    sensitivity = 2.0 * sigma * math.sqrt(1.0 + math.sqrt(1.0 - delta)) / (batch_size * math.sqrt(delta))
    ratio = 1.0 - math.sqrt(1.0 - delta)
    return Theorem3(sensitivity=sensitivity, failure_probability=delta, chebyshev_ratio=ratio, sigma=sigma,
                    batch_size=batch_size, hypotheses=(_admissible(ratio),))


def theorem3_failure_probability(*, sigma: float, batch_size: int, sensitivity: float) -> Theorem3:
    """δ = 1 − (1 − u)² = u(2 − u), u = 4σ²/(b²ΔS²): inverse of Eq. (12) (li L279).

    When u ≥ 1 Chebyshev bounds nothing: ``failure_probability`` is then the trivial 1, with ``valid`` False
    (``"no guarantee"``: the hypothesis u < 1 fails).
    """
    sigma = _positive("sigma", sigma)
    batch_size = check_int("batch_size", batch_size, low=1)
    sensitivity = _positive("sensitivity", sensitivity)
    ratio = _finite("the Chebyshev ratio (2 sigma/(b Delta S))^2",
                    lambda: (2.0 * sigma / (batch_size * sensitivity)) ** 2,
                    f"sigma = {sigma:g}, batch_size = {batch_size}, sensitivity = {sensitivity:g}")
    check = _admissible(ratio)
    return Theorem3(sensitivity=sensitivity, failure_probability=ratio * (2.0 - ratio) if check.holds else 1.0,
                    chebyshev_ratio=ratio, sigma=sigma, batch_size=batch_size, hypotheses=(check,))


# --------------------------------------------------------------------------------------------
# Learning rates with staleness (Eq. (10), (11), (13); Table 2 L423-430)
# --------------------------------------------------------------------------------------------

def audp_learning_rate(*, t: float, smoothness: float, max_staleness: int, delta_b: float) -> float:
    """γ_t = 1/(L(τ_max+1) + √(Δ_b+1)√t) (li Eq. (10), L227)."""
    t = check_real("t", t, low=1.0)
    smoothness = _positive("smoothness", smoothness)
    delta_b = check_real("delta_b", delta_b, low=0.0)
    return 1.0 / (smoothness * (_staleness(max_staleness) + 1) + math.sqrt((delta_b + 1.0) * t))


def eq11_learning_rate(*, t: float, smoothness: float, max_staleness: int, delta_b: float) -> float:
    """γ_t = 1/(L((τ_max+1)²+1) + √(Δ_b+1)√t) (li Eq. (11), L247)."""
    t = check_real("t", t, low=1.0)
    smoothness = _positive("smoothness", smoothness)
    delta_b = check_real("delta_b", delta_b, low=0.0)
    return 1.0 / (smoothness * ((_staleness(max_staleness) + 1) ** 2 + 1) + math.sqrt((delta_b + 1.0) * t))


def eq11_max_learning_rate(*, smoothness: float, max_staleness: int) -> float:
    """γ ≤ 1/(L((τ_max+1)²+1)) ⟺ γ − Lγ² − L(τ_max+1)²γ² ≥ 0 (li L249 as corrected, erratum LI-5)."""
    return 1.0 / (_positive("smoothness", smoothness) * ((_staleness(max_staleness) + 1) ** 2 + 1))


def theorem4_max_learning_rate(*, smoothness: float, max_staleness: int) -> float:
    """γ ≤ 1/(2L(τ_max+1)) (li Eq. (13), L293); MAPA's γ = 1/(2PL(τ_max+1)) meets it for P ≥ 1."""
    return 1.0 / (2.0 * _positive("smoothness", smoothness) * (_staleness(max_staleness) + 1))


def learning_rate_conditions(*, learning_rate: float, smoothness: float,
                             max_staleness: int) -> tuple[Hypothesis, ...]:
    """The step-size conditions of the paper, checked on one γ.

    γ < 1/L (the negative term of Lemma 1 may be dropped, li L213); γ ≤ 1/(L((τ_max+1)²+1)) (Eq. (11)'s
    condition, L249 corrected); γ ≤ 1/(2L(τ_max+1)) (Theorem 4, Eq. (13) L293).
    """
    gamma = _positive("learning_rate", learning_rate)
    smoothness = _positive("smoothness", smoothness)
    return (hypothesis("gamma < 1/L", gamma, "<", 1.0 / smoothness, "li L213"),
            hypothesis("gamma <= 1/(L((tau_max+1)^2+1))", gamma, "<=",
                       eq11_max_learning_rate(smoothness=smoothness, max_staleness=max_staleness), "li L249"),
            hypothesis("gamma <= 1/(2L(tau_max+1))", gamma, "<=",
                       theorem4_max_learning_rate(smoothness=smoothness, max_staleness=max_staleness),
                       "li Eq. (13) L293"))


def table2_inverse_learning_rates(*, t: float, smoothness: float, max_staleness: int, sigma: float, radius: float,
                                  batch_size: int, delta_b: float) -> dict:
    """1/γ_t of the compared algorithms as printed in Table 2 (li L423-430); MAPA at P = 1.

    CSGD L + √(t+1)σ/(R√b); ASGD L(τ_max+1)² + √(t+1)σ/(R√b); AUDP Eq. (10); Eq. (11); MAPA 2L(τ_max+1).
    """
    smoothness = _positive("smoothness", smoothness)
    tau = _staleness(max_staleness)
    sampling = (math.sqrt(check_real("t", t, low=1.0) + 1.0) * _gradient_std(sigma)
                / (_positive("radius", radius) * math.sqrt(check_int("batch_size", batch_size, low=1))))
    common = {"t": t, "smoothness": smoothness, "max_staleness": tau, "delta_b": delta_b}
    return {"CSGD": smoothness + sampling, "ASGD": smoothness * (tau + 1) ** 2 + sampling,
            "AUDP": 1.0 / audp_learning_rate(**common), "Eq11": 1.0 / eq11_learning_rate(**common),
            "MAPA_P1": 1.0 / theorem4_max_learning_rate(smoothness=smoothness, max_staleness=tau)}


# --------------------------------------------------------------------------------------------
# Theorem 2 (convex, diminishing step) and Theorem 4 (constant step, ball)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Theorem2Bound(TheoremResult):
    """Bound on (1/T)Σ E f(x_t) − f(x*) of AUDP with the Eq. (10) step (li Theorem 2, L225-231)."""

    value: float
    terms: dict
    iterations: int
    first_learning_rate: float
    assumptions: tuple[str, ...]
    variant: str
    source: str
    notes: tuple[str, ...]


#: Above this many iterations Σγ_t² of Eq. (26) is summed exactly to here and the rest bounded by an integral.
EXACT_SUM_TERMS = 2**20


def eq26_sum_of_squared_steps(*, iterations: int, smoothness: float, max_staleness: int, delta_b: float) -> float:
    """Σ_{t≤T} γ_t² with the Eq. (10) step γ_t = 1/(a + c√t), a = L(τ_max+1), c = √(Δ_b+1) (li Eq. (26), L723).

    Exact (numpy sum) up to :data:`EXACT_SUM_TERMS` terms; beyond, the tail Σ_{M<t≤T} γ_t² is replaced by its
    upper bound ∫_M^T dt/(a + c√t)² = (2/c²)[ln u + a/u] from u = a + c√M to a + c√T (γ_t² decreases), so the
    result is never below the sum (it exceeds it by less than γ_M² ≈ 1e-6/c²).
    """
    steps = check_int("iterations", iterations, low=1)
    a = _positive("smoothness", smoothness) * (_staleness(max_staleness) + 1)
    c = math.sqrt(check_real("delta_b", delta_b, low=0.0) + 1.0)
    head = min(steps, EXACT_SUM_TERMS)
    total = float(np.sum(1.0 / (a + c * np.sqrt(np.arange(1.0, head + 1.0))) ** 2))
    if steps > head:
        def antiderivative(t: float) -> float:
            u = a + c * math.sqrt(t)
            return 2.0 / c**2 * (math.log(u) + a / u)

        total += antiderivative(steps) - antiderivative(head)
    return total


def theorem2_bound(*, iterations: int, radius: float, gradient_bound: float, smoothness: float, max_staleness: int,
                   delta_b: float, variant: str = "corrected") -> Theorem2Bound:
    """Theorem 2 (li L231) as printed (``"paper"``), with log T → 1 + log T (``"paper_log"``) or re-derived.

    ``"corrected"`` (errata LI-6, LI-7): RGτ/T + L(Δ_b+G²)(τ+1)²(1+ln T)/(2(Δ_b+1)T) + 2Δ_b/√((Δ_b+1)T)
    + R²L(τ+1)/(2T) + R²√(Δ_b+1)/(2√T), a bound on the iterates x_2 … x_{T+1} (I-9). The paper variants
    rest on Eq. (26) (Σγ_t² ≤ log T/(Δ_b+1), via Σ1/t ≤ log T, false for every T; LI-6): ``"paper"`` checks
    it as a hypothesis on the actual steps (:func:`eq26_sum_of_squared_steps`) and fails where it is false,
    e.g. L = 0.01, τ = 0, Δ_b = 0, T = 100: 5.139605 > 4.605170.
    """
    variant = check_choice("variant", variant, THEOREM2_VARIANTS)
    steps = check_int("iterations", iterations, low=1)
    # R² and G² must be floats: beyond 1e150 they overflow (fuzz: radius = 8.574e307 raised OverflowError)
    radius = check_real("radius", radius, low=0.0, high=1e150)
    grad = check_real("gradient_bound", gradient_bound, low=0.0, high=1e150)
    smoothness = _positive("smoothness", smoothness)
    tau = _staleness(max_staleness)
    delta_b = check_real("delta_b", delta_b, low=0.0)
    gamma1 = audp_learning_rate(t=1, smoothness=smoothness, max_staleness=tau, delta_b=delta_b)
    root = math.sqrt(delta_b + 1.0)
    log_t = math.log(steps) if variant == "paper" else 1.0 + math.log(steps)
    terms = {"delay": radius * grad * tau / steps,
             "staleness": smoothness * (delta_b + grad**2) * (tau + 1) ** 2 * log_t / (2.0 * (delta_b + 1.0) * steps)}
    if variant == "corrected":
        terms["noise"] = 2.0 * delta_b / (root * math.sqrt(steps))
        terms["radius"] = (radius**2 * smoothness * (tau + 1) / (2.0 * steps)
                           + radius**2 * root / (2.0 * math.sqrt(steps)))
        source = cite("li", "Theorem 2 re-derived from Eq. (25) with H_T <= 1 + ln T and R^2/(2 gamma_T)",
                      "L715-719")
    else:
        terms["noise"] = 4.0 * root / (2.0 * math.sqrt(steps))
        terms["radius"] = (radius**2 * root + radius**2 / gamma1) / (2.0 * math.sqrt(steps))
        source = cite("li", "Theorem 2" + (" with log T -> 1 + log T" if variant == "paper_log" else ""), "L231")
    checks = [hypothesis("gamma_1 < 1/L (Lemma 1's negative term dropped)", gamma1, "<", 1.0 / smoothness,
                         "li L213")]
    if variant == "corrected":
        notes = ["LI-6, LI-7: re-derived with H_T <= 1 + ln T and the telescoping sum <= R^2/(2 gamma_T)",
                 "LI-14: bounds (1/T) sum E f(x_t) - f* over the iterates x_2 ... x_T+1"]
    elif variant == "paper_log":
        notes = ["LI-6: log T of Eq. (26) replaced by 1 + log T (H_T <= 1 + ln T); otherwise as printed (L231)"]
    else:
        squares = eq26_sum_of_squared_steps(iterations=steps, smoothness=smoothness, max_staleness=tau,
                                            delta_b=delta_b)
        checks.append(hypothesis("sum_t gamma_t^2 <= log T/(Delta_b+1) (Eq. (26))", squares, "<=",
                                 math.log(steps) / (delta_b + 1.0), "li Eq. (26) L723; erratum LI-6"))
        notes = ["LI-6: rests on Eq. (26), sum_{t<=T} 1/t <= log T, which is false for every T; the hypothesis "
                 "checks Eq. (26) on these steps"]
    assumptions = ("f convex and differentiable (Assumption 1, L66)", "||grad f(x)|| <= G (L225)",
                   "||x_t - x*|| <= R for every t (L225; not enforced by AUDP)",
                   f"staleness tau(t) <= tau_max = {tau} (Assumption 2, L100)")
    return Theorem2Bound(value=sum(terms.values()), terms=terms, iterations=steps, first_learning_rate=gamma1,
                         variant=variant, hypotheses=tuple(checks), assumptions=assumptions, source=source,
                         notes=tuple(notes))


@dataclass(frozen=True)
class Theorem4Bound(TheoremResult):
    """(1/T)Σ E‖∇f(x_t)‖² ≤ 2F₀/(Tγ) + 2Δ_bLγ (li Theorem 4, Eq. (14) L297) and the ball radius 2Δ_bLγ."""

    value: float
    radius: float
    learning_rate: float
    max_learning_rate: float
    assumptions: tuple[str, ...] = ("L-smooth f, unbiased noisy gradients with variance <= Delta_b (L757); "
                                    "convexity not needed", "staleness tau(t) <= tau_max (Assumption 2, L100)")
    notes: tuple[str, ...] = ("LI-12: F0 = f(x_1) - f(x*) is an input the paper never gives",)
    source: str = cite("li", "Theorem 4, Eq. (13), Eq. (14)", "L293, L297")


def theorem4_bound(*, iterations: int, learning_rate: float, initial_gap: float, delta_b: float, smoothness: float,
                   max_staleness: int) -> Theorem4Bound:
    """Eq. (14) for a constant γ; when γ > 1/(2L(τ_max+1)) (Eq. (13) fails) the numbers are still given,
    marked ``"no guarantee"``.

    ``initial_gap`` is F₀ = f(x₁) − f(x*) (never given in the paper, erratum LI-12).
    """
    steps = check_int("iterations", iterations, low=1)
    gamma = _positive("learning_rate", learning_rate)
    gap = check_real("initial_gap", initial_gap, low=0.0)
    delta_b = check_real("delta_b", delta_b, low=0.0)
    smoothness = _positive("smoothness", smoothness)
    limit = theorem4_max_learning_rate(smoothness=smoothness, max_staleness=max_staleness)
    check = hypothesis("gamma <= 1/(2L(tau_max+1))", gamma, "<=", limit, "li Eq. (13) L293")
    radius = 2.0 * delta_b * smoothness * gamma
    return Theorem4Bound(value=2.0 * gap / (steps * gamma) + radius, radius=radius, learning_rate=gamma,
                         max_learning_rate=limit, hypotheses=(check,))


# --------------------------------------------------------------------------------------------
# MAPA (Sec. 6.2 L308-328, Algorithm 1 L345-383)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Stage(_Result):
    """One MAPA stage: constant γ and ΔS for ``iterations`` Cloud updates from ``start`` (1-based, inclusive).

    ``length`` T_s = max(1, ⌈T₀⌉) is the planned length (Eq. (15) L318), ``iterations`` what runs before
    the global budget T ends (the last stage may be cut). ``gradient_norm_bound`` G' = √(2Δ_b/(P(τ+1)))
    is Eq. (14)'s right-hand side at T₀ (L320); ``sensitivity_theory`` = 2G'/b equals θΔS unless P was
    clamped to 1. ``noise_scale`` λ = ΔS/ε₀ at the smallest ε_k.
    """

    index: int
    start: int
    end: int
    length: int
    iterations: int
    t0: float
    p_raw: float
    p: float
    clamped: bool
    learning_rate: float
    sensitivity: float
    clipping_norm: float
    noise_scale: float
    delta_0: float
    delta_b: float
    gradient_norm_bound: float
    sensitivity_theory: float


def mapa_p(*, delta_b: float, max_staleness: int, batch_size: int, sensitivity: float,
           theta: float) -> tuple[float, float]:
    """(P_raw, P): P_raw = 8Δ_b/((τ+1)b²ΔS²θ²) (li Eq. (16), L326), P = max(P_raw, 1) (Table 2 L428)."""
    delta_b = _positive("delta_b", delta_b)
    batch_size = check_int("batch_size", batch_size, low=1)
    sensitivity = _positive("sensitivity", sensitivity)
    theta = check_real("theta", theta, low=0.0, high=1.0, low_open=True, high_open=True)
    tau = _staleness(max_staleness)
    raw = _finite("P", lambda: 8.0 * delta_b / ((tau + 1) * batch_size**2 * sensitivity**2 * theta**2),
                  f"delta_b = {delta_b:g}, batch_size = {batch_size}, sensitivity = {sensitivity:g}, theta = {theta:g}")
    return raw, max(raw, 1.0)


def mapa_stage_length(*, p: float, smoothness: float, max_staleness: int, initial_gap: float,
                      delta_b: float) -> tuple[float, int]:
    """(T₀, T_s): T₀ = 4P²L(τ+1)²F₀/Δ_b (li Eq. (15), L318), T_s = max(1, ⌈T₀⌉) (erratum LI-11)."""
    p = check_real("p", p, low=1.0)
    tau = _staleness(max_staleness)
    smoothness, gap = _positive("smoothness", smoothness), _positive("initial_gap", initial_gap)
    delta_b = _positive("delta_b", delta_b)
    t0 = _finite("the stage length T_0", lambda: 4.0 * p**2 * smoothness * (tau + 1) ** 2 * gap / delta_b,
                 f"p = {p:g}, smoothness = {smoothness:g}, initial_gap = {gap:g}, delta_b = {delta_b:g}")
    return t0, max(1, math.ceil(t0))


def _edge_epsilons(epsilon, num_edges: int) -> tuple[float, ...]:
    if isinstance(epsilon, Sequence) and not isinstance(epsilon, str):
        if len(epsilon) != num_edges:
            raise ValueError(f"epsilon must be a number or one value per edge ({num_edges}); got {len(epsilon)}")
        return tuple(_positive(f"epsilon[{k}]", value) for k, value in enumerate(epsilon))
    return (_positive("epsilon", epsilon),) * num_edges


@dataclass(frozen=True)
class CompositionTotals(_Result):
    """Total ε over T uploads, each pure ε_k-DP, under three compositions (li L387; Dwork & Roth 3.16, 3.20).

    ``basic_epsilon`` = T·max ε_k ≥ the paper's Σ_t ε_{k(t)} (Dwork & Roth 3.16): valid whatever the upload
    pattern (one fast edge may upload every time). ``per_edge_epsilon`` = max_k n_k ε_k with round-robin upload counts
    n_k (each edge's data enter only its own uploads). ``advanced_epsilon`` at ``advanced_delta`` = δ':
    advanced composition of each edge's n_k uploads, worst edge. ``best_*`` is the smaller ε of the
    per-edge pair (both valid under round robin).
    """

    iterations: int
    num_edges: int
    per_iteration_epsilon: tuple[float, ...]
    uploads_per_edge: tuple[int, ...]
    basic_epsilon: float
    per_edge_epsilon: float
    advanced_epsilon: float
    advanced_delta: float
    best_epsilon: float
    best_delta: float
    best_method: str
    delta_slack: float
    upload_pattern: str = UPLOAD_PATTERN
    mechanism: str = MECHANISM
    neighboring_relation: str = NEIGHBORING_RELATION
    source: str = "li L387 (simple composition), Dwork & Roth Thm 3.16 and 3.20 (bounds.composition)"


def round_robin_uploads(*, iterations: int, num_edges: int) -> tuple[int, ...]:
    """n_k = ⌊(T − k)/K⌋ + 1 uploads of edge k = 1..K when T uploads go round robin (0 if T < k)."""
    steps = check_int("iterations", iterations, low=0)
    edges = check_int("num_edges", num_edges, low=1)
    return tuple((steps - k) // edges + 1 if steps >= k else 0 for k in range(1, edges + 1))


def composition_totals(*, epsilon, iterations: int, num_edges: int, delta_slack: float = 1e-5) -> CompositionTotals:
    """Privacy totals of T uploads by K edges, each upload pure ε_k-DP (``epsilon`` scalar or per edge)."""
    steps = check_int("iterations", iterations, low=1)
    edges = check_int("num_edges", num_edges, low=1)
    slack = check_real("delta_slack", delta_slack, low=0.0, high=1.0, low_open=True, high_open=True)
    eps = _edge_epsilons(epsilon, edges)
    uploads = round_robin_uploads(iterations=steps, num_edges=edges)
    basic = steps * max(eps)
    per_edge = max(n * e for n, e in zip(uploads, eps, strict=True))
    advanced = [composition.advanced_composition(epsilon=e, delta=0.0, count=n, delta_slack=slack)
                for n, e in zip(uploads, eps, strict=True) if n > 0]
    worst = max(advanced)
    best = (worst[0], worst[1], "advanced") if worst[0] < per_edge else (per_edge, 0.0, "per_edge")
    return CompositionTotals(iterations=steps, num_edges=edges, per_iteration_epsilon=eps, uploads_per_edge=uploads,
                             basic_epsilon=basic, per_edge_epsilon=per_edge, advanced_epsilon=worst[0],
                             advanced_delta=worst[1], best_epsilon=best[0], best_delta=best[1],
                             best_method=best[2], delta_slack=slack)


@dataclass(frozen=True)
class MapaSchedule(TheoremResult):
    """The MAPA stages until the iteration budget is spent, with the privacy totals and provenance."""

    stages: tuple[Stage, ...]
    privacy: CompositionTotals
    inputs: dict
    noise_model: str
    update_rule: str
    p_reference: str
    notes: tuple[str, ...]
    source: str = cite("li", "Sec. 6.2, Algorithm 1 (resolved as spec li_mapa.md §2.3)", "L308-328, L345-383")

    @property
    def variant(self) -> str:
        """The noise model of Δ_b (LI-1): ``"corrected"`` or ``"paper"``."""
        return self.noise_model

    @property
    def iterations(self) -> int:
        return sum(stage.iterations for stage in self.stages)

    @property
    def truncated(self) -> bool:
        """Whether the last stage was cut by the budget T (erratum LI-11)."""
        last = self.stages[-1]
        return last.iterations < last.length


def _schedule_hypotheses(stages, noise_model, model_dim, smoothness, tau) -> tuple[Hypothesis, ...]:
    limit = theorem4_max_learning_rate(smoothness=smoothness, max_staleness=tau)
    return (hypothesis("max_s gamma_s <= 1/(2L(tau_max+1))", max(s.learning_rate for s in stages), "<=", limit,
                       "li Eq. (13) L293"), *_paper_noise_checks(noise_model, model_dim))


def mapa_schedule(*, epsilon, delta: float, sigma: float, batch_size: int, smoothness: float, max_staleness: int,
                  theta: float, iterations: int, initial_gap: float, num_edges: int,
                  noise_model: str = "corrected", model_dim: int | None = None,
                  initial_sensitivity: float | None = None, update_rule: str = "theta",
                  p_reference: str = "current", delta_slack: float = 1e-5) -> MapaSchedule:
    """MAPA's stage schedule (li Algorithm 1 L345-383, Eq. (15)-(16) L318-326) until T iterations are spent.

    Start from ΔS₀ of Theorem 3 (failure probability ``delta``) or ``initial_sensitivity`` (e.g. 2C₀/b for
    a hand-set per-sample clip C₀, li L442). Each stage s: Δ_b = σ²/b + E‖η‖²(ΔS_s/ε₀) (R-11, at the start
    of the stage), P from Eq. (16) on the current ΔS_s (``p_reference="current"``, R-6; ``"initial"`` is
    Table 2's literal ΔS₀), γ = 1/(2PL(τ+1)), T_s = max(1, ⌈T₀⌉) with the clamped P (R-7, R-8), the last
    stage cut at T (R-9); then ΔS ← θΔS (``update_rule="theta"``, Alg. 1 L379) or ΔS ← 2G'/b
    (``"theory"``, L320). Batch size b is never changed (I-23). ``epsilon`` is one ε or one per edge.
    """
    batch_size = check_int("batch_size", batch_size, low=1)
    edges = check_int("num_edges", num_edges, low=1)
    eps0 = min(_edge_epsilons(epsilon, edges))
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    sigma = _gradient_std(sigma)
    smoothness = _positive("smoothness", smoothness)
    tau = _staleness(max_staleness)
    theta = check_real("theta", theta, low=0.0, high=1.0, low_open=True, high_open=True)
    steps = check_int("iterations", iterations, low=1)
    gap = _positive("initial_gap", initial_gap)
    noise_model = check_choice("noise_model", noise_model, NOISE_MODELS)
    update_rule = check_choice("update_rule", update_rule, UPDATE_RULES)
    p_reference = check_choice("p_reference", p_reference, P_REFERENCES)
    if initial_sensitivity is None:
        sensitivity = theorem3_sensitivity(sigma=sigma, batch_size=batch_size, delta=delta).sensitivity
    else:
        sensitivity = _positive("initial_sensitivity", initial_sensitivity)
    reference = sensitivity
    stages: list[Stage] = []
    t = 1
    while t <= steps:
        if len(stages) == MAX_STAGES:
            raise ValueError(f"the schedule needs more than {MAX_STAGES} stages for iterations = {steps}; "
                             f"lower iterations or use p_reference='current'")
        noise = laplace_noise(sensitivity=sensitivity, epsilon=eps0, noise_model=noise_model, model_dim=model_dim)
        db = sigma**2 / batch_size + noise.second_moment
        ref = sensitivity if p_reference == "current" else reference
        p_raw, p = mapa_p(delta_b=db, max_staleness=tau, batch_size=batch_size, sensitivity=ref, theta=theta)
        t0, length = mapa_stage_length(p=p, smoothness=smoothness, max_staleness=tau, initial_gap=gap, delta_b=db)
        run = min(length, steps - t + 1)
        bound = math.sqrt(2.0 * db / (p * (tau + 1)))
        stages.append(Stage(index=len(stages) + 1, start=t, end=t + run - 1, length=length, iterations=run, t0=t0,
                            p_raw=p_raw, p=p, clamped=p_raw < 1.0,
                            learning_rate=1.0 / (2.0 * p * smoothness * (tau + 1)),
                            sensitivity=sensitivity, clipping_norm=batch_size * sensitivity / 2.0,
                            noise_scale=noise.scale, delta_0=noise.second_moment, delta_b=db,
                            gradient_norm_bound=bound, sensitivity_theory=2.0 * bound / batch_size))
        t += run
        sensitivity = theta * sensitivity if update_rule == "theta" else stages[-1].sensitivity_theory
        if t <= steps and sensitivity < SMALLEST_SENSITIVITY:
            raise ValueError(f"the sensitivity fell below {SMALLEST_SENSITIVITY:g} after {len(stages)} stages "
                             f"(iteration {t} of {steps}): lower iterations or raise theta")
    notes = ["Per-sample clipping at C_s = b Delta S_s / 2 is what makes Delta S_s the sensitivity (Remark 4, "
             "erratum LI-8); clipping the averaged gradient does not.",
             "The stage lengths depend only on the constants (L, sigma, tau_max, F0, b, epsilon), not on data: "
             "no privacy is spent on the stage test t_s <= T_s (li L385) if those constants are public.",
             "MAPA's sensitivity reduction is heuristic (erratum LI-9): Theorem 4 bounds the mean squared full "
             "gradient, not every per-sample gradient, so late stages may clip (bias) gradients."]
    if noise_model == "paper":
        notes.append("noise_model='paper': Delta_b uses E||eta||^2 = 2 lambda^2 (li L744), which understates the "
                     "noise of the private mechanism by N(N+1)/2 for model dimension N > 1 (erratum LI-1); "
                     "the per-iteration epsilon is unaffected.")
    inputs = {"epsilon": epsilon if not isinstance(epsilon, Sequence) else list(epsilon), "delta": delta,
              "sigma": sigma, "batch_size": batch_size, "smoothness": smoothness, "max_staleness": tau,
              "theta": theta, "iterations": steps, "initial_gap": gap, "num_edges": edges, "model_dim": model_dim,
              "initial_sensitivity": initial_sensitivity, "delta_slack": delta_slack}
    return MapaSchedule(stages=tuple(stages),
                        privacy=composition_totals(epsilon=epsilon, iterations=steps, num_edges=edges,
                                                   delta_slack=delta_slack),
                        inputs=inputs, noise_model=noise_model, update_rule=update_rule, p_reference=p_reference,
                        hypotheses=_schedule_hypotheses(stages, noise_model, model_dim, smoothness, tau),
                        notes=tuple(notes))


def mapa_first_p(*, batch_size: int, epsilon: float, delta: float, theta: float, max_staleness: int) -> float:
    """P₁ (unclamped) of the Theorem-3 start under the paper noise model, σ-free (spec [chk A8]).

    P₁ = 2(bε²(1 − √(1−δ)) + 8) / (b²ε²θ²(τ+1)); 1 − √(1−δ) is evaluated as δ/(1 + √(1−δ)).
    """
    b = check_int("batch_size", batch_size, low=1)
    eps = _positive("epsilon", epsilon)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    theta = check_real("theta", theta, low=0.0, high=1.0, low_open=True, high_open=True)
    ratio = delta / (1.0 + math.sqrt(1.0 - delta))
    return 2.0 * (b * eps**2 * ratio + 8.0) / (b**2 * eps**2 * theta**2 * (_staleness(max_staleness) + 1))
