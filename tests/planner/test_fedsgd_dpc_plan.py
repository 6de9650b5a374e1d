"""planner.fedsgd_dpc and ``fedplan fedsgd-dpc optimum``: raw constants, a LIBSVM file, fixed b or T."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.planner import cli
from fedplan.planner.fedsgd_dpc import laplace_landscape, plan_fedsgd_dpc

PHISHING = Path(__file__).resolve().parents[3] / "shared" / "data" / "phishing.libsvm"
RAW = ["--mu", "10", "--lam", "20", "--G", "1", "--xi1", "1", "--Gamma", "0", "--Y0", "1", "--N", "10",
       "--d", "6000", "--p", "7850", "--epsilon", "1"]


def problem():
    return zhou.Problem(num_clients=10, model_dim=7850, client_sizes=6000, strong_convexity=10, smoothness=20,
                        gradient_bound=1, heterogeneity=0, initial_distance=1)


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_laplace_plan_is_the_brute_force_integer_optimum():
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1)
    constants = zhou.laplace_constants(problem=problem(), epsilon=1, clipping_norm=1)
    grid = [(zhou.laplace_bound(constants=constants, rounds=t, clients_per_round=b), t, b)
            for b in range(1, 11) for t in range(0, 3 * plan.choice.rounds + 2, 1)]
    best = min(grid)
    assert plan.choice.bound == pytest.approx(best[0], rel=1e-12)
    assert plan.choice.bound <= plan.paper_choice.bound
    assert plan.summary()["regime"]["regime"] == "b*=1" and plan.choice.clients_per_round == 1
    curve = dict(plan.curve)
    assert all(curve[t] >= plan.choice.bound * (1 - 1e-12) for t in curve)


def test_fixed_b_and_fixed_T():
    constants = zhou.laplace_constants(problem=problem(), epsilon=1, clipping_norm=1)
    fixed_b = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1, fix_b=5)
    assert fixed_b.choice.clients_per_round == 5
    assert fixed_b.choice.rounds == zhou.optimal_rounds(constants=constants, clients_per_round=5).best
    fixed_t = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1, fix_T=50)
    assert fixed_t.choice.rounds == 50
    assert fixed_t.choice.clients_per_round == zhou.optimal_clients(constants=constants, rounds=50).best


def test_gaussian_with_c2_follows_the_sign_of_e1_over_n_plus_e2():
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="gaussian", epsilon=1, delta=1e-5, clipping_norm=1,
                           sample_rate=0.01, c2=1.0, max_rounds=500)
    constants = zhou.gaussian_constants(problem=problem(), epsilon=1, delta=1e-5, clipping_norm=1, sample_rate=0.01,
                                        c2=1.0)
    expected = 500 if constants.E1 / 10 + constants.E2 > 0 else 0
    assert plan.choice.clients_per_round == 10 and plan.choice.rounds == expected
    assert not plan.summary()["hypotheses_hold"]  # c2 is assumed, and the summary says so


def test_gaussian_with_accountant_noise_matches_the_bounds_search():
    small = zhou.Problem(num_clients=4, model_dim=5, client_sizes=200, strong_convexity=1, smoothness=2,
                         gradient_bound=1, heterogeneity=0.1, initial_distance=1, local_gradient_std=0.5)
    plan = plan_fedsgd_dpc(problem=small, mechanism="gaussian", epsilon=2, delta=1e-5, clipping_norm=1,
                           sample_rate=0.1, max_rounds=6)
    direct = zhou.gaussian_accountant_choice(problem=small, epsilon=2, delta=1e-5, clipping_norm=1, sample_rate=0.1,
                                             max_rounds=6)
    assert (plan.choice.rounds, plan.choice.clients_per_round) == (direct.rounds, direct.clients_per_round)
    assert plan.noise["noise_multipliers"] == list(direct.noise_multipliers)


def test_cli_raw_constants_json(capsys):
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW, "--json")
    data = json.loads(out)
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1)
    assert code == 0 and data["T_star"] == plan.choice.rounds and data["b_star"] == plan.choice.clients_per_round
    assert data["bound"] == pytest.approx(plan.choice.bound, rel=1e-15)
    assert data["constants"]["C1"] == pytest.approx(8 * 10 / (100 * 9))  # 8NG²/(μ²(N−1)), zhou L356
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW, "--fix-b", "5", "--json")
    assert code == 0 and json.loads(out)["b_star"] == 5


@pytest.mark.skipif(not PHISHING.is_file(), reason="../shared/data/phishing.libsvm is not beside the repository")
def test_cli_from_a_libsvm_file(capsys):
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", "--dataset", str(PHISHING),
                           "--clients", "10", "--epsilon", "5", "--regularization", "0.05", "--json")
    data = json.loads(out)
    assert code == 0 and data["constants"]["clients"] == 10 and data["constants"]["mu"] == pytest.approx(0.05)
    assert (data["T_star"], data["b_star"]) == (12, 10)
    assert data["bound"] <= data["paper_rule"]["bound"]
    assert any(h["name"] == "d_1 = ... = d_N" and not h["holds"] for h in data["hypotheses"])  # 1105 vs 1106


@pytest.mark.parametrize("argv, message", [
    (["--mechanism", "laplace", "--epsilon", "1"], "give --dataset FILE --clients N, or all raw constants"),
    (["--mechanism", "gaussian", *RAW[:-2], "--xi2", "1", "--epsilon", "1", "--delta", "1e-5", "--q", "0.1"],
     "max_rounds must be a finite integer for the Gaussian mechanism"),
    (["--mechanism", "laplace", *RAW, "--fix-b", "11"], "fix_b must be an integer in [1, 10]; got 11"),
    (["--mechanism", "laplace", *RAW, "--dataset", "x.libsvm"], "--dataset estimates the constants; do not also"),
    (["--mechanism", "laplace", *RAW[:2], "--lam", "5", *RAW[4:]], "smoothness must be a real number in [10, inf)"),
])
def test_cli_bad_input_is_one_line_with_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, "fedsgd-dpc", "optimum", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_curve_has_rounds_zero_and_grows_past_the_optimum():
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1)
    rounds = np.array([t for t, _ in plan.curve])
    assert rounds[0] == 0 and rounds[-1] >= 2 * plan.choice.rounds and math.isfinite(plan.curve[-1][1])
    assert dict(plan.curve)[plan.choice.rounds] == plan.choice.bound  # T* is on the curve, at its bound


def test_laplace_landscape_minimum_is_the_exact_integer_optimum():
    problem = zhou.Problem(num_clients=10, model_dim=7850, client_sizes=6000, strong_convexity=10.0, smoothness=20.0,
                           gradient_bound=1.0, heterogeneity=0.0, initial_distance=1.0)
    plan = plan_fedsgd_dpc(problem=problem, mechanism="laplace", epsilon=0.05, clipping_norm=1.0)
    cells = laplace_landscape(problem=problem, epsilon=0.05, clipping_norm=1.0,
                              rounds=range(3 * plan.choice.rounds + 1))
    assert len(cells) == 10 * (3 * plan.choice.rounds + 1)
    best = min(cells, key=lambda cell: cell["U"])
    assert (best["T"], best["b"]) == (plan.choice.rounds, plan.choice.clients_per_round)
    assert best["U"] == pytest.approx(plan.choice.bound, rel=1e-12)
    with pytest.raises(ValueError, match="rounds must hold 1 to 1000 values; got 0"):
        laplace_landscape(problem=problem, epsilon=0.05, clipping_norm=1.0, rounds=[])
    with pytest.raises(ValueError, match="rounds must be an integer in"):
        laplace_landscape(problem=problem, epsilon=0.05, clipping_norm=1.0, rounds=[-1])
