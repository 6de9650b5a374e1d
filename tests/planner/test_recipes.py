"""planner.recipes: the ε-first request mapped onto each recipe, answered in one shape."""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest

from fedplan.planner.datasets import synthetic_logistic
from fedplan.planner.export import load_schedule_file, write_schedule
from fedplan.planner.recipes import RECIPES, RecipeInputs, plan
from fedplan.planner.vandijk import plan_vandijk


@pytest.fixture(scope="module")
def request_5_clients() -> RecipeInputs:
    X, y = synthetic_logistic(50_000, 20, seed=0)
    return RecipeInputs(target_epsilon=1.0, target_delta=1e-6, X=X, y=y, clients=5, epochs=2.5)


@pytest.fixture(scope="module")
def increasing_sizes(request_5_clients):
    return plan("increasing-sizes", request_5_clients)


def test_increasing_sizes_runs_the_papers_sizes_at_the_tight_sigma(increasing_sizes):
    from fedplan.bounds import accounting, pld

    head = increasing_sizes.headline
    # the paper's σ: the smallest whose claimed δ at ε meets the target, straight from planner.vandijk
    assert head["claimed_delta"] <= 1e-6 and head["claimed_epsilon"] == 1.0
    direct = plan_vandijk(initial_size=16, client_size=10_000, epsilon=1.0, epochs=2.5,
                          sigma=head["paper_noise_multiplier"], r0=1 / math.e, with_pld=False)
    assert direct.realised_rounds == head["rounds"] == increasing_sizes.schedule.rounds == 193
    assert head["paper_noise_multiplier"] == 7.5542  # the planner page's answer before plans were tight
    smaller = plan_vandijk(initial_size=16, client_size=10_000, epsilon=1.0, epochs=2.5,
                           sigma=head["paper_noise_multiplier"] - 1e-3, r0=1 / math.e, with_pld=False)
    assert smaller.selection.delta > 1e-6
    # what runs: the same sizes at the σ whose tight ε is within 1 % below the target
    segments = increasing_sizes.schedule.segments()
    assert [round(q * 10_000) for q, _, _ in segments for _ in range(_)] == list(direct.selection.sizes)
    assert head["noise_multiplier"] == pytest.approx(1.27439, abs=1e-5)  # ε 0.99996: within the error estimate
    assert 0.99 <= head["tight_epsilon"] <= 1.0 and head["unused_budget"] < 0.01
    # independent: dp-accounting's own Poisson steps, composed at half our spacing (a nested grid: a tighter bound)
    ours = accounting.get_epsilon(segments=segments, delta=1e-6)
    reference = pld.epsilon_at_spacing(segments, 1e-6, ours.pld_spacing / 2)
    assert head["tight_epsilon"] == pytest.approx(reference, rel=1e-3) and reference <= head["tight_epsilon"] <= 1.0
    rdp = accounting.get_epsilon(segments=segments, delta=1e-6, accountant="rdp")
    assert head["tight_epsilon"] < rdp.epsilon
    overspent = accounting.get_epsilon(segments=[(q, 0.99 * sigma, t) for q, sigma, t in segments], delta=1e-6)
    assert overspent.epsilon > 1.0  # the smallest σ, not just a safe one
    # the paper's σ spends a tenth of the budget
    assert head["paper_tight_epsilon"] == pytest.approx(0.1004, abs=5e-4) and head["paper_unused_budget"] > 0.89
    assert head["aggregated_noise"] == pytest.approx(math.sqrt(head["rounds"]) * head["noise_multiplier"])
    curve = increasing_sizes.epsilon_curve  # one point per round (each round its own size), PLD like the headline
    assert curve.rounds == tuple(range(1, head["rounds"] + 1)) and curve.epsilons[-1] == head["tight_epsilon"]
    assert curve.label == head["epsilon_label"] == "PLD, tight"
    assert increasing_sizes.hypotheses_hold


def test_noise_paper_runs_the_papers_sigma(request_5_clients, increasing_sizes):
    paper = plan("increasing-sizes", dataclasses.replace(request_5_clients, noise="paper"))
    assert paper.headline["noise_multiplier"] == increasing_sizes.headline["paper_noise_multiplier"] == 7.5542
    assert paper.headline["tight_epsilon"] == pytest.approx(increasing_sizes.headline["paper_tight_epsilon"],
                                                            rel=5e-3)
    assert paper.schedule.segments()[0][1] == 7.5542


def test_fedsgd_dpc_schedule_is_t_star_rounds_of_b_star_clients(request_5_clients, tmp_path):
    result = plan("fedsgd-dpc", request_5_clients)
    head = result.headline
    rows = result.schedule.rows()
    assert len(rows) == head["rounds"] >= 1
    assert {row["clients_per_round"] for row in rows} == {head["clients_per_round"]}
    assert rows[0]["laplace_scale"] == max(head["laplace_scale"])
    assert head["claimed_delta"] == 0.0
    assert head["rounds"] == 1 and result.notes[0].startswith(  # degenerate: said in plain words (issue 20)
        "A single round: at ε = 1 over 5 clients, Zhou et al.'s bound is smallest when the clients reply once.")
    # and its bound U(1, 5) = 44.339 is above the data's Y0 = ||θ0 - θ*||² = 41.946: no progress promised
    initial = result.schedule.metadata["constants"]["Y0"]
    assert head["bound"] == pytest.approx(44.3393, abs=1e-4) and initial == pytest.approx(41.9464, abs=1e-4)
    assert result.notes[1] == ("The bound after the run, E‖θ_T − θ*‖² ≤ 44.34, is not below the starting distance "
                               "‖θ₀ − θ*‖² = 41.95 estimated from the data: the paper promises no progress for this "
                               "plan.")
    path = write_schedule(result.schedule, tmp_path / "plan.json")
    assert load_schedule_file(path) == result.schedule


def test_every_recipe_answers_in_the_common_shape(request_5_clients):
    for name in RECIPES:
        result = plan(name, request_5_clients)
        assert result.recipe == name
        assert {"rounds", "claimed_epsilon", "claimed_delta", "tight_epsilon", "tight_accountant"} <= set(
            result.headline)
        assert result.headline["tight_epsilon"] <= request_5_clients.target_epsilon
        assert result.statement


@pytest.mark.parametrize(("field", "value", "message"), [
    ("target_epsilon", 0.0, "target_epsilon must be a real number in (0, inf); got 0"),
    ("target_delta", 1.0, "target_delta must be a real number in (0, 1); got 1"),
    ("clients", 0, "clients must be an integer in [1, 10]; got 0"),
    ("epochs", -1.0, "epochs must be a real number in (0, inf); got -1"),
])
def test_bad_requests_name_the_parameter(field, value, message):
    values = {"target_epsilon": 1.0, "target_delta": 1e-6, "clients": 2, "epochs": 1.0, field: value}
    with pytest.raises(ValueError) as error:
        RecipeInputs(X=np.zeros((10, 2)), y=np.zeros(10), **values)
    assert str(error.value) == message


def test_unknown_recipe_is_an_error(request_5_clients):
    with pytest.raises(ValueError, match="recipe must be one of"):
        plan("nope", request_5_clients)


def test_dpscd_recipe_runs_the_tight_sigma_with_the_authors_ma128_beside_it(request_5_clients):
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    from fedplan.bounds import dpscd

    result = plan("dpscd", request_5_clients)
    head = result.headline
    assert head["rounds"] == 50_000 * 5 // (2 * 16) == result.schedule.rounds  # ⌊2.5·N/L⌋ = 7812
    ma = dpscd.calibrate_noise(target_epsilon=1.0, target_delta=1e-6, sample_rate=16 / 50_000, steps=7812,
                               accountant="ma128")
    assert head["paper_noise_multiplier"] == ma.noise_multiplier and head["claimed_epsilon"] <= 1.0
    assert head["noise_multiplier"] < 0.7 * ma.noise_multiplier
    reference = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    reference.compose(dp_event.PoissonSampledDpEvent(16 / 50_000, dp_event.GaussianDpEvent(head["noise_multiplier"])),
                      7812)
    assert 0.99 <= head["tight_epsilon"] <= 1.0
    assert head["tight_epsilon"] == pytest.approx(reference.get_epsilon(1e-6), rel=2e-3)
    assert head["paper_unused_budget"] > 0.8  # MA128's σ spends 15 % of the budget


def test_adp2sgd_recipe_exports_fedplans_noise_multiplier_twice_xus_z(request_5_clients):
    from fedplan.bounds import accounting
    from fedplan.bounds import adp2sgd as xu

    result = plan("adp2sgd", request_5_clients)
    head = result.headline
    setting = xu.Setting(workers=5, examples_per_worker=10_000, batch_size=16, steps=7812, delta=1e-6)
    assert head["rounds"] == 7812 and head["worker_updates"] == 1563
    assert xu.epsilon_floor(setting=setting).epsilon > 1.0  # the paper cannot certify 1
    assert head["claimed_epsilon"] is None and head["paper_noise_multiplier"] is None and not result.hypotheses_hold
    sigma = head["noise_multiplier"]
    assert head["noise_to_sensitivity"] == sigma / 2
    ((start, values),) = result.schedule.change_points
    assert values["noise_multiplier"] == sigma and values["noise_to_sensitivity"] == sigma / 2
    assert result.schedule.privacy["sampling"] == "fixed_size"
    assert result.schedule.privacy["neighboring_relation"] == "replace_one"
    assert 0.99 <= head["tight_epsilon"] <= 1.0
    # independent: WBK's RDP of the same per-worker steps at Xu's z bounds the PLD answer from above
    wbk = xu.tight_epsilon(setting=setting, noise_to_sensitivity=sigma / 2, sampling="per_worker")
    assert head["tight_epsilon"] < wbk.epsilon < 2.5  # RDP of WOR is loose: 2.004 here (ERRATA ACC-7: 4.62 vs 2.25)
    # read as Opacus's σ (noise / clip on the sum), z would overspend the budget
    misread = accounting.get_epsilon(sample_rate=16 / 10_000, noise_multiplier=sigma / 2, steps=1563, delta=1e-6,
                                     sampling="fixed_size", neighboring_relation="replace_one", dataset_size=10_000)
    assert misread.epsilon > 2.0


def test_mapa_recipe_tight_per_upload_epsilon_spends_the_budget_by_optimal_composition(request_5_clients):
    from fedplan.bounds.composition import best_composition, optimal_composition_epsilon

    result = plan("mapa", request_5_clients)
    head = result.headline
    uploads = math.ceil(7812 / 5)
    per_upload, paper = head["per_upload_epsilon"], head["paper_per_upload_epsilon"]
    assert optimal_composition_epsilon(epsilon=per_upload, count=uploads, delta=1e-6) <= 1.0
    assert optimal_composition_epsilon(epsilon=per_upload * (1 + 1e-6), count=uploads, delta=1e-6) > 1.0
    assert best_composition(epsilon=paper, delta=0.0, count=uploads, delta_slack=1e-6)[0] <= 1.0
    assert best_composition(epsilon=paper * (1 + 1e-9), delta=0.0, count=uploads, delta_slack=1e-6)[0] > 1.0
    assert per_upload > 1.25 * paper  # less noise per upload for the same budget (0.00599 against 0.00465)
    assert head["tight_epsilon"] == optimal_composition_epsilon(epsilon=per_upload, count=uploads, delta=1e-6)
    assert 0.99 <= head["tight_epsilon"] <= 1.0 and head["paper_unused_budget"] > 0.2
    assert result.schedule.rounds == 7812 and result.schedule.privacy["releases"] == uploads


def test_the_epsilon_curve_is_the_headlines_accountant_at_fewer_rounds(request_5_clients):
    """One accountant, named (issue 20): the chart's ε is the headline's (PLD, at its spacing), never RDP's."""
    from fedplan.bounds import accounting

    result = plan("dpscd", request_5_clients)
    head, curve = result.headline, result.epsilon_curve
    assert curve.label == head["epsilon_label"] == "PLD, tight" and curve.unit == "round"
    assert curve.rounds == tuple(round(7812 * k / 8) for k in range(1, 9))  # 977, 1953, ..., 7812
    assert curve.epsilons[-1] == head["tight_epsilon"]
    assert all(a < b for a, b in zip(curve.epsilons, curve.epsilons[1:], strict=False))
    # independent: the adaptive PLD of the first 1953 rounds (its own spacing), and RDP's larger bound there
    q, sigma = 16 / 50_000, head["noise_multiplier"]
    alone = accounting.get_epsilon(sample_rate=q, noise_multiplier=sigma, steps=1953, delta=1e-6)
    assert curve.epsilons[1] == pytest.approx(alone.epsilon, rel=2e-3) and curve.epsilons[1] >= alone.epsilon * 0.999
    rdp = accounting.get_epsilon(sample_rate=q, noise_multiplier=sigma, steps=1953, delta=1e-6, accountant="rdp")
    assert curve.epsilons[1] < rdp.epsilon
    xu = plan("adp2sgd", request_5_clients)
    assert xu.epsilon_curve.label == xu.headline["epsilon_label"] == "PLD upper bound"  # fixed-size, replace-one
    assert xu.epsilon_curve.rounds[-1] == xu.headline["worker_updates"] == 1563
    assert xu.epsilon_curve.unit == "update of one worker" and xu.epsilon_curve.epsilons[-1] == xu.headline[
        "tight_epsilon"]


def test_no_increasing_schedule_names_the_requests_fields_and_the_nearest_values(request_5_clients):
    from fedplan.planner.recipes import nearest_increasing_sizes

    crowded = dataclasses.replace(request_5_clients, clients=100)
    with pytest.raises(ValueError) as error:
        plan("increasing-sizes", crowded)
    message = str(error.value)
    assert message.startswith("no increasing-sizes plan: no noise multiplier σ in [1.2, 200]")
    assert "clients = 100 (500 records each)" in message and "L211-219" in message
    assert message.endswith("lower batch_size, clients or epochs, raise target_epsilon, or choose another recipe")
    assert "grad_computations" not in message and "range" not in message  # no control the page lacks
    nearest = nearest_increasing_sizes(crowded, largest_epsilon=100.0, time_budget=30.0)
    assert nearest["clients"] == 12 and nearest["batch_size"] == 1 and "epochs" not in nearest
    plan("increasing-sizes", dataclasses.replace(crowded, clients=12))  # plans
    with pytest.raises(ValueError, match="no increasing-sizes plan"):
        plan("increasing-sizes", dataclasses.replace(crowded, clients=13))


def test_fedsgd_dpc_refusals_name_the_clients_and_the_right_direction(request_5_clients):
    with pytest.raises(ValueError, match=r"^clients must be an integer in \[2, 50000\]; got 1"):
        plan("fedsgd-dpc", dataclasses.replace(request_5_clients, clients=1))
    with pytest.raises(ValueError, match="T\\* = 0 rounds .* over 10 clients.*raise target_epsilon or use fewer "
                                         "clients$"):
        plan("fedsgd-dpc", dataclasses.replace(request_5_clients, clients=10))


def test_an_unused_budget_is_explained_by_what_the_calibration_did():
    """The note used to say 'σ is the end of the range searched' whatever happened; under load the PLD calibration
    falls back to RDP's σ (the default plan's σ 1.43113 with tight ε 0.8043 instead of 1.27439 with 0.99996)."""
    from types import SimpleNamespace

    from fedplan.planner.recipes import _unused_note

    fallback = SimpleNamespace(fallback_reason="PLD did not finish within the time budget of 30 s; RDP answer "
                               "reported", accountant="rdp", bound="upper bound", range_note=None)
    assert _unused_note(0.1957, 1.43113, fallback) == (
        "The tight ε is 19.6 % below the target: σ = 1.43113 is the RDP upper bound calibration (PLD did not finish "
        "within the time budget of 30 s; RDP answer reported). Planning again when the server is less busy may give "
        "a smaller σ.")
    at_end = SimpleNamespace(fallback_reason=None, range_note="noise_multiplier = 1e+07 is the end of its range")
    assert _unused_note(0.5, 1e7, at_end) == ("The tight ε is 50.0 % below the target: noise_multiplier = 1e+07 is "
                                              "the end of its range")
    # a target above PLD's limit at the end of the range (target 1e9, σ = 0.01): the range is the reason, not the
    # RDP answer, and nothing suggests that a less busy server would help
    both = SimpleNamespace(fallback_reason="target ε 1e+09 is above 100000; RDP answer reported", accountant="rdp",
                           bound="upper bound", range_note="Every σ in its range meets the target")
    assert _unused_note(0.999, 0.01, both) == ("The tight ε is 99.9 % below the target: every σ in its range meets "
                                               "the target")
    beyond = SimpleNamespace(**{**vars(both), "range_note": None})
    assert "less busy" not in _unused_note(0.999, 0.01, beyond)
    jump = SimpleNamespace(fallback_reason=None, range_note=None)
    assert _unused_note(0.02, 3.0, jump) == ("The tight ε is 2.0 % below the target: the tight ε jumps past the "
                                             "target just below σ = 3, the smallest σ it certifies.")


def test_the_plans_comparison_and_calibration_share_one_time_budget(request_5_clients, monkeypatch):
    # API fuzz (fixed seed 0, 10 inputs): Plan(sampling="with_replacement") spent 9 s on the paper's σ and then its
    # whole 30 s budget on the calibration, 41 s in all. The calibration now gets what the comparison left.
    from fedplan.bounds import accounting

    budgets, get_epsilon = [], accounting.get_epsilon

    def slow_comparison(**kwargs):
        if kwargs.get("relative_tolerance") is not None:  # the paper's σ, compared at a coarser tolerance
            time.sleep(1.5)
        return get_epsilon(**kwargs)

    calibrate = accounting.calibrate_noise_multiplier
    monkeypatch.setattr(accounting, "get_epsilon", slow_comparison)
    monkeypatch.setattr(accounting, "calibrate_noise_multiplier",
                        lambda **kwargs: budgets.append(kwargs.get("time_budget")) or calibrate(**kwargs))
    monkeypatch.setattr(accounting, "DEFAULT_TIME_BUDGET", 20.0)
    plan("increasing-sizes", request_5_clients)
    assert budgets[-1] is not None and 1.0 <= budgets[-1] <= 20.0 - 1.5  # the last: the run's σ over its phases
