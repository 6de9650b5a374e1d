"""planner.validate: claims of a plan checked by simulation over seeds."""

import json
import math

import pytest

from fedplan.bounds import accounting
from fedplan.bounds.vandijk_sequences import delay_envelope
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.validate import _claim, validate_fedsgd_dpc, validate_theorem5, validate_vandijk_plan
from fedplan.planner.vandijk import plan_vandijk


@pytest.fixture(scope="module")
def small():
    return load_dataset("synthetic", n_samples=3000, n_features=5, seed=0)


@pytest.fixture(scope="module")
def vandijk_case():
    data = load_dataset("synthetic", n_samples=22_000, n_features=4, seed=0, test_fraction=0.05)
    plan = plan_vandijk(initial_size=16, client_size=10_000, epsilon=1, grad_computations=3000, sigma=8, p=1,
                        r0=1 / math.e, variant="paper", learning_rate=0.2, decay=0.001, with_pld=False)
    return data, plan


def test_vandijk_plan_spends_exactly_the_planned_epsilon_and_reports_delays(vandijk_case):
    data, plan = vandijk_case
    report = validate_vandijk_plan(plan=plan, dataset=data, clients=2, clipping_norm=0.5, seeds=(0, 1))
    spent, claimed, envelope = report.claims
    # the plan's tight epsilon is the Poisson-subsampled Gaussian's: the validation executes Poisson sampling
    assert all(run.config["sampling"] == "poisson" and run.privacy["sampling"] == "poisson" for run in report.runs)
    assert spent.passed and spent.simulated == pytest.approx(plan.tight_rdp.epsilon, rel=1e-12)
    assert "poisson sampling executed and accounted" in spent.detail
    assert any(note.startswith("executed sampling: poisson") for note in report.notes)
    independent = accounting.get_epsilon(segments=[(s / 10_000, 8.0, 1) for s in plan.selection.sizes],
                                         delta=plan.selection.delta, accountant="rdp")
    assert spent.simulated == pytest.approx(independent.epsilon, rel=1e-12)
    # the paper variant's largest q_i = 468/10 000 exceeds r0/sigma = (1/e)/8 (L177): its claimed epsilon is no
    # guarantee, although the spent epsilon is below it
    assert max(plan.selection.sizes) / 10_000 > 1 / math.e / 8
    assert claimed.verdict == "NO GUARANTEE" and not claimed.passed and claimed.simulated <= claimed.predicted == 1.0
    assert claimed.failing_hypotheses[0].startswith("max_i q_i <= r0/sigma")
    # rounds of up to 468 iterations per client: delays far beyond Lemma 3's sqrt(t/ln t) growth. The plan claims
    # no convergence: Lemma 3's rate is NO GUARANTEE, naming the delay hypothesis the run violates, with its numbers
    assert envelope.verdict == "NO GUARANTEE" and envelope.simulated is None and envelope.predicted is None
    delay, t0 = envelope.failing_hypotheses
    worst = max((row for run in report.runs for row in run.delay_quantiles if row["t"] > math.e),
                key=lambda row: row["tau_hat_q100"] - delay_envelope(t=row["t"]))
    assert worst["tau_hat_q100"] > 100 + delay_envelope(t=worst["t"])
    assert delay.startswith("tau_hat(t) <= sqrt(t/ln t (1 - 1/ln t))") and (
        f"largest tau_hat = {worst['tau_hat_q100']:.6g} at t = {worst['t']} against "
        f"{delay_envelope(t=worst['t']):.4g}: 2 client(s) compute s_i = 16..{max(plan.selection.sizes)}") in delay
    assert t0.startswith("t >= T_0") and "I-13" in t0
    delays = [row for row in report.table if row["quantity"] == "delay"]
    assert delays and all(row["envelope"] == pytest.approx(delay_envelope(t=row["t"])) for row in delays)
    assert not report.passed and len(report.runs) == 2
    json.dumps(report.to_dict(), allow_nan=False)


def test_vandijk_with_replacement_is_compared_with_the_with_replacement_epsilon_of_the_schedule(vandijk_case):
    data, plan = vandijk_case
    report = validate_vandijk_plan(plan=plan, dataset=data, clients=2, clipping_norm=0.5, seeds=(0,),
                                   sampling="with_replacement")
    spent, claimed, _ = report.claims
    assert report.runs[0].privacy["sampling"] == "with_replacement" and report.runs[0].privacy["accountant"] == "pld"
    accounting.clear_cache()  # computed afresh, not the ledger's memo
    independent = accounting.get_epsilon(segments=[(s / 10_000, 8.0, 1) for s in plan.selection.sizes],
                                         delta=plan.selection.delta, accountant="pld", sampling="with_replacement",
                                         dataset_size=10_000)
    assert spent.predicted == pytest.approx(independent.epsilon, rel=1e-6)
    assert spent.passed and spent.simulated == pytest.approx(spent.predicted, rel=1e-6)
    assert spent.predicted > plan.tight_rdp.epsilon  # not the plan's Poisson number
    assert "PLD, with_replacement sampling executed and accounted" in spent.detail
    assert claimed.verdict == "NO GUARANTEE" and claimed.simulated == spent.simulated  # max q_i > r0/sigma
    assert any(note.startswith("executed sampling: with_replacement") for note in report.notes)


def test_vandijk_with_replacement_the_accountant_refuses_is_not_accounted(vandijk_case, monkeypatch):
    data, plan = vandijk_case
    original = accounting.get_epsilon

    def refuse(**kwargs):
        if kwargs.get("sampling") == "with_replacement":
            raise ValueError("the PLD grid would be too large")
        return original(**kwargs)

    monkeypatch.setattr(accounting, "get_epsilon", refuse)
    report = validate_vandijk_plan(plan=plan, dataset=data, clients=2, clipping_norm=0.5, seeds=(0, 1),
                                   sampling="with_replacement")
    spent, claimed, _ = report.claims
    for claim in (spent, claimed):
        assert not claim.passed and claim.simulated is None and claim.verdict == "NOT ACCOUNTED"
        assert claim.detail.startswith("not accounted: spent: the PLD grid would be too large")
    assert "NOT ACCOUNTED  spent epsilon <= planned tight epsilon: not accounted" in report.statement()
    assert not report.passed and report.to_dict()["claims"][0]["not_accounted"]
    json.dumps(report.to_dict(), allow_nan=False)


def test_vandijk_sampling_is_checked(vandijk_case):
    data, plan = vandijk_case
    with pytest.raises(ValueError, match="sampling"):
        validate_vandijk_plan(plan=plan, dataset=data, clients=2, clipping_norm=0.5, seeds=(0,), sampling="shuffle")


def test_theorem5_recipe_keeps_delays_within_tau_and_distance_below_the_bound(small):
    report = validate_theorem5(dataset=small, clients=3, rounds=20, seeds=(0, 1))
    bound, delays = report.claims
    assert delays.passed and delays.simulated == 0.0
    assert bound.simulated < bound.predicted  # below the bound, yet t >= M_0 fails at this horizon: no guarantee
    assert bound.verdict == "NO GUARANTEE" and not bound.passed and "failing hypotheses" in bound.detail
    rows = [row for row in report.table if row["quantity"] == "dist_sq"]
    assert [row["round"] for row in rows] == list(range(20)) and rows[0]["q10"] <= rows[0]["q90"]


def test_fedsgd_dpc_distance_below_U_and_epsilon_within_target(small):
    report = validate_fedsgd_dpc(dataset=small, clients=10, mechanism="laplace", epsilon=20.0, seeds=(0, 1),
                                 rounds=8, clients_per_round=5)
    distance, spent = report.claims
    assert distance.passed and distance.simulated < distance.predicted
    assert spent.passed and spent.simulated == pytest.approx(20.0, rel=1e-9)  # round robin: exactly ceil(bT/N)
    predicted = [row["predicted"] for row in report.table]
    assert all(a > b for a, b in zip(predicted, predicted[1:], strict=False))  # the bound at t falls as 1/(t+gamma)
    with pytest.raises(ValueError, match="^rounds must be given at target_epsilon = 0.01: the planner's optimum is "
                                         "T = 0 rounds"):  # the page shows it under its Rounds box
        validate_fedsgd_dpc(dataset=small, clients=10, mechanism="laplace", epsilon=0.01, seeds=(0,))


def test_fedsgd_dpc_spent_epsilon_equal_to_the_target_up_to_rounding_passes(small):
    """20 rounds of all 5 clients: each client replies 20 times with ε/20 = 0.05, whose sum in floating point is
    1.0000000000000002, not 1 (the page's 'FAIL 1 <= 1'): equal up to rounding passes; 1e-9 above would not."""
    report = validate_fedsgd_dpc(dataset=small, clients=5, mechanism="laplace", epsilon=1.0, seeds=(0,), rounds=20,
                                 clients_per_round=5)
    spent = report.claims[1]
    assert sum([0.05] * 20) == 1.0000000000000002 and spent.simulated == 1.0000000000000002
    assert spent.verdict == "PASS" and "equal up to floating-point rounding" in spent.detail
    assert _claim("spent", 1.0 + 1e-9, 1.0, "<=", "", slack=1e-12).verdict == "FAIL"


def test_seeds_are_validated(small):
    with pytest.raises(ValueError, match="seeds must hold at least one seed"):
        validate_theorem5(dataset=small, clients=2, rounds=3, seeds=())


def test_progress_callback_sees_every_seed():
    from fedplan.planner.simulate.data import load_dataset
    from fedplan.planner.validate import validate_fedsgd_dpc

    calls = []
    report = validate_fedsgd_dpc(dataset=load_dataset("synthetic", n_samples=1000, n_features=5), clients=5,
                                 mechanism="gaussian", epsilon=20, rounds=5, clients_per_round=5, seeds=(0, 1, 2),
                                 on_run=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)] and len(report.runs) == 3


def test_report_summary_and_statement():
    from fedplan.planner.validate import Claim, ValidationReport

    claims = (Claim("a <= b", 1.0, 2.0, "<=", True, "1 <= 2", "src A"),
              Claim("c <= d", 3.0, 2.0, "<=", False, "3 <= 2", "src B"))
    report = ValidationReport(algorithm="x", seeds=(0, 1), claims=claims, table=(), runs=(), notes=("a note",))
    assert report.statement() == "PASS  a <= b: 1 <= 2 (src A)\nFAIL  c <= d: 3 <= 2 (src B)\na note"
    assert report.summary(full=False) == {"passed": False, "verdicts": {"PASS": 1, "FAIL": 1}, "seeds": [0, 1],
                                          "statement": report.statement()}
    full = report.summary(full=True)
    assert full["statement"] == report.statement() and full["claims"][1]["passed"] is False
