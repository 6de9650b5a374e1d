"""The accountant page: the Epsilon and Calibrate* requests built from widgets."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from fedplan.planner.tasks.accounting import Epsilon
from tests.pages.helpers import error_under, errors, metric, open_page, refusal

SCHEDULE = dict(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5)


@pytest.fixture
def app() -> AppTest:
    return open_page("1_Accountant.py")


def test_epsilon_page_shows_pld_rdp_and_assumptions(app):
    assert not app.exception and not app.error
    assert 5.1919 <= float(metric(app, "ε (PLD")) <= 5.1979
    assert metric(app, "ε (PLD") == "5.1927"  # 5.19262 rounded up, never down
    assert metric(app, "ε (RDP)") == "5.6320"
    assert any("under Poisson sampling" in m.value and "add/remove-one" in m.value for m in app.caption)


def test_the_sampling_that_runs_is_accounted(app):
    app.selectbox[0].set_value("fixed_size").run()
    app.selectbox[1].set_value("replace_one").run()
    assert not app.exception and not app.error
    # PLD of the symmetrised pair (docs/SAMPLING.md §1) and WBK'19's RDP, both at σ/2: far above Poisson's 5.19
    assert float(metric(app, "ε (PLD upper bound)")) > 2 * 5.1937
    assert float(metric(app, "ε (RDP)")) > float(metric(app, "ε (PLD upper bound)"))
    assert any("under fixed-size sampling" in m.value and "replace-one" in m.value for m in app.caption)
    app.selectbox[0].set_value("with_replacement").run()
    app.selectbox[1].set_value("add_or_remove_one").run()
    assert not app.exception
    assert errors(app) == ["sampling=with_replacement needs dataset_size (N): a record's multiplicity among "
                           "s = qN draws is Binomial(s, 1/N)"]
    app.selectbox[0].set_value("shuffle").run()
    assert not app.exception and not app.error
    assert float(metric(app, "ε (exact)")) > 5.1937


def test_two_stage_sampling_from_the_page(app):
    app.text_input[5].set_value("0.1").run()  # clients join a round with probability 0.1
    assert not app.exception and not app.error
    assert float(metric(app, "ε (PLD upper bound)")) < 5.1937
    assert any("Two-stage sampling" in m.value for m in app.caption)


def test_with_replacement_under_replace_one_from_the_page(app):
    app.text_input[4].set_value("10000").run()  # N = 10⁴: q·N = 100 draws per step
    app.selectbox[0].set_value("with_replacement").run()
    add_remove = float(metric(app, "ε (PLD upper bound)"))
    app.selectbox[1].set_value("replace_one").run()
    assert not app.exception and not app.error
    assert float(metric(app, "ε (PLD upper bound)")) >= add_remove * (1 - 1e-3)
    assert any("under with-replacement sampling" in m.value and "replace-one" in m.value for m in app.caption)


def test_bad_input_is_the_requests_message_under_its_widget(app):
    app.text_input[0].set_value("1.5").run()
    assert not app.exception
    assert errors(app) == [refusal(Epsilon, **{**SCHEDULE, "sample_rate": 1.5})]
    assert error_under(app, "Sample rate q (share of the data per step)") == errors(app)[0]
    app.text_input[0].set_value("abc").run()
    assert errors(app) == ["sample_rate must be a number; got 'abc'"]
    app.text_input[0].set_value("0.01")
    app.text_input[2].set_value("1e4").run()  # steps parse as on the command line
    assert not app.error and metric(app, "ε (PLD") == "5.1927"


def test_pld_points_on_the_curve(app):
    app.checkbox[0].check().run()
    assert not app.exception and not app.error


def test_schedule_file_task_asks_for_a_file(app):
    app.radio[0].set_value("ε of a schedule file").run()
    assert not app.exception
    assert errors(app) == ["upload a schedule file: one segment per row (CSV) or a JSON list of segments"]


def test_calibration_page(app):
    app.radio[0].set_value("Calibrate a parameter").run()
    assert not app.exception and not app.error
    pld_sigma, rdp_sigma = float(metric(app, "noise_multiplier (PLD")), float(metric(app, "noise_multiplier (RDP)"))
    assert pld_sigma < rdp_sigma
    app.radio[1].set_value("steps").run()
    assert not app.exception and int(float(metric(app, "steps (PLD"))) > int(float(metric(app, "steps (RDP)")))
