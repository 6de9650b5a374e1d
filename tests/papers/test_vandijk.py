"""van Dijk et al.: the printed test vectors of spec §6 (paper variant) and the corrected results.

Expected values are the paper's printed digits (line numbers cited). 16-digit prints are matched
to 1e-10 relative; shorter prints to their last digit.
"""

import math

import pytest

from fedplan.bounds import vandijk as v
from fedplan.bounds.theorem import all_hold
from fedplan.bounds.vandijk_sequences import power_sequence

E = math.e


def close(value, printed, rel=1e-10):
    return value == pytest.approx(printed, rel=rel)


# ---------------------------------------------------------------- TV-0 constants
def test_tv0_constants():
    assert close(v.constant_b_closed(p=1), 0.5321797270231777)  # L1515
    assert close(v.constant_b_closed(p=1) * 2 ** (2 / 3), 0.8447826585127415)  # L1519
    assert round(v.JUMP_FACTOR, 2) == 1.21 and v.JUMP_FACTOR == pytest.approx(1.2100007, abs=1e-7)  # L1475
    ratios = [v.constant_b_closed(p=p) / v.constant_b_limit(p=p) for p in (0, 0.25, 0.5, 0.75, 1)]
    assert 0.73 <= min(ratios) and max(ratios) <= 0.8125  # L1313: in [0.73, 0.81]
    assert ratios[0] == pytest.approx(0.7321, abs=1e-4) and ratios[-1] == pytest.approx(0.8123, abs=1e-4)
    assert v.SIGMA_MIN == pytest.approx(1.1365448, abs=1e-7) and v.SIGMA_MIN <= 1.137  # L1339
    assert v.R0_CAP == pytest.approx(0.0457532, abs=1e-7) and v.R0_CAP < 1 / E  # L1335
    assert v.JUMP_FACTOR**2 * 2 ** (3 / 2) == pytest.approx(4.14, abs=0.005)  # L1481, k = 2, p = 1
    k_max = (5 / (v.JUMP_FACTOR * 3)) ** (4 / 3)  # L1487: 5 >= k^{3/4}·1.21·3
    assert k_max == pytest.approx(1.53, abs=0.005)


@pytest.mark.parametrize("p, expected", [(0, 0.3660254038), (0.25, 0.4853913804), (0.5, 0.5276119932),
                                         (0.75, 0.5370043668), (1, 0.5321797270)])
def test_b_closed_table(p, expected):
    assert v.constant_b_closed(p=p) == pytest.approx(expected, abs=1e-10)


# ---------------------------------------------------------------- TV-1 r0(σ)
def test_tv1_r0_of_sigma_reproduces_the_paper_at_sigma_3():
    assert round(v.r0_of_sigma(sigma=3).r0, 4) == 0.0110  # L1341, L1477, L1521


@pytest.mark.parametrize("sigma, printed", [(5, 0.0202), (8, 0.0247)])
def test_tv1_r0_printed_values_at_sigma_5_and_8_are_below_the_fixed_point(sigma, printed):
    """Erratum I-27: the printed r0(5), r0(8) are 0.7 % and 0.4 % below the fixed point of L1333."""
    exact = v.r0_of_sigma(sigma=sigma).r0
    assert round(exact, 4) != printed
    assert 0.003 < (exact - printed) / exact < 0.008


# ---------------------------------------------------------------- TV-2 Example 1 (L1509-1569)
EXAMPLE1 = dict(initial_size=16, client_size=50_000, grad_computations=100 * 50_000, p=1, epsilon=2, sigma=3,
                r0=0.0110, variant="paper", closed_form=True)


def test_tv2_example1_first_pass():
    sel = v.select_parameters(**EXAMPLE1, max_passes=1)
    first = sel.passes[0]
    assert close(first.q_theorem, 0.0000006028856829700258)  # L1523
    assert close(first.q_star, 0.000000067222222222222222)  # L1527
    assert close(sel.m, 4760.330578512398) and sel.rounds == 54546  # L1535, L1539
    assert close(sel.gamma, 0.08727185455418175)  # L1543
    assert close(sel.factor, 1.5222584705194226)  # L1547
    assert close(sel.budget, 1.9707559905883425)  # L1551
    assert close(sel.delta, 0.020570872204539764)  # L1555
    assert round(sel.client_size * sel.delta) == 1029  # L1557


def test_tv2_example1_second_pass_and_the_epsilon_8_typo():
    sel = v.select_parameters(**EXAMPLE1, max_passes=2)
    assert close(sel.slope, 0.0039733713991774566) and close(sel.m, 4026.8070594438323)  # L1565
    assert sel.rounds == 50168  # L1567
    # L1559 prints δ "for ε = 6"; it is ε = 8 with the second-pass 𝓑 (erratum I-28).
    assert close(v.delta_from_budget(epsilon=8, budget=sel.budget), 0.0000000634577338911708, rel=1e-9)
    assert v.delta_from_budget(epsilon=6, budget=sel.budget) == pytest.approx(4.0e-6, rel=0.02)
    assert round(1 / sel.slope) == 252  # L1567
    assert round(312500 / sel.rounds, 2) == 6.23  # L1569
    assert round(math.sqrt(312500) * 1.98) == 1107 and round(math.sqrt(sel.rounds) * 3) == 672  # L1569


# ---------------------------------------------------------------- TV-3 Example 2 (L1571-1623)
def test_tv3_example2():
    sel = v.select_parameters(initial_size=16, client_size=10_000, grad_computations=10 * 10_000, p=1, epsilon=2,
                              sigma=5, r0=0.0202, variant="paper", closed_form=True, max_passes=1)
    assert close(sel.passes[0].q_star, 0.0000008160800000000002)  # L1597
    # L1605 uses the rounded coefficient 0.845 for B·2^{2/3} (erratum I-29).
    assert close(v.sample_rate_for_k_limit(constant=0.845 / 2 ** (2 / 3), epsilon=2, epochs=10, p=1),
                 0.0006033511249999998)
    assert sel.passes[0].q_theorem == pytest.approx(0.00060288568, abs=1e-11)
    assert close(sel.m, 1960.5920988138412) and sel.rounds == 4951  # L1609, L1613
    assert close(sel.gamma, 0.39599921204076777)  # L1617
    assert sel.factor == pytest.approx(5.31257308281, abs=1e-11)  # L1621


# ---------------------------------------------------------------- TV-4 Example 3 (L1625-1691, main text L221)
EXAMPLE3 = dict(initial_size=16, client_size=10_000, grad_computations=25_000, p=1, epsilon=1, sigma=8, r0=1 / E)


def test_tv4_example3_constants():
    constants = v.r_constant(r0=1 / E, sigma=8)
    assert close(constants.u1, 0.15275204077456322) and close(constants.u0, 0.4495546831835495)  # L1633
    assert close(constants.r, 5.7460446671129635)  # L1633
    assert close(v.k_star_coefficient(alpha=1 / (8 * E), p=1, gamma=0), 0.0010573069002860367)  # L1635
    assert close(v.constant_b(r=constants.r, p=1, gamma=0, alpha=1 / (8 * E)), 0.1368988621622339)  # L1639


def test_tv4_example3_passes_and_result():
    sel = v.select_parameters(**EXAMPLE3, variant="paper")
    first, second, third = sel.passes
    assert close(first.q_star, 0.0004229227601144147)  # L1643
    assert close(first.q, 0.00016420239582699232) and close(first.m, 9.744072197861225)  # L1647-1657
    assert first.rounds == 175 and close(first.gamma_out, 0.055680412559207)  # L1661-1663
    assert close(second.constant, 0.12819685818649007) and close(second.q, 0.00013483794319482493)  # L1667
    assert close(second.m, 11.86609616024911) and second.rounds == 193
    assert close(second.gamma_out, 0.061482363524606794)
    assert close(third.constant, 0.12734354695486969) and close(third.q, 0.00013216327772100012)  # L1669
    assert close(third.m, 12.106237281566509) and third.rounds == 195 and close(third.gamma_out, 0.06208326811059748)
    assert sel.factor == pytest.approx(1.38361486085, abs=1e-11)  # L1677
    assert sel.budget == pytest.approx(5.78195582192962, rel=1e-10)  # L1681
    assert sel.delta == pytest.approx(5.502343985212556e-8, rel=1e-8)  # L1685
    assert close(sel.slope, 1.3216327772100012)  # L1689
    assert close(sel.slope * sel.m, 16.0, rel=1e-14)
    assert sel.constant_rounds == 1563  # L221
    assert round(sel.constant_rounds / sel.rounds, 2) == 8.02 and round(sel.rounds / sel.constant_rounds, 2) == 0.12
    assert round(sel.constant_aggregated_noise) == 229 and round(sel.aggregated_noise) == 112  # L221


def test_tv4_example3_sequence_is_16_plus_ceil_slope_i():
    """L1689: s_{i,c} = ⌈N_c q (i+m)⌉ = 16 + ⌈1.3216327772 i⌉ (N_c q m = 16 exactly, tolerant ceil)."""
    sel = v.select_parameters(**EXAMPLE3, variant="paper")
    expected = [16 + math.ceil(sel.slope * i - 1e-9) for i in range(len(sel.sizes))]
    assert list(sel.sizes) == expected


# ---------------------------------------------------------------- TV-5 Example 4 (L1693-1755)
def test_tv5_example4():
    sel = v.select_parameters(initial_size=16, client_size=25_000, grad_computations=5 * 25_000, p=1, epsilon=2,
                              sigma=8, r0=0.0247, variant="paper", closed_form=True, max_passes=1)
    assert close(sel.passes[0].q_star, 0.000000953265625)  # L1715
    assert sel.passes[0].q_theorem == pytest.approx(0.00482308546, abs=1e-11)  # L1719
    assert sel.m == pytest.approx(671.376354308, abs=1e-9) and sel.rounds == 3239  # L1727, L1731
    assert sel.gamma == pytest.approx(0.20727889913, abs=1e-11)  # L1735
    # L1739 divides r0 by 5 instead of σ = 8 (erratum I-31): the printed factor needs that typo.
    assert sel.factor == pytest.approx(2.5686772, abs=1e-7)
    typo = v.case1_factor(p=1, gamma=sel.gamma, alpha=0.0247 / 5)
    assert typo == pytest.approx(2.57106713, abs=1e-8)
    assert 8 / typo == pytest.approx(3.11154847209, rel=1e-10)  # L1743
    assert close(v.delta_from_budget(epsilon=2, budget=8 / typo), 0.00006241319203188485, rel=1e-9)  # L1747
    assert close(sel.slope, 0.023831640625)  # L1751
    assert round(7813 / sel.rounds, 2) == 2.41 and round(math.sqrt(sel.rounds) * 8) == 455  # L1755


# ---------------------------------------------------------------- TV-6 Example 5 (L1757-1817)
def test_tv6_example5():
    sel = v.select_parameters(initial_size=16, client_size=25_000, grad_computations=5 * 25_000, p=1, epsilon=2,
                              sigma=8, r0=1 / E, variant="paper")
    first, second, third = sel.passes
    assert close(first.constant * 2 ** (2 / 3), 0.21731339780957962)  # L1765
    assert close(first.q_star, 0.00021146138005720736)  # L1769
    assert close(first.q, 0.00008210119791349613) and close(first.m, 7.795257758288984)  # L1773-1781
    assert first.rounds == 349 and close(first.gamma_out, 0.022335982115441216)  # L1785-1789
    assert close(second.constant, 0.13329256340146362) and close(second.q, 0.00007578229244195698)  # L1793
    assert close(second.m, 8.445244652504904) and second.rounds == 364
    assert close(second.gamma_out, 0.02320122157281567)
    assert close(third.constant * 2 ** (2 / 3), 0.21137208415301048)  # L1795
    assert third.q == pytest.approx(0.00007554972, abs=1e-11) and close(third.m, 8.471242187728482)
    assert third.rounds == 364 and close(third.gamma_out, 0.023272643372880444)
    assert close(sel.factor, 1.1486274762710156)  # L1801
    assert close(sel.budget, 6.964834261123335)  # L1805
    assert close(sel.delta, 8.56732681988984e-22, rel=1e-8)  # L1809
    assert close(sel.slope, 1.8887430727901684)  # L1815
    assert round(math.sqrt(7813) * 6.96) == 615 and round(math.sqrt(sel.rounds) * 8) == 153  # L1817


# ---------------------------------------------------------------- TV-9 realised sequences (spec §6)
@pytest.mark.parametrize("kwargs, passes, rounds, last, hypothesis_holds", [
    (EXAMPLE1, 1, 49858, 184, False),
    (EXAMPLE1, 2, 46187, 200, False),
    (dict(initial_size=16, client_size=10_000, grad_computations=100_000, p=1, epsilon=2, sigma=5, r0=0.0202,
          variant="paper", closed_form=True), 1, 3326, 44, False),
    ({**EXAMPLE3, "variant": "paper"}, None, 183, 257, True),
    (dict(initial_size=16, client_size=25_000, grad_computations=125_000, p=1, epsilon=2, sigma=8, r0=0.0247,
          variant="paper", closed_form=True), 1, 2620, 79, False),
    (dict(initial_size=16, client_size=25_000, grad_computations=125_000, p=1, epsilon=2, sigma=8, r0=1 / E,
          variant="paper"), None, 356, 687, True),
])
def test_tv9_paper_schedules_realised(kwargs, passes, rounds, last, hypothesis_holds):
    """The paper's q and m run as the integer sequence: fewer rounds than ⌈T_up⌉ (erratum I-33), and
    Examples 1, 2, 4 break their own hypothesis max q_i ≤ r0/σ (erratum I-20)."""
    sel = v.select_parameters(**kwargs, max_passes=passes)
    assert len(sel.sizes) == rounds and sel.sizes[0] == 16 and sel.sizes[-1] == last
    held = {h.name: h.holds for h in sel.hypotheses}
    assert held["max_i q_i <= r0/sigma (realised sequence)"] is hypothesis_holds


def test_tv9_example3_direct_theorem3_and_lemma4():
    sizes = v.select_parameters(**EXAMPLE3, variant="paper").sizes
    direct = v.theorem3(sizes=sizes, client_size=10_000, sigma=8, epsilon=1)
    assert direct.valid and direct.branch == "2/(rho_hat x)"
    assert direct.delta == pytest.approx(math.exp(-32), rel=1e-12)  # 1.266e-14 (spec §9.1)
    assert direct.delta == pytest.approx(1.266e-14, rel=1e-3)
    delta_lemma4, _ = v.lemma4_delta(sizes=sizes, client_size=10_000, sigma=8, epsilon=1, r0=1 / E)
    assert delta_lemma4 == pytest.approx(3.27e-24, rel=0.01)  # spec TV-9
    delta_tight_r0, _ = v.lemma4_delta(sizes=sizes, client_size=10_000, sigma=8, epsilon=1)
    assert delta_tight_r0 == pytest.approx(9.41e-25, rel=0.01)


def test_direct_theorem3_on_the_constant_baseline_gives_budget_equal_sigma():
    """Spec §9.1: constant s = 16 at σ = 5.78 proves δ = exp(−εσ²/2), i.e. 𝓑 = σ, as the paper assumes."""
    direct = v.theorem3(sizes=[16] * 1563, client_size=10_000, sigma=5.78, epsilon=1)
    assert direct.branch == "2/(rho_hat x)" and direct.delta == pytest.approx(5.56e-8, rel=0.01)


# ---------------------------------------------------------------- corrected variant
def test_corrected_example1_matches_the_rigorous_recipe():
    """Spec §5.2: q = 5.48871e-8, m = 5830.15, T = 54652, γ = 0.10668, max q_i = 0.00332 ≤ 0.0036667."""
    sel = v.select_parameters(**{**EXAMPLE1, "variant": "corrected", "closed_form": None})
    assert sel.q == pytest.approx(5.48871e-8, rel=2e-5) and sel.m == pytest.approx(5830.15, abs=0.02)
    assert sel.rounds == 54652 == len(sel.sizes) and sel.gamma == pytest.approx(0.10668, abs=2e-5)
    assert max(sel.sizes) / 50_000 == pytest.approx(0.00332) and all_hold(sel.hypotheses)
    assert sel.budget == pytest.approx(1.80392, abs=2e-5)


def test_corrected_example3_runs_the_sequence_it_reports():
    sel = v.select_parameters(**EXAMPLE3)
    assert sel.variant == "corrected" and all_hold(sel.hypotheses)
    assert sel.rounds == len(sel.sizes) == 185  # the paper reports 195 (⌈T_up⌉); its own q runs 183 rounds
    assert sum(sel.sizes) >= 25_000 > sum(sel.sizes[:-1])
    assert sel.gamma >= sel.m / sel.rounds
    # Every size is ⌈N_c q (i+m)⌉, recomputed independently.
    assert list(sel.sizes) == list(power_sequence(client_size=10_000, sample_rate=sel.q, offset=sel.m, exponent=1,
                                                  rounds=sel.rounds))
    # A larger γ than the paper's makes the corrected budget smaller, hence δ larger than 5.5e-8.
    assert sel.budget < 5.78195582192962 and sel.delta > 5.5e-8


def test_corrected_k_star_sign_keeps_the_hypothesis_that_the_paper_breaks():
    """Erratum I-20: Examples 1 and 4 with the corrected sign satisfy max q_i ≤ r0/σ on the realised sequence."""
    for kwargs in (dict(client_size=50_000, grad_computations=5e6, epsilon=2, sigma=3, r0=0.0110),
                   dict(client_size=25_000, grad_computations=1.25e5, epsilon=2, sigma=8, r0=0.0247)):
        sel = v.select_parameters(initial_size=16, p=1, **kwargs)
        assert all_hold(sel.hypotheses), [h for h in sel.hypotheses if not h.holds]
        assert sel.gamma >= sel.m / len(sel.sizes)


def test_corrected_example2_has_no_increasing_schedule():
    """Example 2 ("bad bound", L1621): with the corrected K* no γ ≥ m/T exists; the m/T iteration diverges."""
    with pytest.raises(ValueError, match="m/T iteration diverges"):
        v.select_parameters(initial_size=16, p=1, client_size=10_000, grad_computations=1e5, epsilon=2, sigma=5,
                            r0=0.0202)
