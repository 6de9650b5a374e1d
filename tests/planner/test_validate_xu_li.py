"""Xu/Li validations: claims computed from the runs, bounds recomputed independently, claims that fail."""

import math

import numpy as np
import pytest

from fedplan.bounds import adp2sgd as xu
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.engine import Durations
from fedplan.planner.validate_xu_li import (
    largest_theorem1_learning_rate,
    validate_adp2sgd,
    validate_audp,
    validate_mapa,
)


@pytest.fixture(scope="module")
def data():
    return load_dataset("synthetic", n_samples=500, n_features=4, seed=1)


@pytest.mark.parametrize("workers, rho, tau", [(4, 2 / 3, 2), (8, 0.9, 0), (16, 0.99, 5)])
def test_largest_theorem1_learning_rate_is_valid_and_the_next_step_up_is_not(workers, rho, tau):
    topology = xu.Topology(workers=workers, rho=rho)
    eta = largest_theorem1_learning_rate(smoothness=0.25, topology=topology, staleness=tau)

    def valid(x):
        return xu.theorem1_constants(learning_rate=x, batch_size=1, smoothness=0.25, topology=topology,
                                     staleness=tau).valid

    assert valid(eta) and not valid(eta * 1.0001)


def test_adp2sgd_report_passes_with_the_bound_recomputed_by_hand(data):
    report = validate_adp2sgd(dataset=data, workers=4, topology="complete", steps=300, batch_size=8, seeds=(0, 1))
    assert report.passed and len(report.claims) == 3
    identity, theorem1, share = report.claims
    assert identity.simulated < 1e-12
    runs = report.runs
    eta = runs[0].config["learning_rate"]
    topology = xu.Topology(workers=4, rho=1 - 1 / 3)
    assert xu.theorem1_constants(learning_rate=eta, batch_size=1, smoothness=0.25, topology=topology,
                                 staleness=2).valid
    std = runs[0].config["noise_std"]
    n = runs[0].config["client_sizes"][0]
    by_hand = (2 * math.log(2) * 4 / (eta * 300) + 2 * eta * 0.25 / 4 * (1 / 8 + 6 * 1.0 + 4 * std**2))
    assert theorem1.predicted == pytest.approx(by_hand, rel=1e-9)
    assert theorem1.simulated == pytest.approx(np.mean([run.column("grad_norm_sq").mean() for run in runs]))
    assert share.predicted == pytest.approx(0.25 + 4 * math.sqrt(0.25 * 0.75 / 300)) and n > 8
    assert report.table[-1]["T"] == 300 and report.table[-1]["predicted"] == pytest.approx(theorem1.predicted)


def test_adp2sgd_case_ii_fails_the_uniform_worker_choice_claim(data):
    report = validate_adp2sgd(dataset=data, workers=4, topology="complete", steps=300, batch_size=8, seeds=(0,),
                              staleness="event", compute=Durations("exponential", (10.0, 1.0, 1.0, 1.0)))
    share = report.claims[2]
    assert not share.passed and share.simulated > 0.3  # the three fast workers share the updates
    assert not report.passed


def test_audp_theorem4_claim_is_eq14_with_the_drawn_noise(data):
    report = validate_audp(dataset=data, iterations=300, batch_size=4, step_rule="constant", seeds=(0, 1))
    theorem4 = report.claims[0]
    gamma, db = 1 / (2 * 0.25 * 6), report.runs[0].config["delta_b"]
    assert db == pytest.approx(4 / 4 + 4 * 5 * (0.5 / 5.0) ** 2, rel=1e-9)
    assert theorem4.predicted == pytest.approx(2 * math.log(2) / (300 * gamma) + 2 * db * 0.25 * gamma, rel=1e-9)
    assert theorem4.passed and report.claims[-1].passed and report.passed


def test_audp_theorem2_claims_use_the_measured_radius_and_pass(data):
    report = validate_audp(dataset=data, iterations=300, batch_size=4, seeds=(0,))
    names = [claim.name for claim in report.claims]
    assert names[0].endswith("(corrected)") and names[1].endswith("(paper)")
    assert all(claim.passed for claim in report.claims)
    assert report.claims[0].simulated > 0 and "R = " in " ".join(report.notes)


def test_mapa_stage_claims_and_round_robin_assumption(data):
    equal = validate_mapa(dataset=data, iterations=600, batch_size=4, seeds=(0,), compute=Durations("constant", 1.0))
    stages = [claim for claim in equal.claims if claim.name.startswith("stage")]
    assert len(stages) == len(equal.table) >= 2 and all(claim.simulated <= claim.predicted for claim in stages)
    # a stage whose per-sample gradients were clipped sent biased uploads: Theorem 4 guarantees nothing there
    assert [claim.verdict for claim in stages] == ["PASS" if row["clipped_fraction_max"] == 0 else "NO GUARANTEE"
                                                   for row in equal.table] == ["PASS", "NO GUARANTEE"]
    assert equal.claims[-1].passed
    uneven = validate_mapa(dataset=data, iterations=600, batch_size=4, seeds=(0,))
    assert not uneven.claims[-1].passed and uneven.claims[-1].simulated > 120


def test_non_binary_data_is_rejected():
    with pytest.raises(ValueError, match="binary"):
        validate_mapa(dataset=load_dataset("iris"), iterations=10)
