"""planner.adp2sgd: Xu et al. plans (ε-first and σ-first) with the paper's feasibility, tight accountants, export."""

import json
import math

import pytest

from fedplan.bounds import adp2sgd as xu
from fedplan.planner.adp2sgd import epsilon_against_noise, plan_adp2sgd
from fedplan.planner.export import load_schedule_file, write_schedule

CIFAR = xu.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)


@pytest.fixture(scope="module")
def feasible_plan():
    return plan_adp2sgd(setting=CIFAR, target_epsilon=10)


def test_epsilon_first_uses_theorem2_when_it_certifies_the_target(feasible_plan):
    summary = feasible_plan.summary()
    assert summary["feasible"] and summary["hypotheses_hold"]
    assert summary["noise_to_sensitivity"] == pytest.approx(2.23314, rel=1e-4) and summary["epsilon"] <= 10
    assert summary["mu"] == pytest.approx(0.536708, rel=1e-4)
    assert summary["noise_std"] == pytest.approx(0.0174464, rel=1e-4)  # TV-P3, G = 1, noise on the mean
    assert summary["tight_noise_to_sensitivity"] == pytest.approx(1.498, abs=1e-3)
    assert summary["tight_epsilon"] < 10 < summary["per_worker_epsilon"]
    assert summary["neighboring_relation"] == "replace_one" and "add/remove-one" in summary["reference_sampling"]
    json.dumps(summary)


def test_below_the_floor_auto_falls_back_to_the_tight_noise_and_says_so():
    plan = plan_adp2sgd(setting=CIFAR, target_epsilon=4)
    summary = plan.summary()
    assert not summary["feasible"] and "8.34366" in summary["paper_reason"]
    assert summary["noise_to_sensitivity"] == summary["tight_noise_to_sensitivity"] and summary["tight_epsilon"] <= 4
    assert "cannot certify the target epsilon 4" in summary["statement"]
    with pytest.raises(ValueError, match="cannot certify target_epsilon=4"):
        plan_adp2sgd(setting=CIFAR, target_epsilon=4, noise_source="paper")


def test_sigma_first_reports_the_formulas_number_without_a_guarantee_below_the_band():
    summary = plan_adp2sgd(setting=CIFAR, noise_to_sensitivity=1.0).summary()
    # z = 1 < sqrt(1.5) (xu L508): rho = 5 T gamma^2 = 7.68003, alpha = min(1 + sqrt(log(1e5)/rho), log(1/(2 gamma)))
    rho, lam = 5 * 58594 * 0.00512**2, math.log(1e5)
    alpha = min(1 + math.sqrt(lam / rho), math.log(1 / (2 * 0.00512)))
    assert not summary["feasible"] and summary["epsilon"] == pytest.approx(rho * alpha + lam / (alpha - 1), rel=1e-12)
    assert "no guarantee (failing: sigma^2/Delta^2 >= 1.5 (Lemma 2))" in summary["statement"]
    assert summary["tight_epsilon"] > 0
    raw = plan_adp2sgd(setting=CIFAR, noise_to_sensitivity=5, variant="paper").summary()
    envelope = plan_adp2sgd(setting=CIFAR, noise_to_sensitivity=5).summary()
    assert raw["epsilon"] == pytest.approx(11.94547054, rel=1e-8)
    assert envelope["epsilon"] == pytest.approx(8.3436582, abs=1e-7)


def test_exactly_one_of_target_and_noise():
    with pytest.raises(ValueError, match="exactly one"):
        plan_adp2sgd(setting=CIFAR)
    with pytest.raises(ValueError, match="^give exactly one of target_epsilon and noise_to_sensitivity$"):
        plan_adp2sgd(setting=CIFAR, target_epsilon=10, noise_to_sensitivity=2)
    with pytest.raises(ValueError, match=r"^noise_to_sensitivity must be a real number in \[0.001, 1e\+08\]; got 0$"):
        plan_adp2sgd(setting=CIFAR, noise_to_sensitivity=0)


@pytest.mark.parametrize("suffix", ["json", "yaml", "csv"])
def test_schedule_export_is_one_workers_updates_in_fedplans_noise_vocabulary(feasible_plan, tmp_path, suffix):
    from fedplan.bounds import accounting

    schedule = feasible_plan.schedule()
    z = feasible_plan.noise_to_sensitivity
    ((_, values),) = schedule.change_points
    assert schedule.rounds == CIFAR.worker_steps == 3663  # ⌈T/K⌉ updates of one worker
    assert values["sample_rate"] == 256 / 3125 and values["noise_multiplier"] == 2 * z  # not Xu's z: read by Opacus
    assert values["noise_to_sensitivity"] == z
    privacy = schedule.privacy
    assert (privacy["sampling"], privacy["neighboring_relation"], privacy["dataset_size"]) == (
        "fixed_size", "replace_one", 3125)
    independent = accounting.get_epsilon(sample_rate=256 / 3125, noise_multiplier=2 * z, steps=3663, delta=1e-5,
                                         sampling="fixed_size", neighboring_relation="replace_one", dataset_size=3125)
    assert privacy["epsilon"] == independent.epsilon
    # no credit for the worker's random choice: above the paper model's ε, below the per-worker RDP bound
    assert feasible_plan.tight.epsilon < privacy["epsilon"] <= feasible_plan.per_worker.epsilon
    path = write_schedule(schedule, tmp_path / f"plan.{suffix}")
    if suffix == "csv":
        lines = path.read_text().splitlines()
        assert len(lines) == 5 and lines[3].endswith("cumulative_epsilon")
        assert float(lines[-1].split(",")[-1]) == privacy["epsilon"]
        return
    loaded = load_schedule_file(path)
    assert loaded == schedule


def test_cumulative_epsilon_increases_and_never_undercuts_the_full_grid(feasible_plan):
    curve = feasible_plan.cumulative_epsilon()
    assert (curve[1:] >= curve[:-1]).all()
    for step in (1, 100, 5000):
        partial = xu.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=step, delta=1e-5)
        full = xu.tight_epsilon(setting=partial, noise_to_sensitivity=feasible_plan.noise_to_sensitivity).epsilon
        assert curve[step - 1] >= full * (1 - 1e-12)


def test_epsilon_against_noise_certifies_only_inside_theorem2s_band():
    calls = []
    rows = epsilon_against_noise(setting=CIFAR, points=8, progress=lambda done, total: calls.append((done, total)))
    low, high = xu.noise_band(setting=CIFAR)
    assert (low, high) == pytest.approx((1.5**0.5, 8.4173305), rel=1e-7)  # spec TV-P2: z_max
    zs = [row["noise_to_sensitivity"] for row in rows]
    assert zs == sorted(zs) and low in zs and high in zs and calls[-1] == (len(rows), len(rows))
    for row in rows:
        z = row["noise_to_sensitivity"]
        assert (row["paper_guarantee"] == "guarantee") == (low <= z < high), z
        assert row["tight_epsilon"] > 0
    certified = [row for row in rows if row["paper_guarantee"] == "guarantee"]
    assert min(row["paper_epsilon"] for row in certified) >= 8.3436582  # spec TV-P2: the floor
    # the certificate at z itself, not its monotone envelope: above the floor's z it rises again (spec §0 #3)
    top = max(certified, key=lambda row: row["noise_to_sensitivity"])
    assert top["paper_epsilon"] > 11.94547054  # TV-P2: 11.945 at z = 5 < top z, 115.0 at z = 8
