"""The Streamlit accountant page, run headless with streamlit.testing."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=120).run()


def metric(app: AppTest, label_start: str) -> str:
    return next(m.value for m in app.metric if m.label.startswith(label_start))


def test_epsilon_page_shows_pld_rdp_and_assumptions(app):
    assert not app.exception and not app.error
    assert 5.1919 <= float(metric(app, "ε (PLD")) <= 5.1979
    assert metric(app, "ε (PLD") == "5.1937"  # 5.19362 rounded up, never down
    assert metric(app, "ε (RDP)") == "5.6320"
    assert any("Poisson sampling" in m.value for m in app.markdown)


def test_bad_input_is_shown_with_st_error(app):
    app.text_input[0].set_value("1.5").run()
    assert not app.exception
    assert [e.value for e in app.error] == ["sample_rate must be a real number in (0, 1]; got 1.5"]
    app.text_input[0].set_value("abc").run()
    assert [e.value for e in app.error] == ["sample_rate must be a number; got 'abc'"]


def test_pld_points_on_the_curve(app):
    app.checkbox[0].check().run()
    assert not app.exception and not app.error


def test_calibration_page(app):
    app.radio[0].set_value("Calibrate a parameter").run()
    assert not app.exception and not app.error
    pld_sigma, rdp_sigma = float(metric(app, "noise_multiplier (PLD)")), float(metric(app, "noise_multiplier (RDP)"))
    assert pld_sigma < rdp_sigma
    app.radio[1].set_value("steps").run()
    assert not app.exception and int(float(metric(app, "steps (PLD)"))) > int(float(metric(app, "steps (RDP)")))
