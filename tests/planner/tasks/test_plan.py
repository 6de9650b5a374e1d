"""fedplan plan: the ε-first request over the recipes, from the CLI, the API and with arrays (the app's uploads)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedplan.planner import cli
from fedplan.planner.datasets import synthetic_logistic
from fedplan.planner.export import load_schedule_file
from fedplan.planner.recipes import RECIPES, RecipeInputs
from fedplan.planner.tasks.plan import Plan


def test_the_default_question_gives_the_planner_page_numbers(capsys):
    assert cli.main(["plan", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["recipe"], data["rounds"], data["noise_multiplier"]) == ("increasing-sizes", 193, 1.27439)
    assert data["claimed_epsilon"] == 1.0 and 0.99 <= data["tight_epsilon"] <= 1.0
    assert data["paper_noise_multiplier"] == 7.5542 and data["paper_unused_budget"] > 0.89
    assert data["hypotheses_hold"] and {h["holds"] for h in data["hypotheses"]} == {True}


def test_arrays_given_to_the_api_plan_the_same_as_the_recipe_on_them():
    X, y = synthetic_logistic(4000, 5, seed=3)
    report = Plan(recipe="dpscd", features=X, labels=y, clients=4, epochs=2.0, target_epsilon=2.0, target_delta=1e-5,
                  batch_size=32).run()
    direct = RECIPES["dpscd"][1](RecipeInputs(target_epsilon=2.0, target_delta=1e-5, X=X, y=y, clients=4, epochs=2.0,
                                              batch_size=32))
    assert report["rounds"] == direct.headline["rounds"] == 250
    assert report["noise_multiplier"] == direct.headline["noise_multiplier"]
    assert report.result.schedule.rounds == 250


def test_the_schedule_is_written_and_loads_back(tmp_path, capsys):
    out = tmp_path / "plan.json"
    assert cli.main(["plan", "--recipe", "adp2sgd", "--dataset", "breast_cancer", "--clients", "3", "--epochs", "2",
                     "--target-epsilon", "4", "--target-delta", "1e-5", "--out", str(out)]) == 0
    rounds = 2 * 569 // 16  # T = ⌊epochs · N / B⌋ with N = 569 examples in breast_cancer
    updates = -(-rounds // 3)  # the schedule is one worker's updates: ⌈T / workers⌉
    assert f"wrote {updates} rounds in 1 phase(s) to {out}" in capsys.readouterr().out
    assert load_schedule_file(out).rounds == updates


@pytest.mark.parametrize("fields, message", [
    ({"features": np.zeros((5, 2))}, "give features and labels together"),
    ({"features": np.zeros((5, 2)), "labels": np.zeros(4)}, "features must be 2-d with one label per row"),
    ({"out": "plan.txt"}, "output file must end in .csv, .json, .yaml or .yml"),
    ({"recipe": "magic"}, "recipe must be one of"),
    ({"n_samples": 1}, "n_samples must be an integer in [2, 2e+06]; got 1"),
])
def test_bad_requests_are_refused_by_name_before_any_work(fields, message):
    with pytest.raises(ValueError) as raised:
        Plan(**fields)
    assert message in str(raised.value)


def test_the_cli_and_the_api_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        Plan(clients=0)
    assert cli.main(["plan", "--clients", "0"]) == 2
    assert capsys.readouterr().err == f"fedplan: error: {raised.value}\n"
