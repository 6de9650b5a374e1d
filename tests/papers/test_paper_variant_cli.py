"""``--variant paper`` prints what the papers print, from the command line with default arguments otherwise.

* Zhou et al., Table I (zhou L467-472): all 24 entries from ``fedplan fedsgd-dpc optimum --variant paper`` in
  its three modes (``--fixed-clients-per-round``, ``--fixed-rounds``, free), with the exact integer optimum
  beside the paper's rounding rule (errata Z-6, Z-9). μ, λ, G, Γ, Y₀ are not printed (L369-372): the inputs
  are the spec's physical instance of its fitted (γ, H, S) (spec §5.3), built here from (γ, H, S) with the
  formulas of spec §5.3, so that only (γ, H, S) matter (spec §3.7 D1).
* van Dijk et al., Examples 1, 3, 4 and 5 (vandijk Appendix D.3.2, L1509-1817) from ``fedplan vandijk select
  --variant paper`` with the examples' inputs (errata I-26…I-31).

Expected values are the papers' printed digits; the exact optimum and U(T, b) are checked against an
independent evaluation of the paper's U (spec §3.7 D1), not against fedplan's functions.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from fedplan.planner import cli
from tests.papers.test_zhou import EPSILONS, SETTINGS, SPEC, TABLE_I, N


def run(capsys, *argv: str) -> str:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def run_json(capsys, *argv: str) -> dict:
    return json.loads(run(capsys, *argv, "--json"))


def close(value, printed, rel=1e-10):
    return value == pytest.approx(printed, rel=rel)


# ---------------------------------------------------------------- Zhou et al., Table I

#: The CLI options of each Table I column (L467): T*(fix b = 5), T*(fix b = 10), b*(fix T = 50), T*(b* = 1).
COLUMNS = {5: ("--fixed-clients-per-round", "5"), 10: ("--fixed-clients-per-round", "10"),
           "b50": ("--fixed-rounds", "50"), 1: ()}
MU = 10.0


def client_size(name: str) -> int:
    """d/N as a whole number of records: 6000 (MNIST), 7004 (FEMNIST: d = 70 037 is not a multiple of 10)."""
    return round(SETTINGS[name][1] / N)


def zhou_inputs(name: str, epsilon: float) -> list[str]:
    """The spec's physical instance with the data set's (γ, H, S): λ = γμ/2, Γ = 0, G and Y₀ from H, S (§5.3)."""
    gamma, h, s = SPEC[name]
    p, _, xi = SETTINGS[name]
    d = N * client_size(name)
    values = {"--clients": N, "--client-size": client_size(name), "--model-dim": p, "--strong-convexity": MU,
              "--smoothness": gamma * MU / 2, "--gradient-bound": 2 * xi * math.sqrt(p * h) / d,
              "--heterogeneity": 0.0, "--initial-distance": 32 * p * xi**2 * s / (d**2 * gamma * MU**2),
              "--clipping-norm": xi, "--target-epsilon": epsilon}
    return ["fedsgd-dpc", "optimum", "--mechanism", "laplace",
            *(item for flag, value in values.items() for item in (flag, repr(value)))]


def scaled_bound(name: str, epsilon: float, rounds: int, clients: int) -> float:
    """U(T, b)/κ = (NH/((N−1)b) + bT²/ε² + S − H/(N−1))/(T + γ), κ = 32pξ₁²/(μ²d²) (spec §3.7 D1, zhou L354)."""
    gamma, h, s = SPEC[name]
    return (N * h / ((N - 1) * clients) + clients * rounds**2 / epsilon**2 + s - h / (N - 1)) / (rounds + gamma)


def kappa(name: str) -> float:
    p, _, xi = SETTINGS[name]
    return 32 * p * xi**2 / (MU**2 * (N * client_size(name)) ** 2)


def brute_force(name: str, epsilon: float, rounds, clients) -> tuple[int, int]:
    """The integer (T, b) of the given ranges with the smallest U."""
    _, t, b = min((scaled_bound(name, epsilon, t, b), t, b) for t in rounds for b in clients)
    return t, b


@pytest.mark.parametrize("column", [5, 10, "b50", 1])
@pytest.mark.parametrize("name", ["MNIST", "FEMNIST"])
def test_table_i_through_the_cli(capsys, name, column):
    """Each Table I entry is the answer of ``--variant paper`` (T = ⌊T*⌋, b = ⌈b*⌉; free: b ∈ {1, N}, L364)."""
    for epsilon, printed in zip(EPSILONS, TABLE_I[name][column], strict=True):
        data = run_json(capsys, *zhou_inputs(name, epsilon), "--variant", "paper", *COLUMNS[column])
        t, b = data["T_star"], data["b_star"]
        assert data["variant"] == "paper" and (data["paper_rule"]["T"], data["paper_rule"]["b"]) == (t, b)
        assert (b if column == "b50" else t) == printed
        assert (t if column == "b50" else b) == (50 if column == "b50" else column)  # the fixed one, or b* = 1
        assert close(data["bound"], kappa(name) * scaled_bound(name, epsilon, t, b), rel=1e-9)
        # the exact integer optimum of the printed U, beside the rule
        rounds = [50] if column == "b50" else range(0, 1000)
        clients = range(1, N + 1) if column in ("b50", 1) else [column]
        exact = data["exact_optimum"]
        assert (exact["T"], exact["b"]) == brute_force(name, epsilon, rounds, clients)
        assert close(exact["bound"], kappa(name) * scaled_bound(name, epsilon, exact["T"], exact["b"]), rel=1e-9)
        assert exact["bound"] <= data["bound"]


def test_the_paper_rule_and_the_exact_optimum_side_by_side(capsys):
    """MNIST, ε = 5, b = 5: T* = 32.7484 (spec §5.3), the paper prints ⌊T*⌋ = 32 (L467), the exact optimum is 33."""
    fixed = (*zhou_inputs("MNIST", 5.0), "--fixed-clients-per-round", "5")
    paper = run_json(capsys, *fixed, "--variant", "paper")
    corrected = run_json(capsys, *fixed)
    assert (paper["T_star"], paper["exact_optimum"]["T"], paper["paper_rule"]["T"]) == (32, 33, 32)
    assert paper["method"].startswith("paper rule") and any("exact integer optimum is (T, b) = (33, 5)" in note
                                                            for note in paper["notes"])
    # corrected: the exact optimum of its U (⌈bT/N⌉ replies) answers, its paper rule beside it
    assert (corrected["T_star"], corrected["paper_rule"]["T"]) == (corrected["exact_optimum"]["T"], 32)
    assert corrected["variant"] == "corrected" and corrected["bound"] <= corrected["paper_rule"]["bound"]
    table = run(capsys, *fixed, "--variant", "paper")
    for key, value in (("T_star", 32), ("paper_rule T", 32), ("exact_optimum T", 33), ("exact_optimum b", 5)):
        assert re.search(rf"^{key} +{value}$", table, re.MULTILINE), key


# ---------------------------------------------------------------- van Dijk et al., Appendix D.3.2

def example(initial, client, epochs, sigma, epsilon, r0, *more, variant="paper") -> list[str]:
    """``fedplan vandijk select`` with an example's inputs (--no-pld: the paper's numbers need no PLD)."""
    return ["vandijk", "select", "--variant", variant, "--no-pld", "--initial-size", str(initial), "--client-size",
            str(client), "--epochs", str(epochs), "--noise-multiplier", str(sigma), "--target-epsilon", str(epsilon),
            "--r0", r0, *more]


def test_example_1_first_pass(capsys):
    """L1509-1557: σ = 3, r0(σ) = 0.0110 (printed), K = 100 epochs; Theorem 4's closed B, one pass."""
    data = run_json(capsys, *example(16, 50_000, 100, 3, 2, "0.0110"))
    assert data["passes"] == 1 and close(data["q"], 0.000000067222222222222222)  # L1527
    assert close(data["m"], 4760.330578512398) and data["rounds"] == 54546  # L1535, L1539
    assert close(data["gamma"], 0.08727185455418175) and close(data["factor"], 1.5222584705194226)  # L1543, L1547
    assert close(data["budget"], 1.9707559905883425) and close(data["delta"], 0.020570872204539764)  # L1551, L1555
    assert round(50_000 * data["delta"]) == 1029  # L1557
    assert "Theorem 4 closed B, A" in data["statement"]


def test_example_1_redo_at_epsilon_8_is_the_second_pass(capsys):
    """L1557-1569 (erratum I-28): the redo at ε = 8 ("for ε = 6") is a second pass from the first pass's m/T."""
    data = run_json(capsys, *example(16, 50_000, 100, 3, 8, "0.0110", "--max-passes", "2"))
    assert data["passes"] == 2 and close(data["slope"], 0.0039733713991774566)  # L1565
    assert close(data["m"], 4026.8070594438323) and data["rounds"] == 50168  # L1565, L1567
    assert close(data["delta"], 0.0000000634577338911708, rel=1e-9)  # L1559
    assert round(1 / data["slope"]) == 252 and round(data["constant_rounds"] / data["rounds"], 2) == 6.23  # L1567-9


def test_example_2_bad_bound_is_refused_with_the_papers_budget(capsys):
    """L1571-1623: factor 5.31257308281 (L1621), so 𝓑 = 5/5.31257 = 0.941, "a bad bound" the paper gives up on;
    the claimed δ = exp(−ε𝓑²/2) = 0.412 leaves nothing to plan, and the CLI says so in one line."""
    code = cli.main([*example(16, 10_000, 10, 5, 2, "0.0202"), "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert "budget B = 0.941)" in captured.err and "delta = 0.412 at target_epsilon 2" in captured.err
    assert round(5 / 5.31257308281, 3) == 0.941 and round(math.exp(-2 * (5 / 5.31257308281) ** 2 / 2), 3) == 0.412


def test_example_3_main_text(capsys):
    """L1625-1691 and L221: r0 = 1/e, Theorem 6's general B, three passes until m/T settles (L1673)."""
    data = run_json(capsys, *example(16, 10_000, 2.5, 8, 1, "1/e"))
    assert data["passes"] == 3 and close(data["r"], 5.7460446671129635)  # L1633
    assert close(data["q"], 0.00013216327772100012) and close(data["m"], 12.106237281566509)  # L1669
    assert data["rounds"] == 195 and close(data["gamma"], 0.06208326811059748)  # L1669
    assert data["factor"] == pytest.approx(1.38361486085, abs=1e-11)  # L1677
    assert close(data["budget"], 5.78195582192962) and close(data["delta"], 5.502343985212556e-8, rel=1e-8)
    assert close(data["slope"], 1.3216327772100012)  # L1689
    assert data["constant_rounds"] == 1563 and round(data["constant_aggregated_noise"]) == 229  # L221, L1691
    assert round(data["aggregated_noise"]) == 112  # L221 (√195·8)
    assert "Theorem 6 general B, A" in data["statement"]


def test_example_4(capsys):
    """L1693-1755: σ = 8, r0(σ) = 0.0247 (printed), K = 5 epochs; one pass."""
    data = run_json(capsys, *example(16, 25_000, 5, 8, 2, "0.0247"))
    assert data["passes"] == 1 and close(data["q"], 0.000000953265625)  # L1715
    assert data["m"] == pytest.approx(671.376354308, abs=1e-9) and data["rounds"] == 3239  # L1727, L1731
    assert data["gamma"] == pytest.approx(0.20727889913, abs=1e-11)  # L1735
    assert close(data["slope"], 0.023831640625)  # L1751
    assert data["constant_rounds"] == 7813 and round(data["constant_rounds"] / data["rounds"], 2) == 2.41  # L1755
    assert round(data["aggregated_noise"]) == 455  # L1755
    # L1739 divides r0 by 5, not σ = 8 (erratum I-31): (1 + m/T)^5/√(1 − 0.0247/8), not the printed 2.57106713
    assert data["factor"] == pytest.approx((1 + data["gamma"]) ** 5 / math.sqrt(1 - 0.0247 / 8), rel=1e-12)
    assert data["factor"] == pytest.approx(2.5686772, abs=1e-7)


def test_example_5(capsys):
    """L1757-1817: Example 4 with r0 = 1/e; Theorem 6's general B, three passes."""
    data = run_json(capsys, *example(16, 25_000, 5, 8, 2, "1/e"))
    assert data["passes"] == 3 and close(data["r"], 5.7460446671129635)  # L1759
    assert data["q"] == pytest.approx(0.00007554972, abs=1e-11) and close(data["m"], 8.471242187728482)  # L1795
    assert data["rounds"] == 364 and close(data["gamma"], 0.023272643372880444)  # L1795
    assert close(data["factor"], 1.1486274762710156) and close(data["budget"], 6.964834261123335)  # L1801, L1805
    assert close(data["delta"], 8.56732681988984e-22, rel=1e-8)  # L1809
    assert close(data["slope"], 1.8887430727901684)  # L1815
    assert round(data["aggregated_noise"]) == 153  # L1817 (printed with 365 rounds for 364)


def test_the_closed_forms_are_the_paper_variants_default_only_up_to_the_largest_r0_of_sigma(capsys):
    """r0 ≤ (√3−1)/16 = 0.045753 (L1335) is the paper's r0(σ): Theorem 4's closed forms; above it Theorem 6's."""
    below = run_json(capsys, *example(16, 25_000, 5, 8, 2, "0.0457"))
    above = run_json(capsys, *example(16, 25_000, 5, 8, 2, "0.0458"))
    assert "Theorem 4 closed B, A" in below["statement"] and below["passes"] == 1
    assert "Theorem 6 general B, A" in above["statement"] and above["passes"] > 1
    # the corrected variant keeps Theorem 6's general forms: Example 1 as spec §5.2 gives it (erratum I-26)
    corrected = run_json(capsys, *example(16, 50_000, 100, 3, 2, "0.0110", variant="corrected"))
    assert corrected["variant"] == "corrected" and "Theorem 6 general B, A" in corrected["statement"]
    assert corrected["rounds"] == 54652 and corrected["budget"] == pytest.approx(1.80392, abs=2e-5)
