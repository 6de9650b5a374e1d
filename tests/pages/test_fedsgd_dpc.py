"""The FedSGD-DPC page: the FedsgdDpcOptimum request (Laplace, raw constants) built from widgets."""

from __future__ import annotations

import pytest

from fedplan.planner.tasks.fedsgd_dpc import FedsgdDpcOptimum
from tests.pages.helpers import error_under, errors, metric, open_page, refusal

README = dict(mechanism="laplace", clients=10, client_size=6000, model_dim=7850, strong_convexity=10, smoothness=20,
              gradient_bound=1, heterogeneity=0, initial_distance=1, target_epsilon=0.05, clipping_norm=1)


@pytest.fixture
def fedsgd_page():
    return open_page("3_FedSGD_DPC.py")


def test_fedsgd_page_shows_the_optimum_and_the_paper_rule(fedsgd_page):
    assert not fedsgd_page.exception and not fedsgd_page.error
    assert metric(fedsgd_page, "T*") == "120" and metric(fedsgd_page, "b*") == "1"
    assert metric(fedsgd_page, "Paper rule") == "(116, 1)"
    fedsgd_page.text_input[8].set_value("0.2").run()
    assert metric(fedsgd_page, "T*") == "480"


def test_fedsgd_page_paper_variant_shows_the_paper_rule_with_the_exact_optimum_beside(fedsgd_page):
    """The app as ``--variant paper --fixed-clients-per-round 5``: T = ⌊T*(b)⌋ (Table I), the exact optimum beside."""
    fedsgd_page.radio[0].set_value("paper")
    fedsgd_page.text_input[10].set_value("5").run()  # fixed clients per round b
    assert not fedsgd_page.exception and not fedsgd_page.error
    request = FedsgdDpcOptimum(**README, variant="paper", fixed_clients_per_round=5).run()
    assert metric(fedsgd_page, "T*") == f"{request['T_star']:g}" and metric(fedsgd_page, "b*") == "5"
    assert request["T_star"] == request["paper_rule"]["T"] != request["exact_optimum"]["T"]
    assert metric(fedsgd_page, "Exact optimum") == f"({request['exact_optimum']['T']}, 5)"


def test_fedsgd_page_reports_a_violated_assumption(fedsgd_page):
    fedsgd_page.text_input[3].set_value("30").run()  # μ = 30 > λ = 20
    assert not fedsgd_page.exception
    assert errors(fedsgd_page) == [refusal(FedsgdDpcOptimum, **{**README, "strong_convexity": 30})]
    assert errors(fedsgd_page) == ["smoothness must be a real number in [30, inf); got 20"]
    assert error_under(fedsgd_page, "Smoothness λ") == errors(fedsgd_page)[0]
    fedsgd_page.text_input[3].set_value("10")
    fedsgd_page.text_input[0].set_value("1").run()
    assert errors(fedsgd_page) == [refusal(FedsgdDpcOptimum, **{**README, "clients": 1})]
    assert error_under(fedsgd_page, "Clients N") == errors(fedsgd_page)[0]
