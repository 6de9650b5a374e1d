"""planner.mapa: the MAPA schedule as change-points per stage, CSV one row per iteration, JSON/YAML round trip,
and a privacy statement that names the mechanism, the neighbouring relation and the compositions."""

import csv

import numpy as np
import pytest

from fedplan.bounds import mapa
from fedplan.planner.export import load_schedule_file, write_schedule
from fedplan.planner.mapa import plan_mapa

PAPER = dict(epsilon=0.1, delta=1e-3, sigma=30.0, batch_size=12, smoothness=10.0, max_staleness=5, theta=0.5,
             iterations=25_000, initial_gap=1.0, num_edges=5, noise_model="paper")


@pytest.fixture(scope="module")
def plan():
    return plan_mapa(**PAPER)


def test_one_change_point_per_stage(plan):
    schedule = plan.schedule()
    stages = plan.result.stages
    assert schedule.rounds == 25_000 and len(schedule.change_points) == len(stages) == 11
    for (start, values), stage in zip(schedule.change_points, stages, strict=True):
        assert start == stage.start - 1 and values["stage"] == stage.index
        assert values["P"] == stage.p and values["learning_rate"] == stage.learning_rate
        assert values["sensitivity"] == stage.sensitivity and values["clipping_norm"] == 6 * stage.sensitivity
        assert values["noise_scale"] == pytest.approx(stage.sensitivity / 0.1, rel=1e-15)


def test_csv_has_one_row_per_iteration_on_request_with_cumulative_basic_epsilon(plan, tmp_path):
    path = write_schedule(plan.schedule(), tmp_path / "mapa.csv", cumulative_epsilon=plan.cumulative_epsilon(),
                          per_round=True)
    with path.open() as handle:
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    assert len(rows) == 25_000 and rows[0]["round"] == "0" and rows[-1]["round"] == "24999"
    lengths = np.bincount([int(row["stage"]) for row in rows])[1:]
    assert lengths.tolist() == [s.iterations for s in plan.result.stages]
    assert float(rows[-1]["cumulative_epsilon"]) == pytest.approx(plan.result.privacy.basic_epsilon, rel=1e-12)
    assert float(rows[0]["cumulative_epsilon"]) == pytest.approx(0.1)
    by_stage = write_schedule(plan.schedule(), tmp_path / "stages.csv").read_text().splitlines()
    assert len(by_stage) == 3 + 1 + len(plan.result.stages)


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_exports_load_back_identical(plan, tmp_path, suffix):
    schedule = plan.schedule()
    loaded = load_schedule_file(write_schedule(schedule, tmp_path / f"mapa.{suffix}"))
    assert loaded == schedule


def test_metadata_and_statement_name_the_privacy_model(plan):
    metadata = plan.schedule().metadata
    assert metadata["neighboring_relation"].startswith("replace_one")
    assert "Laplace-type" in metadata["mechanism"] and "with replacement" in metadata["sampling"]
    assert metadata["privacy_claim"].startswith("per iteration")
    composition = metadata["composition"]
    assert composition["basic_epsilon"] == pytest.approx(2500)
    assert composition["per_edge_epsilon"] == pytest.approx(500)
    assert composition["advanced_epsilon"] == pytest.approx(86.5162, abs=5e-5)
    statement = plan.statement()
    assert any("heuristic" in note for note in metadata["notes"])  # erratum LI-9
    for phrase in ("per-sample gradient", "Laplace-type", "replace-one", "per iteration", "basic composition",
                   "advanced composition", "round-robin", "epsilon = 2500", "86.5162", "not a DP delta"):
        assert phrase in statement


def test_summary_stages_carry_p_learning_rate_iterations_sensitivity(plan):
    summary = plan.summary()
    assert [row["iterations"] for row in summary["stages"]] == [1, 1, 1, 1, 3, 9, 34, 146, 773, 6147, 17884]
    assert {"P", "learning_rate", "iterations", "sensitivity"} <= set(summary["stages"][0])
    assert summary["truncated_last_stage"] and summary["hypotheses_hold"]


def test_statement_never_rounds_epsilon_down():
    plan = plan_mapa(**{**PAPER, "epsilon": 0.123456789, "iterations": 7})
    statement = plan.statement()
    shown = float(statement.split("all 7 iterations epsilon = ")[1].split(" ")[0])
    assert shown >= plan.result.privacy.basic_epsilon


def test_per_edge_budgets_in_the_schedule():
    plan = plan_mapa(**{**PAPER, "epsilon": [0.1, 0.2, 0.1, 0.1, 0.3], "iterations": 100})
    first = plan.result.stages[0]
    assert first.noise_scale == pytest.approx(first.sensitivity / 0.1)  # planned at ε₀ = min ε_k (L123)
    assert plan.result.privacy.basic_epsilon == pytest.approx(100 * 0.3)  # charged at max ε_k
    assert plan.result.privacy.per_edge_epsilon == pytest.approx(20 * 0.3)
    assert mapa.composition_totals(epsilon=[0.1, 0.2, 0.1, 0.1, 0.3], iterations=100,
                                   num_edges=5) == plan.result.privacy


def test_statement_warns_that_per_record_epsilon_can_be_b_times_larger():
    plan = plan_mapa(epsilon=0.1, delta=1e-3, sigma=30, batch_size=12, smoothness=10, max_staleness=5, theta=0.5,
                     iterations=1000, initial_gap=100, num_edges=5, noise_model="paper")
    statement = plan.statement()
    assert "at worst b*epsilon_k = 1.2 per upload" in statement and "up to b times larger per record" in statement
    assert "not between data sets" in plan.schedule().metadata["neighboring_relation"]
