"""From plan to run: every recipe's export loads back into `fedplan epsilon --schedule` with the same ε, in one row
per change of parameters; a file's sampling model is used, and a contradicting one refused."""

from __future__ import annotations

import json

import pytest

import fedplan
from fedplan.planner import cli
from fedplan.planner.datasets import synthetic_logistic
from fedplan.planner.export import load_schedule_file, render, write_schedule
from fedplan.planner.recipes import RECIPES, RecipeInputs, plan


@pytest.fixture(scope="module")
def plans():
    X, y = synthetic_logistic(20_000, 10, seed=1)
    inputs = RecipeInputs(target_epsilon=2.0, target_delta=1e-5, X=X, y=y, clients=4, epochs=2.0, batch_size=20)
    return {name: plan(name, inputs) for name in RECIPES}


@pytest.mark.parametrize("fmt", ["csv", "json", "yaml"])
@pytest.mark.parametrize("recipe", list(RECIPES))
def test_every_export_loads_back_with_the_plans_epsilon(plans, tmp_path, recipe, fmt):
    result = plans[recipe]
    path = write_schedule(result.schedule, tmp_path / f"plan.{fmt}")
    answer = fedplan.epsilon(schedule=str(path))
    assert answer["epsilon"] == result.headline["tight_epsilon"] == result.schedule.privacy["epsilon"]
    assert answer["epsilon"] <= 2.0
    loaded = load_schedule_file(path)
    assert loaded.privacy == result.schedule.privacy and loaded.change_points == result.schedule.change_points


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_csv_has_one_row_per_change_of_parameters(plans, recipe):
    schedule = plans[recipe].schedule
    rows = [line for line in render(schedule, "csv").splitlines() if not line.startswith("#")]
    assert len(rows) == 1 + len(schedule.change_points)
    assert rows[0].startswith("start_round,rounds,")
    if schedule.is_gaussian:
        assert rows[0].endswith(",cumulative_epsilon")
        assert float(rows[-1].rsplit(",", 1)[1]) == schedule.privacy["epsilon"]


def test_the_changing_schedule_has_cumulative_epsilon_rising_to_the_plans(plans):
    schedule = plans["increasing-sizes"].schedule
    rows = [line.split(",") for line in render(schedule, "csv").splitlines()[4:]]
    epsilons = [float(row[-1]) for row in rows]
    assert len(rows) == len(schedule.change_points) == schedule.rounds == 83  # the size changes every round
    assert epsilons == sorted(epsilons) and epsilons[-1] == schedule.privacy["epsilon"]


def test_a_schedule_files_model_is_used_and_a_contradiction_refused(plans, tmp_path):
    path = write_schedule(plans["adp2sgd"].schedule, tmp_path / "xu.json")
    answer = fedplan.epsilon(schedule=str(path))
    assert (answer["sampling"], answer["neighboring_relation"]) == ("fixed_size", "replace_one")
    assert fedplan.epsilon(schedule=str(path), sampling="fixed_size")["epsilon"] == answer["epsilon"]
    with pytest.raises(ValueError, match="sampling=poisson contradicts the schedule file, which was planned for "
                                         "sampling=fixed_size"):
        fedplan.epsilon(schedule=str(path), sampling="poisson")
    # at another δ the same schedule is accounted again
    assert fedplan.epsilon(schedule=str(path), delta=1e-3)["epsilon"] < answer["epsilon"]


def test_a_plain_segment_file_still_needs_delta(tmp_path):
    path = tmp_path / "segments.json"
    path.write_text(json.dumps([{"sample_rate": 0.01, "noise_multiplier": 1.0, "steps": 100}]))
    with pytest.raises(ValueError, match="give delta"):
        fedplan.epsilon(schedule=str(path))
    assert fedplan.epsilon(schedule=str(path), delta=1e-5)["sampling"] == "poisson"


def test_the_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "plan.csv"
    assert cli.main(["plan", "--recipe", "dpscd", "--dataset", "breast_cancer", "--clients", "2", "--epochs", "3",
                     "--target-epsilon", "3", "--target-delta", "1e-5", "--out", str(out), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert cli.main(["epsilon", "--schedule", str(out), "--json"]) == 0
    accounted = json.loads(capsys.readouterr().out)
    assert accounted["epsilon"] == planned["tight_epsilon"] <= 3.0
    assert out.read_text().count("\n") == 5  # three # lines, the header, one phase


def test_noise_paper_is_one_switch_away(tmp_path):
    tight = fedplan.plan(recipe="dpscd", dataset="breast_cancer", clients=2, epochs=3, target_epsilon=3)
    paper = fedplan.plan(recipe="dpscd", dataset="breast_cancer", clients=2, epochs=3, target_epsilon=3,
                         noise="paper")
    assert paper["noise_multiplier"] == tight["paper_noise_multiplier"] > tight["noise_multiplier"]
    assert paper["tight_epsilon"] < tight["tight_epsilon"]


@pytest.mark.parametrize("fields, message", [
    ({"format": "opacus"}, "format and per_round describe --out: give out too"),
    ({"out": "plan.json", "format": "opacus"}, "format opacus is written to a file ending in .py"),
    ({"recipe": "mapa", "sampling": "poisson"}, "sampling=poisson does not apply to mapa"),
    ({"noise": "loose"}, "noise must be one of"),
])
def test_bad_plan_options_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        fedplan.plan(**fields)


def test_a_library_export_never_replaces_a_file_fedplan_did_not_write(tmp_path):
    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "myapp"\n')
    planned = fedplan.federated(clients=100, clients_per_round=10, rounds=5, target_epsilon=2)
    with pytest.raises(ValueError, match="exists and was not written by fedplan"):
        fedplan.export(planned, project, format="flower")
    assert project.read_text() == '[project]\nname = "myapp"\n'
    mine = fedplan.export(planned, tmp_path / "flower.toml", format="flower")
    assert fedplan.export(planned, mine, format="flower") == mine  # its own export it may replace


def test_opacus_and_tf_privacy_refuse_a_relation_their_accountants_do_not_assume(tmp_path):
    planned = fedplan.dp_sgd(dataset_size=1000, batch_size=50, epochs=1, target_epsilon=2,
                             neighboring_relation="replace_one")
    for fmt in ("opacus", "tf-privacy"):
        with pytest.raises(ValueError, match="accountant assumes add_or_remove_one neighbours; this plan is accounted "
                                             "for neighboring_relation=replace_one"):
            fedplan.export(planned, tmp_path / f"{fmt}.py", format=fmt)


def test_a_per_user_plan_states_both_guarantees_in_every_export(tmp_path):
    planned = fedplan.dp_sgd(dataset_size=60_000, batch_size=256, epochs=1, target_epsilon=3, delta=1e-5,
                             max_examples_per_user=4)
    privacy = planned.result.schedule.privacy
    assert privacy["max_examples_per_user"] == 4 and privacy["user_epsilon"] <= 3.0 and privacy["user_delta"] <= 1e-5
    for fmt, name in (("csv", "plan.csv"), ("opacus", "plan.py"), ("tf-privacy", "statement.py")):
        text = fedplan.export(planned, tmp_path / name, format=fmt).read_text()
        assert "per user of up to 4 examples (ε = " in text.splitlines()[1]
    assert "'max_examples_per_user': None" in (tmp_path / "statement.py").read_text()


def test_a_target_the_noise_range_cannot_spend_is_explained():
    huge = fedplan.federated(clients=10, clients_per_round=5, rounds=5, target_epsilon=1e9)
    assert huge["noise_multiplier"] == 0.01 and huge["unused_budget"] > 0.99
    assert huge["note"] == ("The tight ε is 100.0 % below the target: every noise_multiplier in its range meets the "
                            "target: even the end of the range, 0.01, spends only ε = 200007 of 1e+09.")
    assert "note" not in fedplan.dp_sgd(dataset_size=1000, batch_size=10, epochs=1, target_epsilon=3).values


def test_a_federated_noise_below_twice_the_floor_is_refused_with_the_value_the_user_gave():
    import fedplan

    with pytest.raises(ValueError) as failure:
        fedplan.federated(clients=1000, clients_per_round=10, rounds=100, noise_multiplier=0.0015)
    assert str(failure.value) == ("noise_multiplier must be at least 0.002 with fixed_size sampling and replace_one "
                                  "neighbours (accounted at σ/2); got 0.0015")
