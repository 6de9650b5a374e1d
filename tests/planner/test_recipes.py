"""planner.recipes: the ε-first request mapped onto each recipe, answered in one shape."""

from __future__ import annotations

import math

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


def test_increasing_sizes_meets_the_delta_target_with_the_smallest_sigma(request_5_clients):
    result = plan("increasing-sizes", request_5_clients)
    head = result.headline
    assert head["claimed_delta"] <= 1e-6 and head["claimed_epsilon"] == 1.0
    # The same plan straight from planner.vandijk at the chosen σ, and a slightly smaller σ misses the target.
    direct = plan_vandijk(initial_size=16, client_size=10_000, epsilon=1.0, epochs=2.5,
                          sigma=head["noise_multiplier"], r0=1 / math.e, with_pld=False)
    assert direct.realised_rounds == head["rounds"] == result.schedule.rounds
    assert direct.tight_rdp.epsilon == pytest.approx(head["tight_epsilon"], rel=1e-12)
    smaller = plan_vandijk(initial_size=16, client_size=10_000, epsilon=1.0, epochs=2.5,
                           sigma=head["noise_multiplier"] - 1e-3, r0=1 / math.e, with_pld=False)
    assert smaller.selection.delta > 1e-6
    assert head["aggregated_noise"] == pytest.approx(math.sqrt(head["rounds"]) * head["noise_multiplier"])
    assert len(result.cumulative_epsilon) == head["rounds"]
    assert result.cumulative_epsilon[-1] == pytest.approx(head["tight_epsilon"], rel=1e-9)
    assert result.hypotheses_hold


def test_fedsgd_dpc_schedule_is_t_star_rounds_of_b_star_clients(request_5_clients, tmp_path):
    result = plan("fedsgd-dpc", request_5_clients)
    head = result.headline
    rows = result.schedule.rows()
    assert len(rows) == head["rounds"] >= 1
    assert {row["clients_per_round"] for row in rows} == {head["clients_per_round"]}
    assert rows[0]["laplace_scale"] == max(head["laplace_scale"])
    assert head["claimed_delta"] == 0.0
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


def test_dpscd_recipe_is_the_authors_ma128_sigma_with_the_tight_epsilon_of_the_same_schedule(request_5_clients):
    from fedplan.bounds import accounting, dpscd

    result = plan("dpscd", request_5_clients)
    head = result.headline
    assert head["rounds"] == 50_000 * 5 // (2 * 16) == result.schedule.rounds  # ⌊2.5·N/L⌋ = 7812
    ma = dpscd.calibrate_noise(target_epsilon=1.0, target_delta=1e-6, sample_rate=16 / 50_000, steps=7812,
                               accountant="ma128")
    assert head["noise_multiplier"] == ma.noise_multiplier and head["claimed_epsilon"] <= 1.0
    rdp = accounting.get_epsilon(sample_rate=16 / 50_000, noise_multiplier=ma.noise_multiplier, steps=7812,
                                 delta=1e-6, accountant="rdp")
    assert head["tight_epsilon"] <= rdp.epsilon <= head["claimed_epsilon"]  # PLD ≤ RDP ≤ the classic accountant


def test_adp2sgd_recipe_falls_back_to_the_tight_noise_below_theorem_2s_floor(request_5_clients):
    from fedplan.bounds import adp2sgd as xu

    result = plan("adp2sgd", request_5_clients)
    head = result.headline
    setting = xu.Setting(workers=5, examples_per_worker=10_000, batch_size=16, steps=7812, delta=1e-6)
    assert head["rounds"] == 7812 and xu.epsilon_floor(setting=setting).epsilon > 1.0  # the paper cannot certify 1
    assert head["claimed_epsilon"] is None and not result.hypotheses_hold
    tight = xu.tight_epsilon(setting=setting, noise_multiplier=head["noise_multiplier"])
    assert tight.epsilon == pytest.approx(head["tight_epsilon"], rel=1e-12) and tight.epsilon <= 1.0
    assert xu.tight_epsilon(setting=setting, noise_multiplier=head["noise_multiplier"] * 0.99).epsilon > 1.0


def test_mapa_recipe_spends_the_budget_per_edge_and_the_optimal_composition_is_below_it(request_5_clients):
    from fedplan.bounds.composition import best_composition, optimal_composition_epsilon

    result = plan("mapa", request_5_clients)
    head = result.headline
    uploads = math.ceil(7812 / 5)
    per_upload = head["per_upload_epsilon"]
    assert best_composition(epsilon=per_upload, delta=0.0, count=uploads, delta_slack=1e-6)[0] <= 1.0
    assert best_composition(epsilon=per_upload * (1 + 1e-9), delta=0.0, count=uploads, delta_slack=1e-6)[0] > 1.0
    assert head["claimed_epsilon"] == pytest.approx(1.0, rel=1e-9) and head["claimed_epsilon"] <= 1.0
    assert head["tight_epsilon"] == optimal_composition_epsilon(epsilon=per_upload, count=uploads, delta=1e-6)
    assert head["tight_epsilon"] < head["claimed_epsilon"]
    assert result.schedule.rounds == 7812
