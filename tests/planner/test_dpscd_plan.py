"""planner.dpscd: the MSD plan (MA128 next to PLD), the privacy statement, and a schedule export that loads back."""

from __future__ import annotations

import pytest

from fedplan.bounds import dpscd
from fedplan.planner import export
from fedplan.planner.dpscd import plan_dpscd

MSD = dict(target_delta=1e-3, examples=347_786, epochs=50)


def test_msd_plan_shows_ma128_next_to_pld():
    plan = plan_dpscd(target_epsilon=0.1, batch_size=1000, clipping_norm=0.1, **MSD)
    summary = plan.summary()
    assert summary["noise_multiplier"] == pytest.approx(14.22328, abs=1e-5) and summary["steps"] == 17_389
    assert summary["accountant"] == "ma128" and summary["variant"] == "paper"
    assert summary["comparison"]["accountant"] == "pld"
    assert summary["comparison"]["noise_multiplier"] < 7.83913 and summary["comparison"]["epsilon"] <= 0.1
    assert summary["noise_std"] == pytest.approx(2.0115, abs=1e-4)
    assert summary["epsilon_if_batch_revealed"] == pytest.approx(1.9754, abs=1e-4)
    statement = summary["statement"]
    assert "Poisson" in statement and "add/remove-one" in statement and "only the shared vector v" in statement


def test_tight_plan_compares_with_ma128_or_says_why_not():
    plan = plan_dpscd(target_epsilon=0.05, batch_size=1000, accountant="rdp", **MSD)
    assert plan.calibration.epsilon <= 0.05 and plan.calibration.variant == "corrected"
    assert plan.comparison["noise_multiplier"] is None and "0.0539668" in plan.comparison["reason"]
    plan = plan_dpscd(target_epsilon=1.0, batch_size=2000, accountant="rdp", **MSD)
    assert plan.comparison["noise_multiplier"] == pytest.approx(2.19541, abs=1e-5)


def test_fractional_epochs_skip_the_batch_revealed_epsilon():
    plan = plan_dpscd(target_epsilon=1.0, target_delta=1e-3, examples=10_000, batch_size=100, epochs=2.5,
                      compare=False)
    assert plan.steps == 250 and plan.epsilon_if_batch_revealed is None and plan.comparison == {}


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_schedule_export_loads_back_identical(tmp_path, suffix):
    plan = plan_dpscd(target_epsilon=1.0, batch_size=2000, clipping_norm=0.5, **MSD)
    schedule = plan.schedule()
    assert schedule.rounds == 8694 and len(schedule.change_points) == 1
    assert schedule.metadata["accountant"] == "ma128" and schedule.metadata["delta"] == 1e-3
    path = export.write_schedule(schedule, tmp_path / f"plan.{suffix}")
    assert export.load_schedule_file(path) == schedule


def test_csv_export_has_one_row_per_change_or_per_iteration(tmp_path):
    plan = plan_dpscd(target_epsilon=1.0, target_delta=1e-3, examples=10_000, batch_size=500, epochs=3)
    path = export.write_schedule(plan.schedule(), tmp_path / "plan.csv")
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert lines[0] == "start_round,rounds,sample_rate,batch_size,noise_multiplier,cumulative_epsilon"
    assert len(lines) == 2 and lines[1].startswith(f"0,60,0.05,500,{plan.calibration.noise_multiplier},")
    # the tight PLD ε of the MA128 σ: below the target MA128 was calibrated to
    assert float(lines[1].rsplit(",", 1)[1]) == plan.schedule().privacy["epsilon"] < 1.0
    path = export.write_schedule(plan.schedule(), tmp_path / "rounds.csv", per_round=True)
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert len(lines) == 1 + 60 and lines[0] == "round,sample_rate,batch_size,noise_multiplier,cumulative_epsilon"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="accountant must be one of"):
        plan_dpscd(target_epsilon=1.0, batch_size=100, accountant="moments", **MSD)
    with pytest.raises(ValueError, match="clipping_norm"):
        plan_dpscd(target_epsilon=1.0, batch_size=100, clipping_norm=0, **MSD)
    assert dpscd.ACCOUNTANTS == ("ma128", "rdp", "pld")
