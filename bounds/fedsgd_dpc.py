"""Zhou et al., optimal numbers of queries and replies in FL with DP (FedSGD-DPC): noise, bounds, T* and b*.

Paper: ``zhou_queries_replies_fl_dp.txt``; every docstring cites its lines (``zhou L322`` = line 322).
Spec with errata: ``specs/zhou_queries_replies.md`` (its §7 items ``#n``; ours are ``Z-n`` in ``docs/ERRATA.md``).

Setting (L83, L137-182). N clients; client i holds d_i examples, d = Σ d_i, the model has p parameters.
Each of T global iterations ("queries") the server picks b clients; each picked client returns one
noisy gradient step ("reply"), so a client replies bT/N times on average. The DP noise is calibrated
once, for the whole training, from (T, b): more replies mean more noise per reply.

Privacy model of every number here:

* **Laplace** (Theorem 1, L196-200): pure ε-DP by basic composition over the client's replies; each
  reply releases the mean gradient over the *full* local data set (q = 1, no sampling), whose L1
  sensitivity is 2ξ₁/d_i for replace-one *and* for add/remove-one neighbours (removing or adding one of
  d_i records moves the mean by at most 2ξ₁/d_i).
* **Gaussian**: (ε, δ)-DP of R replies, each a Poisson-subsampled Gaussian mechanism (every local example
  joins the batch independently with probability q), **add/remove-one** neighbours, noise std σ_i on the
  batch mean normalised by the expected batch size q·d_i, i.e. noise multiplier z = σ_i q d_i/ξ₂. This is
  Abadi et al.'s model behind Theorem 2 (L222). The paper's Algorithm 1 draws a fixed q fraction (L160),
  which our accountant does not cover; run Poisson sampling.
* **Replies.** A client's guarantee depends on how often *it* replies. Algorithm 1 selects round robin
  (L145): at most ⌈bT/N⌉ replies. The analysis assumes uniform random selection (L170, L196, L611, L634),
  under which the number of replies is random and can reach T. ``variant="paper"`` calibrates on the
  printed bT/N (possibly fractional: some clients then get ε·⌈bT/N⌉/(bT/N)); ``variant="corrected"``
  (default) calibrates on the most replies a client can make (erratum Z-1).

The convergence bound (Theorems 3/4, L296-298, L399-401) is evaluated at t = T with the noise calibrated
for T; ``U(T, b)`` is the paper's name for it (L314, L412). Closed forms (Eq. (6), L336, the KKT
solutions L364-365, L418-419) are those of the continuous relaxation bT/N; :func:`laplace_exact_choice`
gives the exact integer optimum of the variant's U, which is never worse than the paper's rounding rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fedplan.bounds import accounting, pld
from fedplan.bounds.references import cite
from fedplan.bounds.theorem import VARIANTS, Hypothesis, TheoremResult, hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real

SELECTIONS = ("round_robin", "shuffle_partition", "uniform")
LAPLACE_RELATION = "replace_one or add_or_remove_one (sensitivity 2ξ₁/d_i covers both)"
LAPLACE_SAMPLING = "none: every reply uses the full local data set (q = 1, zhou L250)"
GAUSSIAN_RELATION = "add_or_remove_one"
GAUSSIAN_SAMPLING = "poisson: each local example joins a reply's batch with probability q"


#: Errata touching the constants and choices (docs/ERRATA.md).
Z15_NOTE = "Z-15: Lemma 2's factor 2 in 2(N-b)G^2/((N-1)b) is kept: valid, only looser"
Z9_NOTE = "Z-9: the paper's rounding (unstated, Table I) is T = floor(T*) and b = ceil(b*) clipped to [1, N]"
Z5_NOTE = "Z-5: T = 0: the DP noise is too large for any round to help (Solution 3, L365, L421)"


def _check_variant(variant: str) -> str:
    return check_choice("variant", variant, VARIANTS)


def _per_client(name: str, value, count: int, **limits) -> np.ndarray:
    """``value`` (a number, or one number per client) as a float array of length ``count``, validated."""
    if np.ndim(value) == 0:
        return np.full(count, check_real(name, value, **limits))
    values = list(value)
    if len(values) != count:
        raise ValueError(f"{name} must be a number or one value per client ({count}); got {len(values)} values")
    return np.array([check_real(f"{name}[{index}]", item, **limits) for index, item in enumerate(values)])


def _check_max_rounds(max_rounds) -> float:
    """``max_rounds`` as a float: ``math.inf`` or a non-negative integer."""
    if isinstance(max_rounds, float) and max_rounds == math.inf:
        return math.inf
    return float(check_int("max_rounds", max_rounds, low=0))


# --------------------------------------------------------------------------------------------
# Problem constants (Sec. III and V-A)
# --------------------------------------------------------------------------------------------

#: Smallest μ: the constants divide by μ² (C₁ = 8NG²/(μ²(N−1)), L356), which is 0 in floating point below ~1e-154.
MIN_STRONG_CONVEXITY = 1e-100
#: Most clients a :class:`Problem` holds: it keeps d_i and Λ_i per client (two arrays of N floats).
MAX_CLIENTS = 10**7


@dataclass(frozen=True, kw_only=True)
class Problem:
    """The constants of the convergence analysis (zhou L83, L246, L254, L260-276, L389).

    ``client_sizes`` d_i (one number, replicated, or one per client); ``strong_convexity`` μ and
    ``smoothness`` λ with μ ≤ λ (A3 and A4 together imply it, so γ = 2λ/μ ≥ 2, L296);
    ``gradient_bound`` G with E‖∇F_i(θ, ζ)‖² ≤ G² (A5, L272); ``heterogeneity`` Γ = F* − Σ (d_i/d) F_i*
    (Def. 4, L246); ``initial_distance`` Y₀ = ‖θ₀ − θ*‖² (a *squared* distance, L254);
    ``local_gradient_std`` Λ_i with E‖∇F_i(θ, D_i) − ∇F_i(θ, ζ)‖² ≤ Λ_i² (A6, L389; Gaussian only).
    """

    num_clients: int
    model_dim: int
    client_sizes: float | tuple[float, ...]
    strong_convexity: float
    smoothness: float
    gradient_bound: float
    heterogeneity: float = 0.0
    initial_distance: float
    local_gradient_std: float | tuple[float, ...] = 0.0

    def __post_init__(self) -> None:
        n = check_int("num_clients", self.num_clients, low=2, high=MAX_CLIENTS)
        mu = check_real("strong_convexity", self.strong_convexity, low=MIN_STRONG_CONVEXITY)
        values = {
            "num_clients": n,
            "model_dim": check_int("model_dim", self.model_dim, low=1),
            "client_sizes": tuple(_per_client("client_sizes", self.client_sizes, n, low=0.0, low_open=True).tolist()),
            "strong_convexity": mu,
            "smoothness": check_real("smoothness", self.smoothness, low=mu),
            "gradient_bound": check_real("gradient_bound", self.gradient_bound, low=0.0),
            "heterogeneity": check_real("heterogeneity", self.heterogeneity, low=0.0),
            "initial_distance": check_real("initial_distance", self.initial_distance, low=0.0),
            "local_gradient_std": tuple(_per_client("local_gradient_std", self.local_gradient_std, n,
                                                    low=0.0).tolist()),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def total_size(self) -> float:
        """d = Σ d_i (L83)."""
        return float(sum(self.client_sizes))

    @property
    def gamma(self) -> float:
        """γ = 2λ/μ (L296), so that η₀ = 1/λ."""
        return 2.0 * self.smoothness / self.strong_convexity

    @property
    def hypotheses(self) -> tuple[Hypothesis, ...]:
        """The analysis assumes d_1 = … = d_N (L250); reported with the spread of the d_i."""
        sizes = self.client_sizes
        return (Hypothesis("d_1 = ... = d_N", bool(max(sizes) == min(sizes)),
                           f"min d_i = {min(sizes):g}, max d_i = {max(sizes):g}", "L250"),)


def step_size(*, problem: Problem, t: float) -> float:
    """η_t = 2/(μ(t + γ)) (Theorem 3/4, zhou L296, L399); η₀ = 1/λ as Lemma 3 requires (L288)."""
    t = check_real("t", t, low=0.0)
    return 2.0 / (problem.strong_convexity * (t + problem.gamma))


# --------------------------------------------------------------------------------------------
# Replies and per-client noise (Theorems 1 and 2)
# --------------------------------------------------------------------------------------------

def _check_schedule(rounds, clients_per_round, num_clients) -> tuple[int, int, int]:
    n = check_int("num_clients", num_clients, low=2)
    return check_int("rounds", rounds, low=0), check_int("clients_per_round", clients_per_round, low=1, high=n), n


def _max_replies(rounds: int, clients_per_round: int, num_clients: int, selection: str) -> int:
    """Most replies one client can make: ⌈bT/N⌉ under round robin / shuffle-partition, T under uniform."""
    if selection == "uniform":
        return rounds
    return -(-rounds * clients_per_round // num_clients)


def replies_per_client(*, rounds: int, clients_per_round: int, num_clients: int, variant: str = "corrected") -> float:
    """Replies a client makes over T rounds: bT/N as printed (L172, L196, footnote 3 L256) or ⌈bT/N⌉.

    ``variant="paper"`` returns the average bT/N, which is fractional in general (b = 1, T = 22, N = 10:
    2.2); ``"corrected"`` the round-robin maximum ⌈bT/N⌉ (L145), the count a guarantee must cover.
    """
    variant = _check_variant(variant)
    t, b, n = _check_schedule(rounds, clients_per_round, num_clients)
    return t * b / n if variant == "paper" else float(_max_replies(t, b, n, "round_robin"))


def _calibration_replies(rounds: int, clients_per_round: int, num_clients: int, selection: str,
                         variant: str) -> tuple[float, int]:
    """(R used to calibrate the noise, most replies a client can make)."""
    max_replies = _max_replies(rounds, clients_per_round, num_clients, selection)
    replies = rounds * clients_per_round / num_clients if variant == "paper" else float(max_replies)
    return replies, max_replies


def _replies_hypothesis(replies: float, max_replies: int, selection: str) -> Hypothesis:
    return hypothesis(f"replies per client <= calibrated R ({selection} selection)", max_replies, "<=", replies,
                      "L145, L196")


@dataclass(frozen=True)
class LaplaceNoise(TheoremResult):
    """Per-coordinate Laplace noise of one client for the whole training (Theorem 1, zhou L196-202)."""

    scale: float
    replies: float
    max_replies: int
    sensitivity: float
    epsilon: float
    epsilon_guaranteed: float
    selection: str
    variant: str
    notes: tuple[str, ...]
    neighboring_relation: str = LAPLACE_RELATION
    sampling: str = LAPLACE_SAMPLING
    source: str = cite("zhou", "Theorem 1", "L196-202")

    @property
    def variance(self) -> float:
        """Per-coordinate variance 2s² (so E‖w_t^i‖² = 2ps², L202)."""
        return 2.0 * self.scale**2

    @property
    def per_reply_epsilon(self) -> float:
        """ε of one reply, sensitivity/scale (Dwork & Roth Thm 3.6); 0 when there are no replies."""
        return self.sensitivity / self.scale if self.scale > 0 else 0.0


def laplace_noise(*, rounds: int, clients_per_round: int, num_clients: int, client_size: float, epsilon: float,
                  clipping_norm: float, selection: str = "round_robin", variant: str = "corrected") -> LaplaceNoise:
    """Laplace scale s_i = 2Rξ₁/(d_i ε_i) making client i ε_i-DP over its replies (Theorem 1, zhou L198-200).

    ``clipping_norm`` is ξ₁, the L1 bound on every per-example gradient (A1, L194); the L1 sensitivity
    of the local mean gradient is 2ξ₁/d_i (L200). Each reply is then (ε_i/R)-DP and basic composition
    over at most R replies gives ε_i. ``variant="paper"`` uses R = bT/N (L198); ``"corrected"`` uses the
    most replies a client can make under ``selection`` (⌈bT/N⌉, or T for uniform selection).
    ``epsilon_guaranteed`` is what basic composition certifies over the most replies: it exceeds
    ``epsilon`` when the calibration used fewer (MNIST, b = 1, T = 22, ε = 1: s = 0.22, ε 1.364).
    """
    variant = _check_variant(variant)
    selection = check_choice("selection", selection, SELECTIONS)
    t, b, n = _check_schedule(rounds, clients_per_round, num_clients)
    d_i = check_real("client_size", client_size, low=0.0, low_open=True)
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    xi = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    replies, max_replies = _calibration_replies(t, b, n, selection, variant)
    sensitivity = 2.0 * xi / d_i
    scale = sensitivity * replies / epsilon
    guaranteed = max_replies * sensitivity / scale if scale > 0 else 0.0
    return LaplaceNoise(scale=scale, replies=replies, max_replies=max_replies, sensitivity=sensitivity,
                        epsilon=epsilon, epsilon_guaranteed=guaranteed, selection=selection, variant=variant,
                        hypotheses=(_replies_hypothesis(replies, max_replies, selection),),
                        notes=("Z-1: calibrated on R = bT/N replies (as printed); a client may reply up to "
                               f"{max_replies} times" if variant == "paper" else
                               "Z-1: calibrated on the most replies a client can make",))


@dataclass(frozen=True)
class GaussianNoise(TheoremResult):
    """Per-coordinate Gaussian noise of one client: std σ_i on its batch-mean gradient (zhou L222-224).

    ``noise_multiplier`` z = σ_i q d_i/ξ₂ is the std relative to the clipping norm of the *sum* of
    clipped gradients (Opacus / dp-accounting convention), so
    ``accounting.get_epsilon(sample_rate=q, noise_multiplier=z, steps=max_replies, delta=δ)`` certifies
    the noise of either mode. ``epsilon_certified`` is that ε in accountant mode and ``None`` in paper
    mode, whose constant c₂ is not known (L222). ``effective_c2`` = zε/(q√(R ln(1/δ))) is the c₂ that
    Eq. (5) would need to give this σ. In paper mode the hypothesis "c2 is a proven constant" always fails, so
    the result is marked "no guarantee" (errata Z-7, Z-8 in ``notes``).
    """

    std: float
    noise_multiplier: float
    replies: float
    max_replies: int
    sample_rate: float
    epsilon: float
    delta: float
    epsilon_certified: float | None
    effective_c2: float
    mode: str
    accountant: str | None
    selection: str
    variant: str
    notes: tuple[str, ...]
    neighboring_relation: str = GAUSSIAN_RELATION
    sampling: str = GAUSSIAN_SAMPLING
    source: str = cite("zhou", "Theorem 2, Eq. (5)", "L222-224")

    @property
    def variance(self) -> float:
        """Per-coordinate variance σ_i²."""
        return self.std**2


def _gaussian_inputs(rounds, clients_per_round, num_clients, client_size, epsilon, delta, clipping_norm,
                     sample_rate, selection):
    selection = check_choice("selection", selection, SELECTIONS)
    t, b, n = _check_schedule(rounds, clients_per_round, num_clients)
    return (t, b, n, check_real("client_size", client_size, low=0.0, low_open=True),
            check_real("epsilon", epsilon, low=0.0, low_open=True),
            check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True),
            check_real("clipping_norm", clipping_norm, low=0.0, low_open=True),
            check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True), selection)


def _effective_c2(noise_multiplier: float, epsilon: float, delta: float, sample_rate: float, replies: float) -> float:
    if replies <= 0:
        return 0.0
    return noise_multiplier * epsilon / (sample_rate * math.sqrt(replies * math.log(1.0 / delta)))


def gaussian_noise(*, rounds: int, clients_per_round: int, num_clients: int, client_size: float, epsilon: float,
                   delta: float, clipping_norm: float, sample_rate: float, c2: float, c1: float | None = None,
                   selection: str = "round_robin", variant: str = "corrected") -> GaussianNoise:
    """σ_i² = c₂²ξ₂² R ln(1/δ_i)/(d_i² ε_i²), Eq. (5) with R = bT/N replies (Theorem 2, zhou L222-224).

    The paper never gives c₁, c₂ (erratum Z-7): this σ certifies nothing by itself, which the
    hypothesis "c2 is a proven constant" reports as failing; prefer :func:`gaussian_noise_accountant`,
    or certify this σ with ``accounting.get_epsilon`` on ``noise_multiplier``. With ``c1`` the
    precondition ε_i < c₁q²T (L222) and its per-reply form ε_i < c₁q²R are checked (erratum Z-8).
    ``variant`` and ``selection`` choose R as in :func:`laplace_noise`. ``clipping_norm`` is ξ₂, the L2
    bound on every per-example gradient (A2, L218).
    """
    variant = _check_variant(variant)
    t, b, n, d_i, epsilon, delta, xi, q, selection = _gaussian_inputs(
        rounds, clients_per_round, num_clients, client_size, epsilon, delta, clipping_norm, sample_rate, selection)
    c2 = check_real("c2", c2, low=0.0, low_open=True)
    replies, max_replies = _calibration_replies(t, b, n, selection, variant)
    std = c2 * xi * math.sqrt(replies * math.log(1.0 / delta)) / (d_i * epsilon)
    z = std * q * d_i / xi
    checks = [_replies_hypothesis(replies, max_replies, selection),
              Hypothesis("c2 is a proven constant of Theorem 2", False,
                         f"c2 = {c2:g} is assumed: the paper gives no value of c1, c2", "L222")]
    if c1 is None:
        checks.append(Hypothesis("epsilon < c1 q^2 T", False, "c1 unknown: cannot be checked", "L222"))
    else:
        c1 = check_real("c1", c1, low=0.0, low_open=True)
        checks += [hypothesis("epsilon < c1 q^2 T", epsilon, "<", c1 * q * q * t, "L222"),
                   hypothesis("epsilon < c1 q^2 R (per-reply count)", epsilon, "<", c1 * q * q * replies, "L222")]
    checks.append(hypothesis("q < 1", q, "<", 1.0, "L222"))
    return GaussianNoise(std=std, noise_multiplier=z, replies=replies, max_replies=max_replies, sample_rate=q,
                         epsilon=epsilon, delta=delta, epsilon_certified=None, effective_c2=c2, mode="paper",
                         accountant=None, selection=selection, variant=variant, hypotheses=tuple(checks),
                         notes=("Z-7: the paper gives no value of c1, c2: this sigma certifies nothing by itself",
                                "Z-8: the precondition epsilon < c1 q^2 T is checked only when c1 is given"))


def gaussian_noise_accountant(*, rounds: int, clients_per_round: int, num_clients: int, client_size: float,
                              epsilon: float, delta: float, clipping_norm: float, sample_rate: float,
                              accountant: str = "pld", selection: str = "round_robin") -> GaussianNoise:
    """The recommended σ_i: the smallest noise multiplier whose accountant ε over the replies is ≤ ε_i.

    z = ``accounting.calibrate_noise_multiplier`` at steps = the most replies a client can make
    (⌈bT/N⌉ under round robin, T under uniform selection), sampling rate q, δ_i; σ_i = zξ₂/(q d_i).
    Poisson sampling of the local examples, add/remove-one neighbours (module docstring). The authors'
    code does the same with TF-Privacy's RDP accountant and ⌈bT/N⌉ steps (spec §9); the paper's Eq. (5)
    scaling σ_i ∝ √(bT) does not hold (spec §5.5 d; erratum Z-7). ``epsilon_certified`` ≤ ``epsilon``.
    """
    t, b, n, d_i, epsilon, delta, xi, q, selection = _gaussian_inputs(
        rounds, clients_per_round, num_clients, client_size, epsilon, delta, clipping_norm, sample_rate, selection)
    accountant = check_choice("accountant", accountant, accounting.ACCOUNTANTS)
    max_replies = _max_replies(t, b, n, selection)
    if max_replies == 0:
        z, certified, used, method = 0.0, 0.0, accountant, "no replies, no noise"
    else:
        result = accounting.calibrate_noise_multiplier(target_epsilon=epsilon, target_delta=delta, sample_rate=q,
                                                       steps=max_replies, accountant=accountant)
        z, certified, used, method = result.value, result.epsilon, result.accountant, result.source
    return GaussianNoise(std=z * xi / (q * d_i), noise_multiplier=z, replies=float(max_replies),
                         max_replies=max_replies, sample_rate=q, epsilon=epsilon, delta=delta,
                         epsilon_certified=certified, effective_c2=_effective_c2(z, epsilon, delta, q, max_replies),
                         mode="accountant", accountant=used, selection=selection, variant="corrected",
                         hypotheses=(_replies_hypothesis(float(max_replies), max_replies, selection),),
                         notes=("Z-7: Eq. (5) with unknown c2 replaced by the accountant's calibration",),
                         source=f"{cite('zhou', 'Eq. (5) replaced by accountant calibration', 'L222-224')} ({method})")


# --------------------------------------------------------------------------------------------
# Aggregated noise (Propositions 1-2) and the bound of Theorems 3-4
# --------------------------------------------------------------------------------------------

def aggregated_noise_variance(*, problem: Problem, variances: Sequence[float], clients_per_round: int,
                              step_size: float = 1.0) -> float:
    """E‖w_t^b‖² = η_t²(N/b)(p/d²) Σ_i d_i² v_i over uniformly selected b-subsets (zhou L178-182, L601-605).

    ``variances`` are the per-coordinate noise variances v_i of the N clients (``noise.variance``).
    Laplace noise of Theorem 1 (v_i = 2s_i²) gives Proposition 1, 8η²pbT²ξ₁²/(Nd²)·Σ 1/ε_i² (L210);
    Gaussian noise of Eq. (5) (v_i = σ_i²) gives Proposition 2, c₂²η²pTξ₂²/d²·Σ ln(1/δ_i)/ε_i² (L230).
    The d_i cancel in both, so neither needs equal data set sizes.
    """
    n = problem.num_clients
    b = check_int("clients_per_round", clients_per_round, low=1, high=n)
    eta = check_real("step_size", step_size, low=0.0)
    v = _per_client("variances", variances, n, low=0.0)
    sizes = np.asarray(problem.client_sizes)
    return float(eta**2 * (n / b) * problem.model_dim / problem.total_size**2 * np.sum(sizes**2 * v))


@dataclass(frozen=True)
class BoundTerms(TheoremResult):
    """Theorem 3/4's bound on Y_T = E‖θ̄_T − θ*‖² split into its three terms (zhou L298, L401)."""

    optimisation: float  # 4ω₀/(μ²(T+γ)): client sampling (Lemma 2/4) and heterogeneity Γ
    initial: float  # γY₀/(T+γ)
    noise: float  # 4V/(μ²(T+γ)) = ω₁/(μ²(T+γ))
    source: str

    @property
    def total(self) -> float:
        """U(T, b) (L314, L412)."""
        return self.optimisation + self.initial + self.noise


def bound_terms(*, problem: Problem, rounds: int, clients_per_round: int, noise_variance: float,
                sample_rate: float = 1.0) -> BoundTerms:
    """U(T, b) = [(4/μ²)(ω₀(b) + V) + γY₀]/(T + γ): Theorem 3 (q = 1) or 4 (q < 1) at t = T.

    ω₀ = 2(N−b)G²/((N−1)b) + 2λΓ (L298), plus Σ d_iΛ_i²/(qd²) when q < 1 (ω'₀, L401);
    ``noise_variance`` V = E‖w_t^b‖²/η_t² from :func:`aggregated_noise_variance` at step size 1, so that
    ω₁ = 4V (Laplace, L298) or ω'₁ = 4V (Gaussian, L401). Any mechanism fits (Remark II, L423-427).
    T is the planned horizon: the noise is calibrated for it (spec §7 #28).
    """
    n = problem.num_clients
    t = check_real("rounds", rounds, low=0.0)
    b = check_real("clients_per_round", clients_per_round, low=1.0, high=float(n))
    v = check_real("noise_variance", noise_variance, low=0.0)
    q = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    mu, gamma, g2 = problem.strong_convexity, problem.gamma, problem.gradient_bound**2
    omega0 = 2.0 * (n - b) / (n - 1) * g2 / b + 2.0 * problem.smoothness * problem.heterogeneity
    if q < 1.0:
        sizes, stds = np.asarray(problem.client_sizes), np.asarray(problem.local_gradient_std)
        omega0 += float(np.sum(sizes * stds**2)) / (q * problem.total_size**2)
    scale = 4.0 / (mu**2 * (t + gamma))
    source = (cite("zhou", "Theorem 3", "L296-298") if q == 1.0
              else cite("zhou", "Theorem 4 (with Lemma 4 as in spec §3.4)", "L399-401"))
    return BoundTerms(optimisation=scale * omega0, initial=gamma * problem.initial_distance / (t + gamma),
                      noise=scale * v, hypotheses=problem.hypotheses, source=source)


# --------------------------------------------------------------------------------------------
# Laplace: U(T, b) = (C1/b + C2 b T² + C3)/(T + γ) and its optima (Sec. V-B, L312-367)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class LaplaceConstants(TheoremResult):
    """C₁, C₂, C₃ and γ of U(T, b) = (C₁/b + C₂bT² + C₃)/(T + γ) (zhou L354-356): Theorem 3's bound (L298) with
    Proposition 1's noise (L210), so ``hypotheses`` are Theorem 3's (d_1 = … = d_N, L250; erratum Z-14).

    C₁ = 8NG²/(μ²(N−1)), C₂ = 32pξ₁²Σ_i ε_i⁻²/(μ²Nd²), C₃ = γY₀ + (4/μ²)(2λΓ − 2G²/(N−1)).
    C₃ may be negative, but C₁/b + C₃ = A₁ + γY₀ ≥ 0 for every b ≤ N (L320). ``epsilon_eff`` =
    √(N/Σ ε_i⁻²) (= ε when all ε_i are equal) is needed only for :attr:`LaplaceRegime.critical_epsilon`; constants
    built by hand (fitted ones, spec §5.3) may leave it out, and then carry no hypotheses.
    """

    C1: float
    C2: float
    C3: float
    gamma: float
    num_clients: int
    epsilon_eff: float | None = None
    hypotheses: tuple[Hypothesis, ...] = ()
    source: str = cite("zhou", "U(T, b) of Theorem 3 with Proposition 1", "L354-356")
    notes: tuple[str, ...] = (Z15_NOTE,)

    def __post_init__(self) -> None:
        n = check_int("num_clients", self.num_clients, low=2)
        c1 = check_real("C1", self.C1, low=0.0)
        check_real("C2", self.C2, low=0.0, low_open=True)
        check_real("C3", self.C3, low=-c1 / n)  # C1/N + C3 ≥ 0
        check_real("gamma", self.gamma, low=0.0, low_open=True)
        if self.epsilon_eff is not None:
            check_real("epsilon_eff", self.epsilon_eff, low=0.0, low_open=True)


def laplace_constants(*, problem: Problem, epsilon, clipping_norm: float) -> LaplaceConstants:
    """C₁, C₂, C₃ of U(T, b) for the Laplace mechanism (L356), from Theorem 3 and Proposition 1.

    ``epsilon`` is ε_i (one number or one per client), ``clipping_norm`` ξ₁ (L1 bound, A1).
    """
    n = problem.num_clients
    eps = _per_client("epsilon", epsilon, n, low=0.0, low_open=True)
    xi = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    mu, g2, d = problem.strong_convexity, problem.gradient_bound**2, problem.total_size
    sum_inverse_squares = float(np.sum(eps**-2.0))
    c1 = 8.0 * n * g2 / (mu**2 * (n - 1))
    c2 = 32.0 * problem.model_dim * xi**2 * sum_inverse_squares / (mu**2 * n * d**2)
    c3 = (problem.gamma * problem.initial_distance
          + 4.0 / mu**2 * (2.0 * problem.smoothness * problem.heterogeneity - 2.0 * g2 / (n - 1)))
    c3 = max(c3, -c1 / n)  # = −C1/N exactly when Γ = Y₀ = 0; rounding must not cross it
    return LaplaceConstants(C1=c1, C2=c2, C3=c3, gamma=problem.gamma, num_clients=n,
                            epsilon_eff=math.sqrt(n / sum_inverse_squares), hypotheses=problem.hypotheses)


def _integer_replies(rounds, clients_per_round, num_clients: int):
    """⌈bT/N⌉ in exact integer arithmetic (arrays allowed)."""
    return -(-(np.asarray(rounds, dtype=np.int64) * np.asarray(clients_per_round, dtype=np.int64)) // num_clients)


def _laplace_values(constants: LaplaceConstants, rounds, clients_per_round, variant: str):
    """U(T, b) (vectorised). Paper: bT/N replies, C₂bT²; corrected: R = ⌈bT/N⌉, C₂(N²/b)R²."""
    c, n = constants, constants.num_clients
    t = np.asarray(rounds, dtype=float)
    b = np.asarray(clients_per_round, dtype=float)
    if variant == "paper":
        noise = c.C2 * b * t**2
    else:
        noise = c.C2 * n**2 / b * _integer_replies(rounds, clients_per_round, n).astype(float) ** 2
    return (c.C1 / b + noise + c.C3) / (t + c.gamma)


def _check_point(constants_n: int, rounds, clients_per_round, variant: str) -> tuple[float, float]:
    if variant == "paper":
        return (check_real("rounds", rounds, low=0.0),
                check_real("clients_per_round", clients_per_round, low=1.0, high=float(constants_n)))
    return (float(check_int("rounds", rounds, low=0)),
            float(check_int("clients_per_round", clients_per_round, low=1, high=constants_n)))


def laplace_bound(*, constants: LaplaceConstants, rounds: float, clients_per_round: float,
                  variant: str = "corrected") -> float:
    """U(T, b) = (C₁/b + C₂bT² + C₃)/(T + γ) (zhou L354), Theorem 3's bound on Y_T (L298).

    ``variant="paper"`` is the printed expression, for real T ≥ 0 and b ∈ [1, N]. ``"corrected"``
    takes integer T and b and the noise of ⌈bT/N⌉ replies (erratum Z-1): C₂bT² becomes C₂(N²/b)⌈bT/N⌉²,
    equal to the printed value when N divides bT and larger otherwise.
    """
    variant = _check_variant(variant)
    t, b = _check_point(constants.num_clients, rounds, clients_per_round, variant)
    if variant == "corrected":
        t, b = int(t), int(b)
    return float(_laplace_values(constants, t, b, variant))


def _rounds_star(constants: LaplaceConstants, clients_per_round):
    """Eq. (6) in C-form: T*(b) = √(γ² + (C₁/b + C₃)/(C₂b)) − γ (L322, L364), vectorised, ≥ 0."""
    c, b = constants, np.asarray(clients_per_round, dtype=float)
    numerator = np.maximum(c.C1 / b + c.C3, 0.0)
    return np.sqrt(c.gamma**2 + numerator / (c.C2 * b)) - c.gamma


def _best_rounds(constants: LaplaceConstants, clients_per_round: int, max_rounds: float,
                 variant: str) -> tuple[int, float]:
    """Integer T ∈ [0, max_rounds] minimising U(·, b), and U there (exact).

    Paper variant: U(·, b) is convex, so the better of ⌊T*⌋ and ⌈T*⌉ (T* clipped) is exact (spec D4).
    Corrected: on each block of T with ⌈bT/N⌉ = k the numerator is constant, so the block's best T is its
    largest, T_k = ⌊kN/b⌋ (or max_rounds); g(k) = (a + ck²)/(kN/b + γ) ≤ U(T_k) is convex in k with its
    minimum at bT*/N, so the search walks outwards from there and stops once g exceeds the best U found.
    """
    b, n = clients_per_round, constants.num_clients
    t_star = float(_rounds_star(constants, b))
    if variant == "paper":
        clipped = min(t_star, max_rounds)
        candidates = sorted({math.floor(clipped), min(math.ceil(clipped), max_rounds)})
        values = [float(_laplace_values(constants, t, b, variant)) for t in candidates]
        index = int(np.argmin(values))
        return int(candidates[index]), values[index]
    a, c = constants.C1 / b + constants.C3, constants.C2 * n * n / b
    k_last = math.inf if max_rounds == math.inf else -(-int(max_rounds) * b // n)
    k_centre = t_star * b / n

    def value(k: int) -> tuple[float, int]:
        # U itself, summed as everywhere else: C₁/b + C₃ can cancel to ~1e-4 of either term, and a different
        # summation order then differs from bound_paper by ~1e-12 relative at the same T
        t = k * n // b if max_rounds == math.inf else min(k * n // b, int(max_rounds))
        return float(_laplace_values(constants, t, b, variant)), t

    def lower(k: int) -> float:
        return (a + c * k * k) / (k * n / b + constants.gamma)

    best_value, best_t = math.inf, 0
    start = int(min(math.floor(k_centre), k_last))
    for direction, first in ((-1, start), (1, start + 1)):
        k = first
        while 0 <= k <= k_last:
            if (k - k_centre) * direction > 0 and lower(k) >= best_value:
                break
            candidate, t = value(k)
            if candidate < best_value or (candidate == best_value and t < best_t):
                best_value, best_t = candidate, t
            k += direction
    paper_t = math.floor(min(t_star, max_rounds))  # never worse than the paper's rounding, even by one ulp
    paper_value = float(_laplace_values(constants, paper_t, b, variant))
    if paper_value < best_value or (paper_value == best_value and paper_t < best_t):
        best_value, best_t = paper_value, paper_t
    return best_t, best_value


@dataclass(frozen=True, kw_only=True)
class _IntegerOptimum(TheoremResult):
    """One of T, b optimised with the other fixed: the continuous optimum, the paper's rounding of it and the
    exact integer optimum, each with the variant's bound U; ``hypotheses`` are the constants' (Theorem 3's)."""

    continuous: float
    paper: int
    best: int
    bound_paper: float
    bound_best: float
    variant: str
    hypotheses: tuple[Hypothesis, ...] = ()
    notes: tuple[str, ...] = (Z9_NOTE,)


@dataclass(frozen=True, kw_only=True)
class RoundsChoice(_IntegerOptimum):
    """T for a fixed b: Eq. (6), the paper's ⌊T*⌋ and the exact integer optimum (zhou L316-322)."""

    clients_per_round: int
    source: str = cite("zhou", "Eq. (6) (rounding: floor, Table I L467)", "L316-322")


def optimal_rounds(*, constants: LaplaceConstants, clients_per_round: int, max_rounds: float = math.inf,
                   variant: str = "corrected") -> RoundsChoice:
    """T*(b) = √(γ² + (A₁ + γY₀)/A₂) − γ (Eq. (6), L322), clipped to [0, max_rounds], and its integers.

    ``paper`` is ⌊T*⌋ (the rounding Table I needs, erratum Z-9); ``best`` the integer T minimising the
    variant's U(·, b) exactly; both bounds are the variant's U. T*(b) → 0 as every ε_i → 0 (L326).
    """
    variant = _check_variant(variant)
    b = check_int("clients_per_round", clients_per_round, low=1, high=constants.num_clients)
    max_rounds = _check_max_rounds(max_rounds)
    continuous = min(float(_rounds_star(constants, b)), max_rounds)
    paper = math.floor(continuous)
    best, bound_best = _best_rounds(constants, b, max_rounds, variant)
    return RoundsChoice(clients_per_round=b, continuous=continuous, paper=paper, best=best,
                        bound_paper=float(_laplace_values(constants, paper, b, variant)), bound_best=bound_best,
                        variant=variant, hypotheses=constants.hypotheses)


@dataclass(frozen=True, kw_only=True)
class ClientsChoice(_IntegerOptimum):
    """b for a fixed T: L336's b*, the paper's ⌈b*⌉ and the exact integer optimum, all in [1, N]."""

    rounds: int
    source: str = cite("zhou", "b* of U(T, b) (rounding: ceil, Table I L467)", "L330-336")
    notes: tuple[str, ...] = ("Z-3: b* = GNd/(2T xi_1 sqrt(p(N-1) sum eps^-2)) (printed 'Gnd')", Z9_NOTE)


def optimal_clients(*, constants: LaplaceConstants, rounds: int, variant: str = "corrected") -> ClientsChoice:
    """b*(T) = √(B₁/B₂) = √(C₁/C₂)/T = GNd/(2Tξ₁√(p(N−1)Σε_i⁻²)) (zhou L336; "Gnd" is GNd, erratum Z-3).

    ``continuous`` is L336 unclipped (∞ at T = 0); ``paper`` is ⌈b*⌉ clipped to [1, N] (the paper clips
    nothing, the authors' code rounds up); ``best`` the integer b ∈ [1, N] minimising the variant's U(T, ·)
    (all N values are compared in the corrected variant, where U is not convex in b).
    """
    variant = _check_variant(variant)
    t = check_int("rounds", rounds, low=0)
    n = constants.num_clients
    continuous = math.inf if t == 0 else math.sqrt(constants.C1 / constants.C2) / t
    paper = int(min(max(math.ceil(continuous), 1), n)) if math.isfinite(continuous) else n
    if variant == "paper":
        clipped = min(max(continuous, 1.0), float(n))
        candidates = np.array(sorted({math.floor(clipped), math.ceil(clipped)}))
    else:
        candidates = np.arange(1, n + 1)
    values = _laplace_values(constants, np.full(candidates.shape, t), candidates, variant)
    index = int(np.argmin(values))
    return ClientsChoice(rounds=t, continuous=continuous, paper=paper, best=int(candidates[index]),
                         bound_paper=float(_laplace_values(constants, t, paper, variant)),
                         bound_best=float(values[index]), variant=variant, hypotheses=constants.hypotheses)


@dataclass(frozen=True, kw_only=True)
class LaplaceRegime(TheoremResult):
    """The continuous joint optimum of U over T ≥ 0, 1 ≤ b ≤ N (KKT solutions, zhou L358-367; spec D2).

    ``regime`` is "b*=1" when C₃ > 2γ√(C₁C₂) (``margin`` > 0), "b*=N" when C₃ < 2γ√(C₁C₂), and
    "knife-edge" when equal (then every point of bT = √(C₁/C₂) with b ∈ [1, N] is optimal; b = N, the
    fewest rounds, is reported). ``critical_epsilon``: scaling every ε_i by the same factor, b* = 1 iff
    ε_eff > ε_c = ε_eff·2γ√(C₁C₂)/C₃ (∞ when C₃ ≤ 0). ``candidates`` are the KKT Solutions 1-3 (L364-365)
    with their U. ``critical_epsilon`` is ``None`` only for hand-built constants without ``epsilon_eff``.
    """

    rounds: float
    clients_per_round: int
    bound: float
    regime: str
    margin: float
    critical_epsilon: float | None
    candidates: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    hypotheses: tuple[Hypothesis, ...] = ()
    variant: str = "paper"  # the continuous relaxation: bT/N replies
    source: str = cite("zhou", "KKT Solutions 1-3 (Appendix F L738-742; regime criterion spec D2)", "L358-367")
    notes: tuple[str, ...] = ("Z-4: b* = 1 iff C3 > 2 gamma sqrt(C1 C2), else b* = N (small epsilon pushes b* to N)",
                              "Z-5: Solution 3 (T* = 0) satisfies the KKT conditions only when C1/b + C3 = 0")


def laplace_regime(*, constants: LaplaceConstants) -> LaplaceRegime:
    """Which boundary b* takes, and T* = T*(b*) (Solutions 1 & 2, L364; spec D2).

    For fixed T, U is minimised at b = clip(m/T, 1, N), m = √(C₁/C₂); along bT = m,
    U = (2√(C₁C₂)T + C₃)/(T + γ), whose slope has the sign of 2γ√(C₁C₂) − C₃ (derived in
    :mod:`bounds.symbolic`). So the optimum is b* = 1 iff C₃ > 2γ√(C₁C₂), else b* = N — small ε makes C₂
    large and pushes b* to N, against the paper's reading at L364 (erratum Z-4). Solution 3 (T* = 0, L365)
    satisfies the KKT conditions only when C₁/b + C₃ = 0 (erratum Z-5); it is listed with its U.
    """
    c, n = constants, constants.num_clients
    product = math.sqrt(c.C1 * c.C2)
    margin = c.C3 - 2.0 * c.gamma * product
    candidates = {}
    for label, b in (("solution 1 (b=1)", 1), ("solution 2 (b=N)", n)):
        t = float(_rounds_star(c, b))
        candidates[label] = (float(b), t, float(_laplace_values(c, t, b, "paper")))
    candidates["solution 3 (T=0, b=N)"] = (float(n), 0.0, float(_laplace_values(c, 0.0, n, "paper")))
    regime = "b*=1" if margin > 0 else ("b*=N" if margin < 0 else "knife-edge")
    b_star = 1 if margin > 0 else n
    _, t_star, u_star = candidates["solution 1 (b=1)" if b_star == 1 else "solution 2 (b=N)"]
    critical = None
    if c.epsilon_eff is not None:
        critical = c.epsilon_eff * 2.0 * c.gamma * product / c.C3 if c.C3 > 0 else math.inf
    return LaplaceRegime(rounds=t_star, clients_per_round=b_star, bound=u_star, regime=regime, margin=margin,
                         critical_epsilon=critical, candidates=candidates, hypotheses=c.hypotheses)


@dataclass(frozen=True, kw_only=True)
class Choice(TheoremResult):
    """An integer schedule (T, b) with its bound U, the replies per client and how it was chosen.

    ``hypotheses`` are those of the theorem behind U (Theorem 3 or 4 via the constants); ``notes`` the errata
    touching the choice (by id), with the numbers where the choice depends on them.
    """

    rounds: float  # an integer, or math.inf (Gaussian "T* = ∞" without a cap)
    clients_per_round: int
    bound: float
    replies: float
    method: str
    variant: str
    notes: tuple[str, ...]
    hypotheses: tuple[Hypothesis, ...]
    source: str
    noise_multipliers: tuple[float, ...] = ()


def _replies_at(rounds: float, clients_per_round: int, num_clients: int, variant: str) -> float:
    if rounds == math.inf:
        return math.inf
    if variant == "paper":
        return rounds * clients_per_round / num_clients
    return float(_max_replies(int(rounds), clients_per_round, num_clients, "round_robin"))


def _laplace_notes(rounds: float, variant: str) -> tuple[str, ...]:
    """Z-1 for the corrected reply count, Z-5 when T = 0."""
    replies = ("Z-1: the noise of ceil(bT/N) replies (corrected)" if variant == "corrected" else
               "Z-1: the noise of bT/N replies as printed (a client may reply ceil(bT/N) times)")
    return (replies, Z5_NOTE) if rounds == 0 else (replies,)


def laplace_paper_choice(*, constants: LaplaceConstants, max_rounds: float = math.inf,
                         variant: str = "corrected") -> Choice:
    """The paper's rule: b ∈ {1, N} at T = ⌊T*(b)⌋, the one with the smaller U (L364-367, Table I).

    This is what the authors' code does (spec §9) and reproduces Table I. Near the regime switch it
    can pick the wrong b (MNIST-fitted, ε = 0.5: (b, T) = (1, 10) against the optimum (10, 1); spec D4,
    erratum Z-6); :func:`laplace_exact_choice` never does worse.
    """
    variant = _check_variant(variant)
    max_rounds = _check_max_rounds(max_rounds)
    n = constants.num_clients
    options = []
    for b in (1, n):
        t = math.floor(min(float(_rounds_star(constants, b)), max_rounds))
        options.append((float(_laplace_values(constants, t, b, variant)), b, t))
    bound, b, t = min(options)
    return Choice(rounds=t, clients_per_round=b, bound=bound, replies=_replies_at(t, b, n, variant),
                  method="paper rule: b in {1, N}, T = floor(T*(b))", variant=variant,
                  notes=(*_laplace_notes(t, variant), Z9_NOTE), hypotheses=constants.hypotheses,
                  source=cite("zhou", "Solutions 1-3 (floor as in Table I)", "L364-367"))


def laplace_exact_choice(*, constants: LaplaceConstants, max_rounds: float = math.inf,
                         variant: str = "corrected") -> Choice:
    """The integer (T, b), 0 ≤ T ≤ max_rounds, 1 ≤ b ≤ N, minimising the variant's U exactly (spec D4).

    For each b the exact integer T of :func:`optimal_rounds` (O(1) per b), then the best b: O(N).
    The paper rule's point is one of the candidates, so this is never worse than
    :func:`laplace_paper_choice`. With tiny T* an interior b can win (FEMNIST-fitted, ε = 0.7: (7, 1)).
    Ties go to fewer replies, then fewer rounds.
    """
    variant = _check_variant(variant)
    max_rounds = _check_max_rounds(max_rounds)
    n = constants.num_clients
    options = []
    for b in range(1, n + 1):
        t, value = _best_rounds(constants, b, max_rounds, variant)
        options.append((value, b * t, t, b))
    _, _, t, b = min(options)
    bound = float(_laplace_values(constants, t, b, variant))  # as the paper rule computes it: comparable to the bit
    notes = _laplace_notes(t, variant)
    paper = laplace_paper_choice(constants=constants, max_rounds=max_rounds, variant=variant)
    if (paper.rounds, paper.clients_per_round) != (t, b):
        notes += (f"Z-6: the paper rule picks (T, b) = ({paper.rounds}, {paper.clients_per_round}) with U = "
                  f"{paper.bound:.6g} > {bound:.6g}",)
    return Choice(rounds=t, clients_per_round=b, bound=bound, replies=_replies_at(t, b, n, variant),
                  method="exact integer optimum over b = 1..N", variant=variant, notes=notes,
                  hypotheses=constants.hypotheses,
                  source=cite("zhou", "U(T, b) of Theorem 3, exact integer search (spec D4)", "L354"))


# --------------------------------------------------------------------------------------------
# Gaussian: U(T, b) = (E1/b + E2)/(T + γ) + E3 (Sec. VI-B, L410-425)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class GaussianConstants(TheoremResult):
    """E₁, E₂, E₃ and γ of U(T, b) = E₁/(b(T+γ)) + E₂/(T+γ) + E₃ (zhou L414): Theorem 4's bound (L401) with
    Proposition 2's noise (L230); ``hypotheses`` are Theorem 4's and Eq. (5)'s ("c2 is a proven constant" fails:
    the paper gives no c₂, erratum Z-7), so :func:`gaussian_constants` is never a guarantee.

    E₁ = 8G²N/(μ²(N−1)); E₃ = (4/μ²)K with K = c₂²pξ₂²Σ_i ln(1/δ_i)/ε_i²/d² (the T → ∞ limit of U,
    L405, footnote 6 L425); E₂ = (4/μ²)(−2G²/(N−1) + Σ_i d_iΛ_i²/(qd²) + 2λΓ) + γY₀ − γE₃.
    """

    E1: float
    E2: float
    E3: float
    gamma: float
    num_clients: int
    hypotheses: tuple[Hypothesis, ...] = ()
    source: str = cite("zhou", "U(T, b) of Theorem 4 with Proposition 2", "L410-414")
    notes: tuple[str, ...] = ("Z-7: the paper gives no value of c2: E3 assumes one",
                              "Z-12: gamma = 2 lambda/mu and the Gaussian mechanism in Theorem 4 (printed: 2 Delta/mu, "
                              "Laplace)")


def _gaussian_sampling_term(problem: Problem, sample_rate: float) -> float:
    sizes, stds = np.asarray(problem.client_sizes), np.asarray(problem.local_gradient_std)
    return float(np.sum(sizes * stds**2)) / (sample_rate * problem.total_size**2)


def _gaussian_e1_e2_without_noise(problem: Problem, sample_rate: float) -> tuple[float, float]:
    n, mu, g2 = problem.num_clients, problem.strong_convexity, problem.gradient_bound**2
    e1 = 8.0 * g2 * n / (mu**2 * (n - 1))
    e2 = (4.0 / mu**2 * (-2.0 * g2 / (n - 1) + _gaussian_sampling_term(problem, sample_rate)
                         + 2.0 * problem.smoothness * problem.heterogeneity)
          + problem.gamma * problem.initial_distance)
    return e1, e2


def gaussian_constants(*, problem: Problem, epsilon, delta, clipping_norm: float, sample_rate: float,
                       c2: float) -> GaussianConstants:
    """E₁, E₂, E₃ of the Gaussian U(T, b) (L414) from Theorem 4 (L401) and Proposition 2 (L230).

    ``epsilon``, ``delta`` are ε_i, δ_i (one number or one per client), ``clipping_norm`` ξ₂ (A2),
    ``sample_rate`` q ∈ (0, 1), ``c2`` the unknown constant of Eq. (5) (erratum Z-7; the hypotheses
    say so). For certified noise use :func:`gaussian_accountant_choice`.
    """
    n = problem.num_clients
    eps = _per_client("epsilon", epsilon, n, low=0.0, low_open=True)
    deltas = _per_client("delta", delta, n, low=0.0, high=1.0, low_open=True, high_open=True)
    xi = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    q = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    c2 = check_real("c2", c2, low=0.0, low_open=True)
    k = c2**2 * problem.model_dim * xi**2 * float(np.sum(np.log(1.0 / deltas) / eps**2)) / problem.total_size**2
    e1, e2 = _gaussian_e1_e2_without_noise(problem, q)
    e3 = 4.0 / problem.strong_convexity**2 * k
    checks = (*problem.hypotheses, hypothesis("q < 1", q, "<", 1.0, "L222"),
              Hypothesis("c2 is a proven constant of Theorem 2", False,
                         f"c2 = {c2:g} is assumed: the paper gives no value", "L222"))
    return GaussianConstants(E1=e1, E2=e2 - problem.gamma * e3, E3=e3, gamma=problem.gamma, num_clients=n,
                             hypotheses=checks)


def gaussian_bound(*, constants: GaussianConstants, rounds: float, clients_per_round: float,
                   variant: str = "corrected") -> float:
    """U(T, b) = E₁/(b(T+γ)) + E₂/(T+γ) + E₃ (zhou L414), Theorem 4's bound on Y_T (L401).

    ``"corrected"`` takes integer T, b and the noise of ⌈bT/N⌉ replies: E₃T/(T+γ) becomes
    E₃(N/b)⌈bT/N⌉/(T+γ) (equal when N divides bT).
    """
    variant = _check_variant(variant)
    c, n = constants, constants.num_clients
    t, b = _check_point(n, rounds, clients_per_round, variant)
    if variant == "paper":
        return (c.E1 / b + c.E2) / (t + c.gamma) + c.E3
    replies = _max_replies(int(t), int(b), n, "round_robin")
    return (c.E1 / b + c.E2 + c.gamma * c.E3 + c.E3 * n / b * replies) / (t + c.gamma)


def gaussian_choice(*, constants: GaussianConstants, max_rounds: float = math.inf) -> Choice:
    """The Gaussian optimum: b* = N, and T* = T_max if E₁/N + E₂ > 0, else T* = 0 (L418-419; spec D5).

    ∂U/∂T = −(E₁/b + E₂)/(T+γ)², so U is monotone in T and b = N minimises E₁/b. Solution 1 (L418):
    "T* = ∞", reported as ``max_rounds`` (U → E₃ when it is ∞); Solution 2 (L419): T* = 0, with b = N
    (the paper leaves b unstated, erratum Z-11). When E₁/N + E₂ = 0 U does not depend on T; T = 0 is
    reported. For integer T the corrected ⌈bT/N⌉ noise changes nothing at b = N.
    """
    max_rounds = _check_max_rounds(max_rounds)
    c, n = constants, constants.num_clients
    slope = c.E1 / n + c.E2
    if slope > 0:
        t, note = max_rounds, "Z-11: E1/N + E2 > 0: run as many rounds as allowed (Solution 1, L418)"
    else:
        t = 0
        note = ("Z-11: E1/N + E2 < 0: the noise outweighs every round (Solution 2, L419)" if slope < 0
                else "Z-11: E1/N + E2 = 0: U does not depend on T")
    bound = c.E3 if t == math.inf else (c.E1 / n + c.E2) / (t + c.gamma) + c.E3
    return Choice(rounds=t, clients_per_round=n, bound=bound, replies=float(t), method="sign of E1/N + E2",
                  variant="corrected", notes=(note, *c.notes), hypotheses=c.hypotheses,
                  source=cite("zhou", "Solutions 1-2 of Theorem 4's U (spec D5)", "L416-421"))


def gaussian_accountant_choice(*, problem: Problem, epsilon, delta, clipping_norm: float, sample_rate: float,
                               max_rounds: int, accountant: str = "rdp") -> Choice:
    """The integer (T, b) minimising Theorem 4's U with accountant-calibrated noise (spec §4.4 B).

    Each client's noise multiplier z_i(R) is calibrated for R = ⌈bT/N⌉ replies (Poisson sampling at rate
    q, add/remove-one, δ_i; :func:`gaussian_noise_accountant`), σ_i = z_iξ₂/(qd_i), and
    V = (N/b)pξ₂²Σz_i²/(q²d²) enters :func:`bound_terms`. For fixed R the numerator of U is fixed, so
    for each b only the largest T with ⌈bT/N⌉ = R (T = ⌊RN/b⌋ or ``max_rounds``) is a candidate: one
    calibration per R ≤ ``max_rounds`` (RDP ≈ 5 ms each, PLD far slower — hence the RDP default).
    """
    n = problem.num_clients
    eps = _per_client("epsilon", epsilon, n, low=0.0, low_open=True)
    deltas = _per_client("delta", delta, n, low=0.0, high=1.0, low_open=True, high_open=True)
    xi = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    q = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    t_max = check_int("max_rounds", max_rounds, low=0, high=accounting.MAX_STEPS)
    accountant = check_choice("accountant", accountant, accounting.ACCOUNTANTS)
    smallest = 1e-150 / problem.total_size  # below it (q N)² underflows to 0 and the noise unit is infinite
    if q < smallest:
        raise ValueError(f"sample_rate must be in [{smallest:.3g}, 1] for {problem.total_size:g} examples; got {q!r}")
    e1, e2 = _gaussian_e1_e2_without_noise(problem, q)
    noise_unit = 4.0 / problem.strong_convexity**2 * problem.model_dim * xi**2 / (q * problem.total_size) ** 2
    pairs = sorted(set(zip(eps.tolist(), deltas.tolist(), strict=True)))
    b_all = np.arange(1, n + 1)
    best = ((e1 / n + e2) / problem.gamma, 0, 0, n, ())  # T = 0: no reply, no noise
    for replies in range(1, t_max + 1):
        z_of = {pair: accounting.calibrate_noise_multiplier(target_epsilon=pair[0], target_delta=pair[1],
                                                            sample_rate=q, steps=replies, accountant=accountant).value
                for pair in pairs}
        z = tuple(z_of[pair] for pair in zip(eps.tolist(), deltas.tolist(), strict=True))
        rounds = np.minimum(replies * n // b_all, t_max)
        valid = _integer_replies(rounds, b_all, n) == replies
        values = (e1 / b_all + e2 + noise_unit * n / b_all * sum(value**2 for value in z)) / (rounds + problem.gamma)
        for index in np.flatnonzero(valid):
            option = (float(values[index]), int(b_all[index]) * int(rounds[index]), int(rounds[index]),
                      int(b_all[index]), z)
            if option[:3] < best[:3]:
                best = option
        # No larger R can win: its noise multipliers are at least these (ε of R' ≥ R replies is larger at the same
        # σ; the slack on z² covers the calibration's 6 digits, and for PLD its relative tolerance on ε, twice over)
        # and its T at most t_max, so with a positive numerator its U is at least this floor. At target ε = 1e-9
        # this ends the search at R = 1 (was 200 calibrations, 28 s).
        slack = 1e-4 if accountant == "rdp" else 1e-4 + 4 * pld.DEFAULT_RELATIVE_TOLERANCE
        floor = e1 / b_all + e2 + noise_unit * n / b_all * sum(value**2 for value in z) * (1 - slack)
        if np.all(floor > 0) and float(np.min(floor)) / (t_max + problem.gamma) >= best[0]:
            break
    bound, _, t, b, z = best
    checks = (*problem.hypotheses, Hypothesis("Poisson sampling of local examples at rate q", True,
                                              f"q = {q:g}; the paper's fixed q fraction (L160) is not covered",
                                              "L160, L222"))
    return Choice(rounds=t, clients_per_round=b, bound=bound, replies=float(_max_replies(t, b, n, "round_robin")),
                  method=f"exhaustive over T <= {t_max}, b = 1..N with {accountant.upper()}-calibrated noise",
                  variant="corrected", hypotheses=checks, noise_multipliers=z,
                  notes=("Z-7: Eq. (5) with unknown c2 replaced by the accountant's calibration",
                         "Z-13: Poisson sampling of the local examples at rate q, add/remove-one"),
                  source=cite("zhou", "Theorem 4 with accountant noise (spec §4.4 B)", "L401"))
