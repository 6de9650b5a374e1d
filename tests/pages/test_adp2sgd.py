"""The A(DP)²SGD page: the MinEpsilon request built from widgets, and ε against the noise."""

from __future__ import annotations

from fedplan.planner.tasks.adp2sgd import MinEpsilon
from tests.pages.helpers import error_under, errors, metric, open_page, refusal

CIFAR = dict(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)


def test_adp2sgd_page_shows_the_floor_and_the_band_of_the_cifar_setting():
    page = open_page("4_ADP2SGD.py")
    assert not page.exception and not page.error
    assert metric(page, "Smallest ε") == "8.3437"  # spec TV-P2: 8.3436582, shown rounded up
    assert metric(page, "Noise band") == "[1.225, 8.417)"
    assert float(metric(page, "Tight ε")) < 8.3437
    page.text_input[2].set_value("0").run()
    assert errors(page) == [refusal(MinEpsilon, **{**CIFAR, "batch_size": 0})]
    assert error_under(page, "Batch size B") == errors(page)[0]
    page.text_input[2].set_value("5000").run()  # a relation between fields (B ≤ n) is shown under B too
    assert errors(page) == [refusal(MinEpsilon, **{**CIFAR, "batch_size": 5000})]
    assert error_under(page, "Batch size B") == errors(page)[0]
