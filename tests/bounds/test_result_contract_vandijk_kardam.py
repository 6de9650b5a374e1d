"""The result contract (tests/bounds/test_result_contract.py) walked over the rest of van Dijk et al. and Kardam.

van Dijk et al. (arXiv:2007.09208): r of (16), r0(σ), Theorem 3 on a realised sequence and the parameter selection;
Kardam (Damaskinos thesis, doi:10.5075/epfl-thesis-7096): the smallest T of Theorem 5, Remark 2's window of rates and
Theorem 1's band. Each is called on random inputs on both sides of its hypotheses; the test decides which hypotheses
fail with its own arithmetic from the papers' printed formulas (cited by line) and recomputes the values from them;
a printed number of the paper or the spec pins each function once more. Inputs outside a function's domain (no
finite r, no T reaching the target, n ≤ f) are refused by name.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fedplan.bounds import kardam
from fedplan.bounds import vandijk as v
from tests.bounds.test_result_contract import assert_contract

FAST = settings(max_examples=60, deadline=None)
E = math.e
#: (√3−1)/2 of r⋆ (L1305) and of Theorem 4's closed B (L193).
HALF_ROOT = (math.sqrt(3) - 1) / 2


def u_values(r0, sigma):
    """u0 = 2√(r0σ)/(σ−r0), u1 = 2e√(r0σ)/((σ−r0)σ) (vandijk L937)."""
    return 2 * math.sqrt(r0 * sigma) / (sigma - r0), 2 * E * math.sqrt(r0 * sigma) / ((sigma - r0) * sigma)


def r_of_16(r0, sigma):
    """r = r0·2³(1/(1−u0) + e³/σ³/(1−u1))·exp(3/σ²) (vandijk (16), L931-937)."""
    u0, u1 = u_values(r0, sigma)
    return r0 * 8 * (1 / (1 - u0) + E**3 / sigma**3 / (1 - u1)) * math.exp(3 / sigma**2)


def r_star(r0, sigma, p, gamma):
    """r⋆ = (√3−1)/2·(3p+1)/((p+1)(2p+1))·(1−r0/σ)²/(1+γ)^{2p} (vandijk L1305)."""
    return HALF_ROOT * (3 * p + 1) / ((p + 1) * (2 * p + 1)) * (1 - r0 / sigma) ** 2 / (1 + gamma) ** (2 * p)


def notes_ids(result):
    return {note.split(":")[0] for note in result.notes}


# ---------------------------------------------------------------- van Dijk: r of (16)

@given(sigma=st.floats(0.1, 200), share=st.floats(1e-6, 0.6), footnote=st.booleans())
@FAST
def test_r_constant(sigma, share, footnote):
    r0 = share * sigma
    u0, u1 = u_values(r0, sigma)
    if u0 >= 1 or u1 >= 1:  # the geometric series behind r diverge: no finite r (L937)
        with pytest.raises(ValueError, match=rf"r0 must be a real number in \(0, .*\) at sigma = {sigma:g}"):
            v.r_constant(r0=r0, sigma=sigma, rigorous_footnote=footnote)
        return
    result = v.r_constant(r0=r0, sigma=sigma, rigorous_footnote=footnote)
    assert_contract(result, result.r, expect_valid=r0 <= 1 / E)  # r0 ≤ 1/e, L929 (erratum I-15)
    factor = 2 + r0 / (sigma - r0) if footnote else 1.0  # footnote ††, L939
    assert result.r == pytest.approx(r_of_16(r0, sigma) * factor, rel=1e-12)
    assert (result.u0, result.u1) == pytest.approx((u0, u1), rel=1e-12)
    assert notes_ids(result) == {"I-15"} and "(16)" in result.source


def test_r_constant_printed_example_3_and_a_large_r0_without_guarantee():
    printed = v.r_constant(r0=1 / E, sigma=8)  # Example 3, L1633
    assert_contract(printed, printed.r, expect_valid=True)
    assert (printed.u0, printed.u1, printed.r) == pytest.approx((0.4495546831835495, 0.15275204077456322,
                                                                 5.7460446671129635), rel=1e-12)
    large = v.r_constant(r0=0.5, sigma=100)  # u0 = 2√50/99.5 = 0.142 < 1, but r0 > 1/e
    data = assert_contract(large, large.r, expect_valid=False)
    assert [h["detail"] for h in data["hypotheses"] if not h["holds"]] == ["0.5 <= 0.367879"]


@pytest.mark.parametrize("sigma", [0.1, 1.0, v.SIGMA_MIN, 8.0, 1e3])
def test_r0_limit_is_where_u0_or_u1_reaches_one(sigma):
    """The limit solves max(u0, u1) = 1 (brentq on the printed u's, L937); just below it r is finite."""
    from scipy.optimize import brentq

    limit = brentq(lambda r0: max(u_values(r0, sigma)) - 1, 1e-300, sigma * (1 - 1e-12), xtol=1e-300, rtol=1e-14)
    assert v.r0_limit(sigma=sigma) == pytest.approx(limit, rel=1e-12)
    below = v.r_constant(r0=limit * (1 - 1e-9), sigma=sigma)
    assert math.isfinite(below.r) and max(below.u0, below.u1) < 1
    with pytest.raises(ValueError, match="u0 = 2 sqrt"):
        v.r_constant(r0=limit * (1 + 1e-9), sigma=sigma)


# ---------------------------------------------------------------- van Dijk: r0(σ)

@given(sigma=st.one_of(st.floats(0.1, 1.2), st.floats(1.2, 500)), p=st.floats(0, 10), gamma=st.floats(0, 2))
@FAST
def test_r0_of_sigma(sigma, p, gamma):
    result = v.r0_of_sigma(sigma=sigma, p=p, gamma=gamma)
    r0 = result.r0
    u0, u1 = u_values(r0, sigma)
    valid = sigma >= 1.137 and r0 <= 1 / E and u0 < 1 and u1 < 1  # L1339, (16) L929-937
    assert_contract(result, r0, expect_valid=valid)
    # the fixed point of L1333: r0·R(r0) = r⋆(r0); f(r0) = r0 R(r0) − r⋆(r0) increases, so the root is unique
    assert r_of_16(r0, sigma) == pytest.approx(r_star(r0, sigma, p, gamma), rel=1e-12)
    assert result.r == pytest.approx(r_of_16(r0, sigma), rel=1e-12)
    assert notes_ids(result) == {"I-15", "I-26", "I-27"}


def test_r0_of_sigma_printed_and_below_the_papers_threshold():
    printed = v.r0_of_sigma(sigma=3)
    assert_contract(printed, printed.r0, expect_valid=True)
    assert round(printed.r0, 4) == 0.0110  # L1341
    for sigma in (1.1366, 1.0, 0.1):  # 1.1366 lies between the exact threshold 1.13654 and the printed 1.137
        below = v.r0_of_sigma(sigma=sigma)
        data = assert_contract(below, below.r0, expect_valid=False)
        assert [(h["name"], h["holds"]) for h in data["hypotheses"]] == [
            ("sigma >= 1.137", False), ("r0 <= 1/e", True), ("u0 < 1", True), ("u1 < 1", True)]
    with pytest.raises(ValueError, match=r"sigma must be a real number in \[0.1, inf\); got 0.09"):
        v.r0_of_sigma(sigma=0.09)


# ---------------------------------------------------------------- van Dijk: Theorem 3 on a realised sequence

def theorem3_by_hand(sizes, n, sigma, epsilon, r0):
    """Theorem 3 (L177-185) with the proof's λ range (L1023-1025): (δ, c0, hypotheses that hold)."""
    s = np.asarray(sizes, dtype=float)
    s1, s2, s3 = (float(np.mean(s**j / (n * (n - s) ** (j - 1)))) for j in (1, 2, 3))
    rho, rho_hat, rounds = s1 * s3 / s2**2, s1**2 / s2, len(s)
    r = r_of_16(r0, sigma)
    x = epsilon / (rounds * s1**2)
    c0 = min((math.sqrt(2 * r * rho * x + 1) - 1) / (r * rho * x), 2 / (rho_hat * x))  # c(x), L183
    delta = math.exp(-c0 * epsilon**2 * sigma**2 / (4 * s2 * rounds))
    lambda_max = min(math.floor(c0 * epsilon / (2 * rounds * s2 / sigma**2)) - 1, math.floor(sigma**2))
    u0, u1 = u_values(r0, sigma)
    holds = r0 <= 1 / E and u0 < 1 and u1 < 1 and int(s.max()) / n <= r0 / sigma and lambda_max >= 1
    return delta, c0, s2 * rounds, holds


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(100, 100_000), rounds=st.integers(1, 300),
       top=st.floats(0.0005, 0.3), sigma=st.floats(0.1, 20), epsilon=st.floats(0.01, 10),
       r0_share=st.one_of(st.none(), st.floats(0.2, 3)))
@FAST
def test_theorem3(seed, n, rounds, top, sigma, epsilon, r0_share):
    rng = np.random.default_rng(seed)
    sizes = np.sort(rng.integers(1, max(2, min(n - 1, round(top * n))) + 1, size=rounds))
    max_rate = sizes.max() / n
    r0 = None if r0_share is None else min(r0_share * sigma * max_rate, sigma / 2)
    used = sigma * max_rate if r0 is None else r0
    if max(u_values(used, sigma)) >= 1:  # no finite r of (16): refused, naming what the caller gave
        with pytest.raises(ValueError, match="sizes must keep" if r0 is None else "r0 must be a real number"):
            v.theorem3(sizes=sizes, client_size=n, sigma=sigma, epsilon=epsilon, delta=1e-6, r0=r0)
        return
    result = v.theorem3(sizes=sizes, client_size=n, sigma=sigma, epsilon=epsilon, delta=1e-6, r0=r0)
    delta, c0, s2_rounds, holds = theorem3_by_hand(sizes, n, sigma, epsilon, result.r0)
    assert result.r0 == (pytest.approx(used, rel=1e-15) if r0 is None else r0)
    assert_contract(result, result.delta, expect_valid=holds)
    assert result.delta == pytest.approx(delta, rel=1e-9, abs=1e-300)
    assert result.sigma_lower_bound == pytest.approx(2 / math.sqrt(c0) * math.sqrt(s2_rounds * math.log(1e6))
                                                     / epsilon, rel=1e-9)  # L185


def test_theorem3_on_example_3_proves_exp_minus_eps_sigma_squared_over_two():
    sizes = v.select_parameters(initial_size=16, client_size=10_000, grad_computations=25_000, p=1, epsilon=1,
                                sigma=8, r0=1 / E, variant="paper").sizes
    result = v.theorem3(sizes=sizes, client_size=10_000, sigma=8, epsilon=1)
    assert_contract(result, result.delta, expect_valid=True)
    assert result.delta == pytest.approx(math.exp(-32), rel=1e-12) and result.delta == pytest.approx(1.266e-14,
                                                                                                       rel=1e-3)
    small = v.theorem3(sizes=sizes, client_size=10_000, sigma=0.9, epsilon=1)  # λ ≤ σ² = 0.81: no order λ ≥ 1, L1025
    assert_contract(small, small.delta, expect_valid=False)
    assert not small.hypotheses[-1].holds and int(small.hypotheses[-1].detail.split(" = ")[1]) <= 0


# ---------------------------------------------------------------- van Dijk: the parameter selection (L211-219)

def realised_sizes(n, q, m, p, total):
    """s_i = ⌈N_c q (i+m)^p⌉ until Σ s_i ≥ K (L191, L1689), in plain Python."""
    sizes, done = [], 0
    while done < total:
        sizes.append(math.ceil(n * q * (len(sizes) + m) ** p - 1e-9))
        done += sizes[-1]
    return sizes


def factor_by_hand(sel, *, closed):
    """σ/𝓑: case 1 (29) L1113; case 2 (18) L1135 or, closed, (19) L1145; ×(1+γ)^{1/2} when corrected (I-22)."""
    p, gamma, alpha = sel.p, sel.gamma, sel.alpha
    if sel.case == 1:
        return (1 + gamma) ** (2 + 3 * p) / math.sqrt(1 - alpha)
    growth = max(sel.k_ratio, 1) ** ((1 + 2 * p) / (2 + 2 * p))
    if closed:
        jump = 1.21 if sel.variant == "paper" else 2 * math.sqrt(HALF_ROOT)
        factor = growth * jump / math.sqrt(1 - alpha) * (1 + gamma) ** (2 + 3 * p)
    else:
        factor = (growth * 2 / (1 - alpha) ** 1.5 * math.sqrt(sel.r * (p + 1) * (2 * p + 1) / (3 * p + 1))
                  * (1 + gamma) ** (2 * (1 + 2 * p)))
    return factor * (math.sqrt(1 + gamma) if sel.variant == "corrected" else 1)


def k_ratio_by_hand(sel, *, closed):
    """K/K⁺ with K⁺ = A ε^{(1+p)/(1+2p)} q^{−1/(1+2p)} N_c (L195), A closed (L1317) or general (27), L1279."""
    p, gamma, alpha = sel.p, sel.gamma, sel.alpha
    if closed:
        a = ((HALF_ROOT * (2 * p + 1)) ** ((1 + p) / (1 + 2 * p)) / (1 + p)
             * (1 + gamma) ** ((3 + 4 * p) * (1 + p) / (1 + 2 * p)))
    else:
        rho = (2 * p + 1) ** 2 / ((p + 1) * (3 * p + 1)) * (1 + gamma) ** (2 + 4 * p) / (1 - alpha) ** 2  # L1215
        a = (1 + gamma) ** (1 + p) * (p + 1) ** (1 / (1 + 2 * p)) * (sel.r * rho) ** ((1 + p) / (1 + 2 * p))
    k_plus = a * sel.epsilon ** ((1 + p) / (1 + 2 * p)) * sel.q ** (-1 / (1 + 2 * p)) * sel.client_size
    return sel.grad_computations / k_plus


@given(grad=st.floats(2e4, 2e6), p=st.sampled_from([0.5, 1.0, 2.0]), epsilon=st.floats(0.3, 8),
       sigma=st.floats(0.5, 30), r0=st.sampled_from(["r0(sigma)", 1 / E, 0.02, 0.3]), case=st.sampled_from([1, 2]),
       k=st.floats(1, 4), variant=st.sampled_from(["paper", "corrected"]))
@settings(max_examples=80, deadline=None)
def test_select_parameters(grad, p, epsilon, sigma, r0, case, k, variant):
    n = 10_000
    if r0 != "r0(sigma)" and max(u_values(r0, sigma)) >= 1:
        with pytest.raises(ValueError, match="r0 must be a real number in"):
            v.select_parameters(initial_size=16, client_size=n, grad_computations=grad, p=p, epsilon=epsilon,
                                sigma=sigma, r0=r0, case=case, k=k if case == 2 else 1.0, variant=variant)
        return
    try:
        sel = v.select_parameters(initial_size=16, client_size=n, grad_computations=grad, p=p, epsilon=epsilon,
                                  sigma=sigma, r0=r0, case=case, k=k if case == 2 else 1.0, variant=variant)
    except ValueError as error:  # the paper's "try a larger σ" (L211): no increasing schedule, said so
        assert "m/T iteration diverges" in str(error)
        assume(False)
    closed = variant == "paper" and (r0 == "r0(sigma)" or r0 <= (math.sqrt(3) - 1) / 16)  # L1335, erratum I-26
    sizes = realised_sizes(n, sel.q, sel.m, p, grad)
    assert list(sel.sizes) == sizes
    u0, u1 = u_values(sel.r0, sigma)
    valid = (sel.r0 <= 1 / E and u0 < 1 and u1 < 1  # (16), L929-937
             and max(sizes) / n <= sel.r0 / sigma  # L177, L1081
             and sel.passes[-1].gamma_in >= sel.m / len(sizes))  # L1077
    if r0 == "r0(sigma)":
        valid = valid and sigma >= 1.137  # L191
    if case == 2:
        assert sel.k_ratio == pytest.approx(k_ratio_by_hand(sel, closed=closed), rel=1e-9)
        bound_26 = HALF_ROOT * (3 * p + 1) / ((p + 1) * (2 * p + 1)) * (1 - sel.alpha) ** 2 / (1 + sel.gamma) ** (2 * p)
        valid = valid and sel.r >= bound_26 and sel.k_ratio >= 1  # (26) L1263, K ≥ K⁺ L1121
    assert_contract(sel, sel.delta, expect_valid=valid)
    assert sel.r == pytest.approx(r_of_16(sel.r0, sigma), rel=1e-12)
    assert sel.factor == pytest.approx(factor_by_hand(sel, closed=closed), rel=1e-12)
    assert sel.delta == pytest.approx(math.exp(-epsilon * (sigma / sel.factor) ** 2 / 2), rel=1e-9)  # L211
    expected_notes = {"I-20", "I-21, I-33", "I-26", "I-15", "I-41, I-42"} | ({"I-22"} if case == 2 else set())
    assert notes_ids(sel) == expected_notes and sel.variant == variant
    assert ("closed" in sel.source) is closed


def test_select_parameters_main_text_example_is_shown_without_guarantee():
    """Example 3 (L1625-1691, main text L221), paper variant: δ = 5.50e-8 as printed, but its γ = m/T of T = ⌈T_up⌉
    = 195 (0.0615 used for q) is below m/T of the 183 rounds the sequence runs (12.106/183 = 0.0662; erratum I-21,
    I-33); the corrected variant keeps every hypothesis."""
    common = dict(initial_size=16, client_size=10_000, grad_computations=25_000, p=1, epsilon=1, sigma=8, r0=1 / E)
    paper = v.select_parameters(**common, variant="paper")
    data = assert_contract(paper, paper.delta, expect_valid=False)
    assert paper.factor == pytest.approx(1.38361486085, abs=1e-11) and f"{paper.delta:.2e}" == "5.50e-08"
    assert [h["name"] for h in data["hypotheses"] if not h["holds"]] == ["gamma used for q >= m/T (realised T)"]
    assert len(paper.sizes) == 183 and paper.passes[-1].gamma_in < paper.m / 183
    corrected = v.select_parameters(**common)
    assert_contract(corrected, corrected.delta, expect_valid=True)
    assert corrected.budget == pytest.approx(5.6605, abs=5e-5) and len(corrected.sizes) == 185  # ERRATA I-21/I-33


# ---------------------------------------------------------------- Kardam: the smallest T of Theorem 5

def kardam_bound_by_hand(steps, gap, lip, chi, phi, d, sigma, m, radius, variant):
    """Theorem 4 with Definition 10's γ (L1189, L1879, L1923): (B(T), γ); φ_max² in the χ-term when corrected."""
    gamma = math.sqrt(gap / (lip * steps * m * d * sigma**2))
    power = 2 if variant == "corrected" else 1
    bound = ((2 + phi) * gamma * lip * d * sigma**2 + gamma**2 * lip**2 * m * chi * phi**power * d * sigma**2
             + d * sigma**2 + 2 * radius * lip * sigma * math.sqrt(d) + lip**2 * radius**2)
    return bound, gamma


@given(gap=st.floats(0.01, 100), lip=st.floats(0.1, 10), chi=st.floats(0, 5), phi=st.floats(1, 50),
       d=st.integers(1, 100), sigma=st.floats(0.01, 2), m=st.integers(1, 10), radius=st.floats(0, 1),
       slack=st.floats(0.01, 100), variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_kardam_steps_to_target(gap, lip, chi, phi, d, sigma, m, radius, slack, variant):
    setting = (gap, lip, chi, phi, d, sigma, m, radius, variant)
    floor = d * sigma**2 + 2 * radius * lip * sigma * math.sqrt(d) + lip**2 * radius**2  # L1879
    target = floor + slack
    result = kardam.steps_to_target(target=target, loss_gap=gap, lipschitz=lip, decay_bound=chi,
                                    max_adaptive_rate=phi, dimension=d, gradient_std=sigma, gradients_per_step=m,
                                    confinement_radius=radius, variant=variant)
    steps = result.steps
    bound, gamma = kardam_bound_by_hand(steps, *setting)
    assert_contract(result, steps, expect_valid=gamma * lip * m <= 1)  # prerequisite L1883 (KARDAM-P5)
    assert bound <= target * (1 + 1e-12) and result.bound == pytest.approx(bound, rel=1e-12)
    assert steps == 1 or kardam_bound_by_hand(steps - 1, *setting)[0] > target * (1 - 1e-12)
    assert result.learning_rate == pytest.approx(gamma, rel=1e-12) and result.variant == variant
    ids = notes_ids(result)
    assert {"KARDAM-P1", "KARDAM-N", "KARDAM-P7"} <= ids and ("KARDAM-P5" in ids) is not result.valid


def test_kardam_steps_to_target_printed_and_without_guarantee():
    example = dict(loss_gap=1.0, lipschitz=1.0, decay_bound=1.134, max_adaptive_rate=49.0, dimension=10,
                   gradient_std=0.1)
    printed = kardam.steps_to_target(target=0.5, variant="paper", **example)
    assert_contract(printed, printed.steps, expect_valid=True)
    assert printed.steps == 1894  # spec §4.4, ERRATA KARDAM-P7
    # ΔF = 100, K = 1, M = 2, d = σ = 1, χ = 1, φ = 2: γ = √(50/T), B(T) = 4√(50/T) + 400/T + 1 (corrected, φ²):
    # B(9) = 54.9 > 50 ≥ B(10) = 49.9, and at T = 10 γKM = 2√5 = 4.47 > 1
    early = kardam.steps_to_target(target=50, loss_gap=100, lipschitz=1, decay_bound=1, max_adaptive_rate=2,
                                   dimension=1, gradient_std=1, gradients_per_step=2)
    assert_contract(early, early.steps, expect_valid=False)
    assert early.steps == 10 and early.hypotheses[0].detail == f"{2 * math.sqrt(5):.6g} <= 1"
    with pytest.raises(ValueError, match="target=0.1 is not above the floor"):
        kardam.steps_to_target(target=0.1, **example)


# ---------------------------------------------------------------- Kardam: Remark 2's window (L1932)

#: Near the thesis' settings (β, τ_low, τ_high) of L1964 the window is open or just closed; elsewhere mostly empty.
NEAR_THESIS = st.tuples(st.sampled_from([(1.85, 1, 10), (3.1, 11, 33), (4.0, 34, 75)]), st.floats(-0.05, 0.05),
                        st.integers(-3, 3), st.integers(-3, 3)).map(
    lambda s: (s[0][0] * (1 + s[1]), max(1, s[0][1] + s[2]), max(1, s[0][1] + s[2], s[0][2] + s[3])))
ANYWHERE = st.tuples(st.floats(0.2, 10), st.integers(1, 200), st.integers(0, 200)).map(
    lambda s: (s[0], s[1], s[1] + s[2]))


@given(setting=st.one_of(NEAR_THESIS, ANYWHERE))
@FAST
def test_kardam_remark2_window(setting):
    root, low, high = setting
    result = kardam.remark2_window(root=root, tau_low=low, tau_high=high)
    upper = min(math.log(tau + 1) / tau ** (1 / root) for tau in range(low, high + 1))  # (B.3), L1958
    assert_contract(result, result.upper, expect_valid=root / E < upper)  # (B.2) α > β/e, L1949
    assert (result.lower, result.upper) == pytest.approx((root / E, upper), rel=1e-12)
    assert notes_ids(result) == {"KARDAM-P8"} and "Remark 2" in result.source


def test_kardam_remark2_printed_setting_and_an_empty_window():
    printed = kardam.remark2_window(root=1.85, tau_low=1, tau_high=10)  # L1964
    assert_contract(printed, printed.upper, expect_valid=True)
    assert (printed.lower, printed.upper) == pytest.approx((0.680577, 0.690700), abs=1e-6)  # ERRATA KARDAM-P8
    empty = kardam.remark2_window(root=1, tau_low=1, tau_high=10)  # 1/e = 0.368 > ln(11)/10 = 0.240
    assert_contract(empty, empty.upper, expect_valid=False)
    assert empty.upper == pytest.approx(math.log(11) / 10, rel=1e-12)


# ---------------------------------------------------------------- Kardam: Theorem 1's band (L1116-1122)

@given(f=st.integers(0, 100), n=st.integers(1, 400))
@FAST
def test_kardam_accept_ratio_bounds(f, n):
    if n <= f:
        with pytest.raises(ValueError, match=rf"workers must be an integer in \[{f + 1}, inf\)"):
            kardam.accept_ratio_bounds(workers=n, byzantine=f)
        return
    result = kardam.accept_ratio_bounds(workers=n, byzantine=f)
    assert_contract(result, result.lower, expect_valid=n >= 3 * f + 1)  # KARDAM-N (L1120, L1786)
    assert (result.lower, result.upper) == ((n - 2 * f) / (n - f), (n - f) / n)  # L1118
    assert notes_ids(result) == {"KARDAM-N"} and "Theorem 1" in result.source


def test_kardam_accept_ratio_printed_setting_and_too_few_workers():
    printed = kardam.accept_ratio_bounds(workers=10, byzantine=3)  # n = 10, f = 3 (L1242): drop f/n = 30 % (L1264)
    assert_contract(printed, printed.lower, expect_valid=True)
    assert (printed.lower, printed.upper) == pytest.approx((4 / 7, 0.7), rel=1e-15)
    few = kardam.accept_ratio_bounds(workers=6, byzantine=3)  # n = 2f: the lower end is 0, shown without guarantee
    data = assert_contract(few, few.lower, expect_valid=False)
    assert few.lower == 0 and data["hypotheses"][0]["detail"] == "6 >= 10"
