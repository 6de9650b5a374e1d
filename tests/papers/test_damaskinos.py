"""Printed numbers of the Damaskinos thesis (damaskinos_thesis.txt) and the spec's derived vectors that pin them:
DP-SCD σ (Eq. 6.2 with MA128), AdaSGD's 0.14 at τ = 6, Kardam's settings, AggregaThor's f, the tuning grid."""

from __future__ import annotations

import math

import pytest

from fedplan.bounds import byzantine, dpscd, kardam
from fedplan.planner.dpscd import plan_dpscd

# (N, epochs) of §6.5.1 (L1542, L1546; spec A27): MSD, Adult, Phishing.
DATASETS = {"msd": (347_786, 50), "adult": (24_420, 10), "phishing": (6218, 10)}


@pytest.mark.parametrize("dataset, epsilon, batch, expected", [
    ("msd", 0.1, 1000, 14.22328), ("msd", 1.0, 2000, 2.19541),          # spec §4.5 (7 digits)
])
def test_thesis_reference_sigma(dataset, epsilon, batch, expected):
    examples, epochs = DATASETS[dataset]
    plan = plan_dpscd(target_epsilon=epsilon, target_delta=1e-3, examples=examples, batch_size=batch, epochs=epochs,
                      compare=False)
    assert plan.calibration.noise_multiplier == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("dataset, epsilon, batch, expected", [
    ("msd", 0.1, 1, 1.686), ("msd", 0.1, 100, 4.547), ("msd", 0.5, 500, 2.154), ("msd", 2.0, 2000, 1.276),
    ("msd", 1.0, 10, 0.674), ("adult", 0.1, 1000, 24.058), ("adult", 0.5, 500, 3.573), ("adult", 2.0, 1, 0.513),
    ("phishing", 0.1, 2000, 67.245), ("phishing", 2.0, 2000, 3.799), ("phishing", 1.0, 50, 1.335),
    ("phishing", 0.5, 5, 1.144),
])
def test_thesis_sigma_grid(dataset, epsilon, batch, expected):
    # spec §7.6: MA128, δ = 1e-3, q = L/N, T = ⌊E·N/L⌋, printed to 3 decimals
    examples, epochs = DATASETS[dataset]
    steps = dpscd.outer_iterations(examples=examples, batch_size=batch, epochs=epochs)
    sigma = dpscd.calibrate_noise(target_epsilon=epsilon, target_delta=1e-3, sample_rate=batch / examples,
                                  steps=steps).noise_multiplier
    assert sigma == pytest.approx(expected, abs=5e-4)


def test_abadi_example_classic_and_improved_conversion():
    # spec §4.5: q=0.01, σ=4, T=1e4, δ=1e-5 → 1.258575 (MA, classic) and 1.035490 (RDP, improved conversion)
    assert dpscd.ma_epsilon(noise_multiplier=4.0, sample_rate=0.01, steps=10_000, delta=1e-5)[0] == pytest.approx(
        1.258575, abs=1e-6)
    assert dpscd.epsilon_for_noise(noise_multiplier=4.0, sample_rate=0.01, steps=10_000, delta=1e-5,
                                   accountant="rdp") == pytest.approx(1.035490, abs=1e-6)


def test_primal_dpscd_sigma():
    # PrimalDP-SCD on MSD: q = 1, T = 450 (spec §7.6): 81.62 at ε = 1; closed form F8 81.6051 is a lower envelope
    sigma = dpscd.calibrate_noise(target_epsilon=1.0, target_delta=1e-3, sample_rate=1.0, steps=450).noise_multiplier
    assert sigma == pytest.approx(81.6224, abs=1e-4) and sigma >= 81.6051


def test_adasgd_printed_dampening_at_tau_thres_half():
    # L705-707: τ_thres = 12 for D1; AdaSGD and DynSGD give the same dampening value (0.14) at τ = 6
    damp = kardam.adasgd_dampening(tau_thres=12)
    assert round(damp(6), 2) == 0.14 and damp(6) == pytest.approx(1 / (1 + 6), rel=1e-12)


def test_d1_threshold_is_mean_plus_three_std():
    # L695: s% = 99.7% ⇒ τ_thres = μ + 3σ = 12 for D1 = N(6, 2) and 24 for D2 = N(12, 4)
    assert kardam.gaussian_staleness_pmf(mean=6, std=2).size - 1 == 12
    assert kardam.gaussian_staleness_pmf(mean=12, std=4).size - 1 == 24


def test_kardam_dampening_crossing_near_13():
    # L1248: the tuned Λ3 = e^{-0.2τ} gives larger weights than 1/(1+τ) for τ < 13
    tau = kardam.crossing(first=kardam.Dampening("exponential", rate=0.2), second=kardam.Dampening("inverse"),
                          low=1, high=100)
    assert math.floor(tau) == 13


def test_kardam_slowdown_band_for_the_experiments():
    # Theorem 1 (L1118) at n = 10, f = 3 (L1242): drop ratio bound f/n = 30 % (L1264)
    band = kardam.accept_ratio_bounds(workers=10, byzantine=3)
    assert 1 - band.upper == pytest.approx(0.3) and band.lower == pytest.approx(4 / 7) and band.valid


def test_remark2_settings():
    # L1964: β ≈ 1.85 for 1 ≤ τ ≤ 10, 3.1 for 11..33, 4 for 34..75 have a non-empty α window
    for root, low, high in ((1.85, 1, 10), (3.1, 11, 33), (4, 34, 75)):
        window = kardam.remark2_window(root=root, tau_low=low, tau_high=high)
        assert window.lower < window.upper and window.valid


def test_aggregathor_and_kardam_settings():
    assert byzantine.max_byzantine(workers=19, rule="bulyan").max_faults == 4          # L931
    assert byzantine.max_byzantine(workers=19, rule="multi-krum").max_faults == 8      # L994
    assert byzantine.min_workers(faults=3, rule="kardam") == 10                         # L1242
    assert byzantine.max_byzantine(workers=10, rule="kardam-strict").max_faults == 2   # printed n > 3f+1 excludes it


def test_tuning_grid_sizes():
    # L1567: 156 DP-SCD configurations vs 2028 for DP-SGD
    cost = dpscd.cost_model(examples=347_786, features=90, batch_size=1000, epochs=50)
    assert cost.tuning_configurations["DP-SCD"] == 156 and cost.tuning_configurations["DP-SGD"] == 2028
