"""fedplan fedsgd-dpc optimum: raw constants or a LIBSVM file, fixed b or T, one-line errors, the API."""

import json
from pathlib import Path

import pytest

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.planner import cli, estimate
from fedplan.planner.fedsgd_dpc import FedSGDPlan, plan_fedsgd_dpc
from fedplan.planner.tasks import fedsgd_dpc as task
from fedplan.planner.tasks.fedsgd_dpc import FedsgdDpcOptimum

PHISHING = Path(__file__).resolve().parents[4] / "shared" / "data" / "phishing.libsvm"
RAW = ["--strong-convexity", "10", "--smoothness", "20", "--gradient-bound", "1", "--clipping-norm", "1",
       "--heterogeneity", "0", "--initial-distance", "1", "--clients", "10", "--client-size", "6000",
       "--model-dim", "7850", "--target-epsilon", "1"]
CONSTANTS = dict(strong_convexity=10, smoothness=20, gradient_bound=1, clipping_norm=1, heterogeneity=0,
                 initial_distance=1, clients=10, client_size=6000, model_dim=7850, target_epsilon=1)


def problem():
    return zhou.Problem(num_clients=10, model_dim=7850, client_sizes=6000, strong_convexity=10, smoothness=20,
                        gradient_bound=1, heterogeneity=0, initial_distance=1)


def run_cli(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as stop:  # argparse refuses an option before the request sees it
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_raw_constants_json(capsys):
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW, "--json")
    data = json.loads(out)
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1)
    assert code == 0 and data["T_star"] == plan.choice.rounds and data["b_star"] == plan.choice.clients_per_round
    assert data["bound"] == pytest.approx(plan.choice.bound, rel=1e-15)
    assert data["constants"]["C1"] == pytest.approx(8 * 10 / (100 * 9))  # 8NG²/(μ²(N−1)), zhou L356
    assert {key: data["constants"][key] for key in ("source", "mu", "lam", "G", "Gamma", "Y0", "N", "d", "p",
                                                    "clipping_norm")} == dict(
        source="given", mu=10, lam=20, G=1, Gamma=0, Y0=1, N=10, d=6000, p=7850, clipping_norm=1)
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW,
                           "--fixed-clients-per-round", "5", "--json")
    assert code == 0 and json.loads(out)["b_star"] == 5


def test_the_api_answers_as_the_cli(capsys):
    report = FedsgdDpcOptimum(mechanism="laplace", **CONSTANTS, fixed_rounds=50).run()
    assert isinstance(report.result, FedSGDPlan) and report["T_star"] == 50
    _, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW, "--fixed-rounds", "50",
                        "--json")
    assert json.loads(out) == json.loads(report.to_json())


def test_old_spellings_still_work_and_print_a_note(capsys):
    old = ["--mu", "10", "--lam", "20", "--G", "1", "--xi1", "1", "--Gamma", "0", "--Y0", "1", "--N", "10",
           "--d", "6000", "--p", "7850", "--epsilon", "1", "--fix-b", "5"]
    code, out, err = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *old, "--json")
    _, new, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW,
                        "--fixed-clients-per-round", "5", "--json")
    assert code == 0 and json.loads(out) == json.loads(new)
    for spelling, name in (("--mu", "--strong-convexity"), ("--xi1", "--clipping-norm"), ("--N", "--clients"),
                           ("--d", "--client-size"), ("--p", "--model-dim"), ("--fix-b", "--fixed-clients-per-round")):
        assert f"note: {spelling} is deprecated here, use {name}" in err


def test_gaussian_with_an_assumed_noise_constant(capsys):
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "gaussian", *RAW, "--target-delta", "1e-5",
                           "--sample-rate", "0.01", "--noise-constant", "1", "--max-rounds", "500", "--json")
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="gaussian", epsilon=1, delta=1e-5, clipping_norm=1,
                           sample_rate=0.01, c2=1.0, max_rounds=500)
    data = json.loads(out)
    assert code == 0 and (data["T_star"], data["b_star"]) == (plan.choice.rounds, 10)
    assert data["noise"] == {"mode": "paper Eq. (5) with assumed c2"}


@pytest.mark.skipif(not PHISHING.is_file(), reason="../shared/data/phishing.libsvm is not beside the repository")
def test_cli_from_a_libsvm_file(capsys):
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", "--dataset", str(PHISHING),
                           "--clients", "10", "--target-epsilon", "5", "--regularization", "0.05", "--json")
    data = json.loads(out)
    assert code == 0 and data["constants"]["clients"] == 10 and data["constants"]["mu"] == pytest.approx(0.05)
    assert (data["T_star"], data["b_star"]) == (12, 10)
    assert data["bound"] <= data["paper_rule"]["bound"]
    assert any(h["name"] == "d_1 = ... = d_N" and not h["holds"] for h in data["hypotheses"])  # 1105 vs 1106


@pytest.mark.parametrize("argv, message", [
    (["--mechanism", "laplace", "--clients", "10", "--target-epsilon", "1"],
     "give dataset (a LIBSVM file to estimate the constants from), or all raw constants (missing strong_convexity, "
     "smoothness, gradient_bound, heterogeneity, initial_distance, client_size, model_dim, clipping_norm)"),
    (["--mechanism", "laplace", "--target-epsilon", "1", "--dataset", "x.libsvm"], "the following arguments are "
     "required: --clients"),  # --clients or its old spelling --N
    (["--mechanism", "gaussian", *RAW, "--target-delta", "1e-5", "--sample-rate", "0.1"],
     "the gaussian mechanism with accountant noise needs max_rounds (or noise_constant for the paper's Eq. (5))"),
    (["--mechanism", "gaussian", *RAW, "--max-rounds", "10"], "the gaussian mechanism needs target_delta and "
     "sample_rate"),
    (["--mechanism", "gaussian", *RAW, "--target-delta", "1e-5", "-q", "0.1", "--max-rounds", "9",
      "--fixed-rounds", "3"], "fixed_rounds applies to the laplace mechanism"),
    (["--mechanism", "laplace", *RAW, "--target-delta", "1e-5"], "target_delta apply to the gaussian mechanism"),
    (["--mechanism", "laplace", *RAW, "--fixed-clients-per-round", "11"],
     "fixed_clients_per_round must be an integer in [1, 10]; got 11"),
    (["--mechanism", "laplace", *RAW, "--fixed-rounds", "0"], "fixed_rounds must be an integer in [1, 1e+12]; got 0"),
    (["--mechanism", "laplace", *RAW, "--fixed-clients-per-round", "2", "--fixed-rounds", "3"],
     "give at most one of fixed_clients_per_round, fixed_rounds"),
    (["--mechanism", "laplace", *RAW, "--dataset", "x.libsvm"], "dataset estimates the constants; do not also give "
     "strong_convexity, smoothness"),
    (["--mechanism", "laplace", "--target-epsilon", "1", "--clients", "10", "--dataset", "x.libsvm"],
     "dataset must name an existing LIBSVM file; got 'x.libsvm'"),
    (["--mechanism", "laplace", *RAW[:2], "--smoothness", "5", *RAW[4:]],
     "smoothness must be a real number in [10, inf); got 5"),
    (["--mechanism", "laplace", *RAW[:12], "--clients", "1.5", *RAW[14:]],
     "clients must be an integer in [2, 1e+07]; got 1.5"),
])
def test_cli_bad_input_is_one_line_with_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, "fedsgd-dpc", "optimum", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        FedsgdDpcOptimum(mechanism="laplace", **{**CONSTANTS, "smoothness": 5})
    code, _, err = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW[:2], "--smoothness", "5",
                           *RAW[4:])
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"


def test_the_models_are_those_the_estimator_knows():
    assert task.MODELS == estimate.MODELS


def test_client_size_takes_one_value_per_client(capsys):
    """``--client-size 6000 3000`` for N = 2 clients: d = 9000 in C₂ = 32pξ₁²Σε_i⁻²/(μ²Nd²) (zhou L356): 32 · 7850 ·
    2/0.05² / (100 · 2 · 9000²) = 0.0124049…; the analysis's d_1 = … = d_N (L250) fails and is reported."""
    code, out, _ = run_cli(capsys, "fedsgd-dpc", "optimum", "--mechanism", "laplace", *RAW, "--clients", "2",
                           "--client-size", "6000", "3000", "--target-epsilon", "0.05", "--json")
    data = json.loads(out)
    assert code == 0 and data["constants"]["d"] == [6000, 3000]
    assert data["constants"]["C2"] == pytest.approx(32 * 7850 * 800 / (100 * 2 * 9000**2), rel=1e-12)
    assert [h["holds"] for h in data["hypotheses"] if h["name"] == "d_1 = ... = d_N"] == [False]
    with pytest.raises(ValueError, match=r"^client_size must be one value or one value per client \(10\); got 2 "
                                         r"values$"):
        FedsgdDpcOptimum(mechanism="laplace", **{**CONSTANTS, "client_size": (6000, 3000)})
