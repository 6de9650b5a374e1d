"""fedplan validate vandijk|theorem5|fedsgd-dpc: claims as JSON or a table, a progress bar, one-line errors."""

import json
import re

import pytest

from fedplan.planner import cli
from fedplan.planner.cli import main
from fedplan.planner.tasks.validate import ValidateFedsgdDpc, ValidateTheorem5, ValidateVandijk


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_validate_theorem5_json(capsys):
    code, out, _ = run(capsys, "validate", "theorem5", "--n-samples", "2000", "--n-features", "4", "--clients", "2",
                       "--rounds", "8", "--seeds", "0", "1", "--json")
    output = json.loads(out)
    assert code == 0 and len(output["claims"]) == 2 and output["claims"][1]["passed"]  # tau_hat <= tau
    # at t = 32 Theorem 5's t >= M_0 fails: the bound claim may fail, and the report says why
    assert output["passed"] == all(claim["passed"] for claim in output["claims"])
    assert "failing hypotheses" in output["claims"][0]["detail"]
    assert any(row["quantity"] == "dist_sq" for row in output["table"])
    api = ValidateTheorem5(n_samples=2000, n_features=4, clients=2, rounds=8, seeds=(0, 1)).run()
    assert api["claims"] == output["claims"] and api.result.passed == output["passed"]


VANDIJK = ("--initial-size", "16", "--client-size", "10000", "--grad-computations", "3000", "--noise-multiplier", "8",
           "--target-epsilon", "1", "--r0", "1/e", "--variant", "paper", "--learning-rate", "0.2", "--no-pld",
           "--clients", "2", "--clipping-norm", "0.5", "--n-samples", "22000", "--n-features", "4", "--seeds", "0",
           "1")


def test_validate_vandijk_spends_the_planned_epsilon_with_a_bar_in_rounds_over_the_seeds(capsys, monkeypatch):
    monkeypatch.setattr(cli, "BAR_REDRAW_SECONDS", 0.0)  # every state drawn: a fast machine ran it all in 0.1 s (CI)
    code, out, err = run(capsys, "validate", "vandijk", *VANDIJK)
    states = re.findall(r"(\d+)/(\d+) rounds", err)  # the bar moves per round, over both seeds (was: per seed)
    assert code == 0 and len(states) > 2 and states[-1][0] == states[-1][1] and int(states[-1][1]) % 2 == 0
    assert "PASS  spent epsilon <= planned tight epsilon" in out
    # the paper variant's max q_i exceeds r0/sigma: its claimed epsilon is no guarantee
    assert "NO GUARANTEE  spent epsilon <= the paper's claimed" in out
    request = ValidateVandijk(initial_size=16, client_size=10_000, grad_computations=3000, noise_multiplier=8,
                              target_epsilon=1, r0="1/e", variant="paper", learning_rate=0.2, no_pld=True, clients=2,
                              clipping_norm=0.5, n_samples=22_000, n_features=4, seeds=(0, 1))
    assert request.test_fraction == 0.05 and request.decay == 0.001
    spent = request.run().result.claims[0]
    assert spent.passed and spent.simulated == pytest.approx(spent.predicted, rel=1e-12)


def test_validate_vandijk_old_plan_spellings_work_with_a_note(capsys):
    argv = [{"--initial-size": "--s0", "--noise-multiplier": "--sigma", "--target-epsilon": "--epsilon"}.get(item, item)
            for item in VANDIJK]
    code, out, err = run(capsys, "validate", "vandijk", *argv, "--json")
    assert code == 0 and json.loads(out)["claims"][0]["passed"]
    assert "fedplan: note: --s0 is deprecated here, use --initial-size" in err
    assert "fedplan: note: --sigma is deprecated here, use --noise-multiplier" in err


def test_validate_fedsgd_dpc_api_and_cli_agree(capsys):
    argv = ("--clients", "10", "--n-samples", "3000", "--n-features", "5", "--mechanism", "gaussian",
            "--target-epsilon", "20", "--seeds", "0", "1", "--json")
    code, out, err = run(capsys, "validate", "fedsgd-dpc", *argv)
    output = json.loads(out)
    assert code == 0 and err == "" and output["passed"]
    assert "PASS  spent epsilon <= per-client target" in output["statement"]
    seen = []
    api = ValidateFedsgdDpc(clients=10, n_samples=3000, n_features=5, mechanism="gaussian", target_epsilon=20,
                            seeds=(0, 1)).run(progress=lambda done, total: seen.append((done, total)))
    assert api["claims"] == output["claims"] and seen == [(1, 2), (2, 2)]


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        ValidateFedsgdDpc(target_epsilon=20, seeds=(0, -1))
    code, out, err = run(capsys, "validate", "fedsgd-dpc", "--target-epsilon", "20", "--seeds", "0", "-1")
    assert code == 2 and out == "" and err == f"fedplan: error: {raised.value}\n"
    assert str(raised.value) == "seeds[1] must be an integer in [0, 1e+12]; got -1"
    code, _, err = run(capsys, "validate", "fedsgd-dpc", "--epsilon", "0")
    assert code == 2 and "target_epsilon (given as --epsilon) must be a real number in [1e-09, inf); got 0" in err


def test_validate_vandijk_estimates_its_time_up_front_from_the_gradient_computations():
    """Each seed computes K = epochs × N_c gradients on each client: 2.5 × 10 000 × 5 clients × 2 seeds = 250 000
    updates at limits.update_seconds' 4e-5 + 2e-7 × 20 s (44 µs) each = 11 s; without the count the page's and the
    time limit's estimate was 0."""
    from fedplan.planner.tasks.simulate import estimated_seconds, simulated_updates

    request = ValidateVandijk(initial_size=16, client_size=10_000, epochs=2.5, noise_multiplier=8, target_epsilon=1,
                              r0="1/e", no_pld=True, clients=5, n_samples=62_500, seeds=(0, 1))
    assert simulated_updates(request) == (250_000, "epochs=2.5 × client_size=10000 × clients=5 × 2 seeds")
    assert estimated_seconds(request) == pytest.approx(11.0, rel=1e-12)
    given = ValidateVandijk(initial_size=16, client_size=10_000, grad_computations=3001, noise_multiplier=8,
                            target_epsilon=1, r0="1/e", no_pld=True, clients=2, seeds=(0, 1, 2))
    assert simulated_updates(given) == (3001 * 2 * 3, "grad_computations=3001 × clients=2 × 3 seeds")


def test_validate_fedsgd_dpc_counts_its_fits_calibrations_and_replies_up_front():
    """62 500 synthetic examples, 20 % held out: 50 000 training examples over 5 clients. Fits: 3 × 50 000 = 150 000
    updates. Gaussian planner: 200 calibrations × 1 000 = 200 000. Replies: 200 rounds × 5 clients × 2 seeds × ⌈0.5 ×
    10 000 / 50⌉ = 100 each = 200 000. At 44 µs an update: 24.2 s (a loaded machine ran one seed in 69.8 s; the old
    count, one update per reply, estimated 0.5 s)."""
    from fedplan.planner.tasks.simulate import estimated_seconds, simulated_updates

    common = dict(n_samples=62_500, test_fraction=0.2, clients=5, seeds=(0, 1), target_epsilon=20)
    gaussian = ValidateFedsgdDpc(mechanism="gaussian", **common)
    assert simulated_updates(gaussian) == (550_000, "fits on 50000 training examples, max_rounds=200 noise "
                                           "calibrations, then max_rounds=200 × clients=5 × 2 seeds of replies over "
                                           "5000 examples")
    assert estimated_seconds(gaussian) == pytest.approx(24.2, rel=1e-12)
    # given T and b the planner does not run; Laplace replies use every local example (q = 1): 10 000 / 50 = 200
    laplace = ValidateFedsgdDpc(mechanism="laplace", rounds=3, clients_per_round=4, **common)
    assert simulated_updates(laplace)[0] == 150_000 + 3 * 4 * 2 * 200
