"""planner.plan_validation and ``fedplan validate plan``: exactly a plan's schedule on its engine, progress per round.

The van Dijk schedule is written here by hand (sizes 10..29, σ = 2, N_c = 1000), so every expected number is computed
independently: the ε of its releases by dp-accounting's RDP accountant, the step sizes η0/(1 + βt) by hand. The Zhou
plan is the planner's default (ε = 1, 5 clients of 10 000 synthetic examples), whose printed bound U(1, 5) = 44.339
test_recipes pins. The A(DP)²SGD plan (2 000 examples over 4 clients, batch 16, 2.5 epochs: T = 312 iterations, 78 per
worker) is checked against dp-accounting's RDP of 78 without-replacement steps and Theorem 1 written out by hand. The
MAPA plan (the same data and clients: T = 312 Cloud updates, 78 uploads per edge in round robin) is checked against
bounds.composition's optimal composition of 78 pure-ε uploads and Theorem 4 written out by hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedplan.planner.cli import main
from fedplan.planner.datasets import synthetic_logistic
from fedplan.planner.export import write_schedule
from fedplan.planner.plan_validation import engine_of, validate_vandijk_schedule
from fedplan.planner.schedule import Schedule
from fedplan.planner.simulate.data import Dataset
from fedplan.planner.tasks.plan import Plan
from fedplan.planner.tasks.validate import ValidateVandijk
from fedplan.planner.tasks.validate_plan import ValidatePlan

SIZES = list(range(10, 30))
SIGMA = 2.0
PRIVACY = {"mechanism": "gaussian", "unit": "example", "sampling": "poisson", "neighboring_relation":
           "add_or_remove_one", "dataset_size": 1000, "delta": 1e-5, "epsilon": 0.9, "accountant": "pld",
           "bound": "tight", "target_epsilon": 1.0}


def vandijk_schedule(**privacy) -> Schedule:
    rows = [{"sample_size": size, "sample_rate": size / 1000, "noise_multiplier": SIGMA} for size in SIZES]
    return Schedule.from_rows(rows, privacy={**PRIVACY, **privacy})


@pytest.fixture(scope="module")
def data() -> Dataset:
    X, y = synthetic_logistic(2000, 4, seed=0)
    return Dataset(name="synthetic", task="binary", X_train=X, y_train=y, X_test=X[:0], y_test=y[:0])


def test_a_vandijk_schedule_runs_as_written_with_progress_in_rounds_over_the_seeds(data):
    from dp_accounting import dp_event, rdp

    calls = []
    report = validate_vandijk_schedule(schedule=vandijk_schedule(), dataset=data, clients=2, clipping_norm=0.5,
                                       learning_rate=0.2, decay=0.01, seeds=(0, 1),
                                       progress=lambda done, total: calls.append((done, total)))
    executed = report.runs[0].executed.rows()
    assert [row["sample_size"] for row in executed] == SIZES and {row["noise_multiplier"] for row in executed} == {2.0}
    starts = np.concatenate(([0], np.cumsum(SIZES)[:-1]))
    assert [row["learning_rate"] for row in executed] == pytest.approx(list(0.2 / (1 + 0.01 * starts)), rel=1e-12)
    assert all(run.config["sampling"] == "poisson" and run.config["client_sizes"] == [1000, 1000]
               for run in report.runs)
    # the bar moves within the first seed: one call per round of each seed, in rounds over both seeds
    assert calls[0] == (1, 40) and calls[19] == (20, 40) and calls[-1] == (40, 40)
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:], strict=False))
    same, budget, lemma3 = report.claims
    accountant = rdp.RdpAccountant()  # dp-accounting's RDP, independent of fedplan's composition
    for size in SIZES:
        accountant.compose(dp_event.PoissonSampledDpEvent(size / 1000, dp_event.GaussianDpEvent(SIGMA)))
    assert same.verdict == "PASS" and same.predicted == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-3)
    assert same.simulated == pytest.approx(same.predicted, rel=1e-12)  # the run made exactly the planned releases
    assert budget.verdict == "PASS" and (budget.simulated, budget.predicted) == (0.9, 1.0)
    assert lemma3.verdict == "NO GUARANTEE" and not report.passed
    assert report.notes[1] == ("The run's epsilon is the RDP upper bound of its releases, which are the plan's: their "
                               "PLD (tight) epsilon is the plan's 0.9 at delta = 1e-05.")


def test_a_plan_over_its_budget_fails_and_the_wrong_clients_or_engine_are_refused_by_name(data):
    over = validate_vandijk_schedule(schedule=vandijk_schedule(epsilon=1.2), dataset=data, clients=2,
                                     clipping_norm=0.5, learning_rate=0.2, seeds=(0,))
    assert over.claims[1].verdict == "FAIL"
    with pytest.raises(ValueError, match=r"^clients must split the plan's 2000 examples into its clients of N_c = "
                                         r"1000 records; got clients = 3 \(666 records each\)"):
        validate_vandijk_schedule(schedule=vandijk_schedule(), dataset=data, clients=3, clipping_norm=0.5,
                                  learning_rate=0.2)
    with pytest.raises(ValueError, match="^sampling must be one the van Dijk engine executes .* got|accounts "
                                         "'fixed_size'"):
        validate_vandijk_schedule(schedule=vandijk_schedule(sampling="fixed_size"), dataset=data, clients=2,
                                  clipping_norm=0.5, learning_rate=0.2)
    dpscd = Schedule.from_rows([{"sample_rate": 0.01, "batch_size": 16, "noise_multiplier": 1.0}] * 3,
                               privacy=PRIVACY)
    with pytest.raises(ValueError, match="^schedule must be a plan of one of the recipes increasing-sizes, "
                                         "fedsgd-dpc, dpscd, adp2sgd, mapa .*metadata recipe = dpscd.*metadata recipe "
                                         "= adp2sgd.*metadata recipe = mapa.* no engine runs this plan$"):
        engine_of(dpscd)


@pytest.fixture(scope="module")
def zhou_plan():
    return Plan(recipe="fedsgd-dpc").run().result.schedule


def test_the_zhou_plan_runs_its_own_rounds_clients_noise_and_bound(zhou_plan):
    calls = []
    report = ValidatePlan(plan_schedule=zhou_plan, seeds=(0, 1)).run(progress=lambda *call: calls.append(call))
    bound, spent = report.result.claims
    assert bound.predicted == pytest.approx(44.339, abs=5e-4)  # the plan's U(T*, b*), test_recipes' number
    assert bound.verdict == "PASS" and spent.verdict == "PASS" and spent.simulated == 1.0
    scale = zhou_plan.change_points[0][1]["laplace_scale"]
    for run in report.result.runs:
        assert run.config["rounds"] == 1 and run.config["clients_per_round"] == 5
        assert run.executed.rows()[0]["noise_scale"] == scale  # the plan's Laplace scale, not recalibrated
        assert run.config["regularization"] == 0.001  # the plan's constants' model
    assert calls == [(1, 2), (1, 2), (2, 2), (2, 2)]  # each round of each seed, then its seed's end


def test_validate_plan_on_the_command_line_reads_the_exported_plan(zhou_plan, tmp_path, capsys):
    path = write_schedule(zhou_plan, tmp_path / "plan.json")
    code = main(["validate", "plan", "--schedule", str(path), "--seeds", "0", "--json"])
    output = json.loads(capsys.readouterr().out)
    assert code == 0 and [claim["verdict"] for claim in output["claims"]] == ["PASS", "PASS"]
    assert output["claims"][0]["predicted"] == pytest.approx(44.339, abs=5e-4)
    code = main(["validate", "plan", "--schedule", str(path), "--clients", "4"])
    assert code == 2 and capsys.readouterr().err == ("fedplan: error: clients must be the plan's 5 (its constants and "
                                                     "noise are for 5 clients); got 4: give the plan's clients\n")


def test_validate_vandijk_reports_progress_within_a_seed():
    """The Validate page's bar stayed at 0 % through the first seed: progress came once per seed."""
    calls = []
    request = ValidateVandijk(initial_size=16, client_size=10_000, grad_computations=3000, noise_multiplier=8,
                              target_epsilon=1, r0="1/e", variant="paper", learning_rate=0.2, no_pld=True, clients=2,
                              clipping_norm=0.5, n_samples=22_000, n_features=4, seeds=(0, 1))
    request.run(progress=lambda *call: calls.append(call))
    rounds = calls[-1][1] // 2
    assert rounds > 1 and calls[0] == (1, 2 * rounds) and (rounds // 2, 2 * rounds) in calls


@pytest.fixture(scope="module")
def dpscd_plan():
    return Plan(recipe="dpscd", target_epsilon=1.0, n_samples=2000, n_features=4).run().result.schedule


def test_a_dpscd_plan_runs_its_own_iterations_batches_and_noise(dpscd_plan, data):
    """The DP-SCD plan (L = 16 of N = 2000, T = ⌊2.5·2000/16⌋ = 312, the tight σ) runs as written: the run's
    iterations, batch and σ are the schedule's, and its RDP ledger is dp-accounting's RDP of those releases."""
    from dp_accounting import dp_event, rdp

    from fedplan.planner.plan_validation import validate_dpscd_schedule

    assert engine_of(dpscd_plan) == "dpscd" and dpscd_plan.rounds == 312
    (_, values), = dpscd_plan.change_points
    ticks = []
    report = validate_dpscd_schedule(schedule=dpscd_plan, dataset=data, clipping_norm=0.1, seeds=(0, 1),
                                     progress=lambda done, total: ticks.append((done, total)))
    assert [claim.verdict for claim in report.claims] == ["PASS", "PASS"]
    for run in report.runs:
        assert (run.config["steps"], run.config["batch_size"]) == (312, 16)
        assert run.config["noise_multiplier"] == values["noise_multiplier"] and run.config["sampling"] == "poisson"
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(16 / 2000, dp_event.GaussianDpEvent(values["noise_multiplier"])),
                       312)
    independent = accountant.get_epsilon(dpscd_plan.privacy["delta"])
    assert report.claims[0].simulated <= independent * (1 + 1e-9)  # ours converts RDP at least as tightly
    assert report.claims[0].simulated >= 0.9 * independent
    assert report.claims[1].simulated == dpscd_plan.privacy["epsilon"] <= 1.0
    assert ticks[-1] == (624, 624) and ticks[0][0] < 312  # per iteration over both seeds
    assert {row["quantity"] for row in report.table} == {"loss"}
    ours = ValidatePlan(plan_schedule=dpscd_plan, n_samples=2000, n_features=4, seeds=(0,)).run()
    assert ours.values["claims"][0]["verdict"] == "PASS"


def test_a_dpscd_plan_is_refused_for_a_sampling_or_data_its_run_cannot_keep(dpscd_plan, data):
    from fedplan.planner.plan_validation import validate_dpscd_schedule

    shuffled = Schedule(rounds=dpscd_plan.rounds, change_points=dpscd_plan.change_points,
                        metadata=dpscd_plan.metadata, privacy={**dpscd_plan.privacy, "sampling": "shuffle"})
    with pytest.raises(ValueError, match=r"^sampling must be one the DP-SCD engine executes \(poisson, fixed_size\) "
                                         r"to validate this plan; the plan accounts 'shuffle'"):
        validate_dpscd_schedule(schedule=shuffled, dataset=data, clipping_norm=0.1)
    three = Dataset(name="iris", task="multiclass", X_train=data.X_train, y_train=data.y_train % 3,
                    X_test=data.X_test, y_test=data.y_test)
    with pytest.raises(ValueError, match="^dataset must be a binary task to validate a DP-SCD plan"):
        validate_dpscd_schedule(schedule=dpscd_plan, dataset=three, clipping_norm=0.1)


@pytest.fixture(scope="module")
def adp2sgd_plan():
    return Plan(recipe="adp2sgd", target_epsilon=1.0, n_samples=2000, n_features=4, clients=4).run().result.schedule


def test_an_adp2sgd_plan_runs_its_iterations_in_round_robin_and_keeps_its_epsilon(adp2sgd_plan, data):
    """T = ⌊2.5·2000/16⌋ = 312 iterations of 4 workers of 500 records: round robin gives each worker the plan's
    ⌈312/4⌉ = 78 updates, so the run's ledger (RDP, WBK'19 Thm 27) is that of 78 steps sampling 16 of 500 without
    replacement at Xu's z = σ/2 (dp-accounting's replace-one RDP here), and Theorem 1 is NO GUARANTEE (round robin)."""
    from dp_accounting import NeighboringRelation, dp_event, rdp

    from fedplan.planner.plan_validation import validate_adp2sgd_schedule

    assert engine_of(adp2sgd_plan) == "adp2sgd" and adp2sgd_plan.rounds == 78
    (_, values), = adp2sgd_plan.change_points
    sigma = values["noise_multiplier"]
    ticks = []
    report = validate_adp2sgd_schedule(schedule=adp2sgd_plan, dataset=data, clients=4, learning_rate=0.5,
                                       seeds=(0, 1), progress=lambda done, total: ticks.append((done, total)))
    spent, budget, theorem1 = report.claims
    assert spent.verdict == "PASS" and budget.verdict == "PASS" and not report.passed
    for run in report.runs:
        assert run.config["worker_updates"] == [78, 78, 78, 78] and max(run.privacy["worker_updates"]) == 78
        assert (run.config["steps"], run.config["batch_size"], run.config["client_sizes"]) == (312, 16, [500] * 4)
        assert run.config["noise_to_sensitivity"] == sigma / 2 and run.config["worker_order"] == "round_robin"
        assert run.config["noise_multiplier"] == sigma  # fedplan's σ of the same noise, the plan's: 2z
        assert run.config["topology"] == "ring" and run.config["staleness"] == "fixed"
    accountant = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
    accountant.compose(dp_event.SampledWithoutReplacementDpEvent(500, 16, dp_event.GaussianDpEvent(sigma / 2)), 78)
    independent = accountant.get_epsilon(1e-6)
    assert spent.predicted <= independent * (1 + 1e-9) and spent.predicted >= 0.9 * independent
    assert spent.simulated == spent.predicted  # the busiest worker made exactly the plan's 78 updates
    assert budget.simulated == adp2sgd_plan.privacy["epsilon"] <= 1.0 and budget.predicted == 1.0
    # Theorem 1 on unit rows (L = 1/4, F(0) = log 2, varsigma^2, v^2 <= 1, d = 4), eta = 0.5/B, noise std sigma on
    # the sum, K = 4, T = 312: 2 log2 K/(eta_bar T) + 2 eta_bar L/K (1/B + 6 + d (sigma/B)^2)
    by_hand = 2 * np.log(2) * 4 / (0.5 * 312) + 2 * 0.5 * 0.25 / 4 * (1 / 16 + 6 + 4 * (sigma / 16) ** 2)
    assert theorem1.predicted == pytest.approx(by_hand, rel=1e-9) and theorem1.verdict == "NO GUARANTEE"
    assert any(name.startswith("k^t drawn at random") for name in theorem1.failing_hypotheses)
    assert theorem1.simulated == pytest.approx(np.mean([run.column("grad_norm_sq").mean() for run in report.runs]))
    assert ticks[-1] == (624, 624) and ticks[0][0] < 312  # per iteration over both seeds
    assert {row["quantity"] for row in report.table} == {"accuracy", "loss"}


def test_an_adp2sgd_plan_is_refused_for_other_clients_or_a_sampling_its_run_cannot_keep(adp2sgd_plan, data):
    from fedplan.planner.plan_validation import validate_adp2sgd_schedule

    with pytest.raises(ValueError, match=r"^clients must be the plan's 4 \(its per-worker epsilon is for one worker on "
                                         r"each of its 4 clients\); got 5: give the plan's clients$"):
        validate_adp2sgd_schedule(schedule=adp2sgd_plan, dataset=data, clients=5, learning_rate=0.5)
    poisson = Schedule(rounds=adp2sgd_plan.rounds, change_points=adp2sgd_plan.change_points,
                       metadata=adp2sgd_plan.metadata, privacy={**adp2sgd_plan.privacy, "sampling": "poisson"})
    with pytest.raises(ValueError, match=r"^sampling must be one the A\(DP\)²SGD engine executes \(fixed_size\) to "
                                         r"validate this plan; the plan accounts 'poisson'"):
        validate_adp2sgd_schedule(schedule=poisson, dataset=data, clients=4, learning_rate=0.5)
    three = Dataset(name="iris", task="multiclass", X_train=data.X_train, y_train=data.y_train % 3,
                    X_test=data.X_test, y_test=data.y_test)
    with pytest.raises(ValueError, match="^dataset must be a binary task .* 'iris' is multiclass"):
        validate_adp2sgd_schedule(schedule=adp2sgd_plan, dataset=three, clients=4, learning_rate=0.5)
    pair = Plan(recipe="adp2sgd", n_samples=2000, n_features=4, clients=2).run().result.schedule
    with pytest.raises(ValueError, match=r"^clients must be >= 3 to validate an adp2sgd plan .*; got 2"):
        validate_adp2sgd_schedule(schedule=pair, dataset=data, clients=2, learning_rate=0.5)


def test_validate_plan_on_the_command_line_runs_an_exported_adp2sgd_plan(tmp_path, capsys):
    path = tmp_path / "adp2sgd.json"
    data = ["--n-samples", "2000", "--n-features", "4", "--clients", "4"]
    assert main(["plan", "--recipe", "adp2sgd", *data, "--out", str(path)]) == 0
    capsys.readouterr()
    code = main(["validate", "plan", "--schedule", str(path), *data, "--learning-rate", "0.5", "--seeds", "0",
                 "--json"])
    output = json.loads(capsys.readouterr().out)
    assert code == 0 and [claim["verdict"] for claim in output["claims"]] == ["PASS", "PASS", "NO GUARANTEE"]
    assert output["runs"][0]["config"]["worker_updates"] == [78, 78, 78, 78]
    code = main(["validate", "plan", "--schedule", str(path), "--n-samples", "2000", "--n-features", "4"])
    assert code == 2 and capsys.readouterr().err.startswith("fedplan: error: clients must be the plan's 4 ")


@pytest.fixture(scope="module")
def mapa_plan():
    return Plan(recipe="mapa", target_epsilon=1.0, n_samples=2000, n_features=4, clients=4).run().result.schedule


def test_a_mapa_plan_runs_its_uploads_in_round_robin_and_keeps_its_epsilon(mapa_plan, data):
    """T = ⌊2.5·2000/16⌋ = 312 Cloud updates over 4 edges in turn: each makes the plan's ⌈312/4⌉ = 78 uploads, whose
    optimal composition at the plan's per-upload ε is the plan's; each stage's mean ‖∇f(x_t)‖² is under Theorem 4 with
    the unit-row constants L = 1/4, σ = 2, F₀ = log 2 (staleness K − 1 = 3 ≤ the plan's τ_max = 5, nothing clipped)."""
    from fedplan.bounds import composition
    from fedplan.planner.plan_validation import validate_mapa_schedule

    assert engine_of(mapa_plan) == "mapa" and mapa_plan.rounds == 312
    per_upload = mapa_plan.privacy["epsilon_per_release"]
    ticks = []
    report = validate_mapa_schedule(schedule=mapa_plan, dataset=data, clients=4, seeds=(0, 1),
                                    progress=lambda done, total: ticks.append((done, total)))
    spent, budget, *stages = report.claims
    assert report.passed and [claim.verdict for claim in report.claims] == ["PASS"] * len(report.claims)
    for run in report.runs:
        assert run.config["uploads"] == [78, 78, 78, 78] and run.config["upload_order"] == "round_robin"
        assert run.delays["max_delay"] == 3 and run.config["epsilon"] == [per_upload] * 4
        assert [row["learning_rate"] for row in run.rows] == [row["learning_rate"] for row in mapa_plan.rows()]
    independent = composition.optimal_composition_epsilon(epsilon=per_upload, count=78, delta=1e-6)
    assert spent.simulated == spent.predicted == independent <= 1.0
    assert budget.simulated == mapa_plan.privacy["epsilon"] and budget.predicted == 1.0
    (_, first), *_ = mapa_plan.change_points
    gamma, moment = first["learning_rate"], 4 * 5 * (first["sensitivity"] / per_upload) ** 2  # N(N+1)(dS/eps)^2
    length = mapa_plan.change_points[1][0]  # stage 1's updates, t = 1..length
    by_hand = 2 * np.log(2) / (length * gamma) + 2 * (2**2 / 16 + moment) * 0.25 * gamma
    assert len(stages) == len(mapa_plan.change_points) and stages[0].predicted == pytest.approx(by_hand, rel=1e-9)
    assert ticks[-1] == (624, 624) and ticks[0][0] < 312  # per update over both seeds
    assert {row["quantity"] for row in report.table} == {"accuracy", "loss", "stage"}


def test_a_mapa_plan_over_more_edges_than_its_staleness_bound_has_no_convergence_guarantee(data):
    from fedplan.planner.plan_validation import validate_mapa_schedule

    plan = Plan(recipe="mapa", n_samples=2000, n_features=4, clients=8).run().result.schedule
    report = validate_mapa_schedule(schedule=plan, dataset=data, clients=8)
    assert [claim.verdict for claim in report.claims[:2]] == ["PASS", "PASS"]
    assert {claim.verdict for claim in report.claims[2:]} == {"NO GUARANTEE"}
    assert report.claims[2].failing_hypotheses == ("measured tau(t) <= tau_max: 7 <= 5",)
    assert report.runs[0].config["uploads"] == [39] * 8


def test_a_mapa_plan_is_refused_for_other_clients_or_data_its_run_cannot_keep(mapa_plan, data):
    from fedplan.planner.plan_validation import validate_mapa_schedule

    with pytest.raises(ValueError, match=r"^clients must be the plan's 4 \(its per-upload epsilon and stages are for "
                                         r"one edge on each of its 4 clients\); got 5: give the plan's clients$"):
        validate_mapa_schedule(schedule=mapa_plan, dataset=data, clients=5)
    narrow = Dataset(name="narrow", task="binary", X_train=data.X_train[:, :3], y_train=data.y_train,
                     X_test=data.X_test[:, :3], y_test=data.y_test)
    with pytest.raises(ValueError, match=r"^dataset must have the plan's N = 4 features .*'narrow' has 3"):
        validate_mapa_schedule(schedule=mapa_plan, dataset=narrow, clients=4)
    three = Dataset(name="iris", task="multiclass", X_train=data.X_train, y_train=data.y_train % 3,
                    X_test=data.X_test, y_test=data.y_test)
    with pytest.raises(ValueError, match="^dataset must be a binary task .* 'iris' is multiclass"):
        validate_mapa_schedule(schedule=mapa_plan, dataset=three, clients=4)


def test_validate_plan_on_the_command_line_runs_an_exported_mapa_plan(tmp_path, capsys):
    path = tmp_path / "mapa.json"
    data = ["--n-samples", "2000", "--n-features", "4", "--clients", "4"]
    assert main(["plan", "--recipe", "mapa", *data, "--out", str(path)]) == 0
    capsys.readouterr()
    code = main(["validate", "plan", "--schedule", str(path), *data, "--seeds", "0", "--json"])
    output = json.loads(capsys.readouterr().out)
    assert code == 0 and {claim["verdict"] for claim in output["claims"]} == {"PASS"}
    assert output["runs"][0]["config"]["uploads"] == [78, 78, 78, 78]
    code = main(["validate", "plan", "--schedule", str(path), "--n-samples", "2000", "--n-features", "4"])
    assert code == 2 and capsys.readouterr().err.startswith("fedplan: error: clients must be the plan's 4 ")
