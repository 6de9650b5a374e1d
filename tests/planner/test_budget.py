"""fedplan.Budget: a training loop's steps accounted against its plan; the step that would overspend is refused."""

from __future__ import annotations

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

import fedplan
from fedplan.planner.export import write_schedule

DELTA = 1e-5


@pytest.fixture(scope="module")
def dp_sgd():
    return fedplan.dp_sgd(dataset_size=1000, batch_size=50, epochs=2, target_epsilon=2, delta=DELTA)


def reference(segments) -> float:
    """dp-accounting's own PLD accountant, finer than ours."""
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    for q, sigma, steps in segments:
        accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    return accountant.get_epsilon(DELTA)


def test_the_plan_runs_to_its_end_and_the_next_step_is_refused(dp_sgd):
    budget = fedplan.Budget(dp_sgd)
    sigma = dp_sgd["noise_multiplier"]
    for _ in range(40):
        assert not budget.would_exceed()
        budget.step()
    assert budget.steps == 40 and budget.spent() == dp_sgd["epsilon"] <= 2.0
    assert budget.spent() == pytest.approx(reference([(0.05, sigma, 40)]), rel=2e-3)
    assert budget.would_exceed()
    with pytest.raises(fedplan.BudgetExceededError, match=r"step 41: 1 more step\(s\) would spend ε = 2\.0"):
        budget.step()
    assert budget.steps == 40  # the refused step was not admitted


def test_quieter_steps_are_admitted_past_the_plans_end_while_the_budget_lasts(dp_sgd):
    budget = fedplan.Budget(dp_sgd)
    sigma = dp_sgd["noise_multiplier"]
    budget.step(40, noise_multiplier=2 * sigma)
    assert budget.epsilon_after(1, noise_multiplier=2 * sigma) > 0  # past the plan's end: accounted
    assert fedplan.Budget(dp_sgd).epsilon_after(40, noise_multiplier=2 * sigma) is None  # dominated by the plan
    taken = 40
    while not budget.would_exceed(noise_multiplier=2 * sigma):
        budget.step(noise_multiplier=2 * sigma)
        taken += 1
    assert taken > 80  # twice the noise buys more than twice the steps here
    spent = budget.spent()
    assert spent <= 2.0 and spent == pytest.approx(reference([(0.05, 2 * sigma, taken)]), rel=2e-3)
    assert reference([(0.05, 2 * sigma, taken + 1)]) > 2.0 * (1 - 2e-3)


def test_a_larger_sample_rate_runs_out_early(dp_sgd):
    budget = fedplan.Budget(dp_sgd)
    taken = 0
    with pytest.raises(fedplan.BudgetExceededError):
        while True:
            budget.step(sample_rate=0.1)
            taken += 1
    sigma = dp_sgd["noise_multiplier"]
    assert 0 < taken < 40 and budget.steps == taken and budget.spent() <= 2.0
    assert reference([(0.1, sigma, taken)]) <= 2.0 < reference([(0.1, sigma, taken + 1)]) * (1 + 2e-3)


def test_steps_in_bulk_match_steps_one_at_a_time(dp_sgd):
    bulk, single = fedplan.Budget(dp_sgd), fedplan.Budget(dp_sgd)
    bulk.step(25)
    for _ in range(25):
        single.step()
    assert bulk.spent() == single.spent()
    with pytest.raises(fedplan.BudgetExceededError):
        bulk.step(16)
    bulk.step(15)


def test_a_budget_from_an_export_and_a_tighter_target(dp_sgd, tmp_path):
    path = fedplan.export(dp_sgd, tmp_path / "plan.json")
    budget = fedplan.Budget(str(path), target_epsilon=1.0)  # the plan's own steps are no longer safe by default
    with pytest.raises(fedplan.BudgetExceededError):
        budget.step(40)
    while not budget.would_exceed():
        budget.step()
    sigma = dp_sgd["noise_multiplier"]
    assert 0 < budget.steps < 40 and budget.spent() <= 1.0
    assert reference([(0.05, sigma, budget.steps + 1)]) > 1.0 * (1 - 2e-3)


def test_plans_a_budget_cannot_follow_are_refused(tmp_path):
    mapa = fedplan.plan(recipe="mapa", dataset="breast_cancer", clients=2, epochs=1)
    with pytest.raises(ValueError, match="Budget follows Gaussian plans .* mechanism is laplace"):
        fedplan.Budget(mapa)
    with pytest.raises(ValueError, match="plan must be a fedplan plan"):
        fedplan.Budget(42)
    with pytest.raises(ValueError, match="steps must be an integer"):
        fedplan.Budget(fedplan.dp_sgd(dataset_size=100, batch_size=10, epochs=1, target_epsilon=1)).step(0)


def test_a_federated_plan_is_followed_round_by_round(tmp_path):
    planned = fedplan.federated(clients=100, clients_per_round=10, rounds=30, target_epsilon=2, delta=DELTA)
    budget = fedplan.Budget(planned)
    budget.step(30)
    assert budget.spent() == planned["epsilon"]
    assert budget.would_exceed()
    write_schedule(planned.result.schedule, tmp_path / "fl.csv")
    assert fedplan.Budget(str(tmp_path / "fl.csv")).would_exceed(31)
