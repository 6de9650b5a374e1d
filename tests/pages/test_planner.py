"""The planner page (the app's home page): the Plan request built from widgets."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from fedplan.planner.tasks.plan import Plan
from tests.pages.helpers import ROOT, error_under, errors, metric, open_page, refusal


@pytest.fixture
def planner() -> AppTest:
    return open_page("0_Planner.py")


def test_planner_answers_the_default_question_with_a_schedule_and_downloads(planner):
    assert not planner.exception and not planner.error
    assert metric(planner, "Rounds") == "193" and metric(planner, "Noise multiplier σ (tight)") == "1.274"
    assert 0.99 <= float(metric(planner, "ε (PLD, tight)")) <= 1.0
    assert metric(planner, "Paper's σ") == "7.554"
    assert float(metric(planner, "ε of the paper's σ (tight)")) == pytest.approx(0.1005, abs=2e-4)
    table = planner.dataframe[-1].value
    assert len(table) == 193 and list(table["sample_size"][:2]) == [16, 18]  # one row per change: every round
    assert set(planner.dataframe[0].value["check"]) == {"holds"}
    labels = [button.label for button in planner.get("download_button")]
    assert labels == ["Download CSV", "Download JSON", "Download YAML", "Download opacus"]


def test_planner_switches_recipe_and_budget(planner):
    planner.selectbox[0].set_value("fedsgd-dpc").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "Clients per round") == "5"
    planner.selectbox[0].set_value("dpscd").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "Rounds") == "7812"
    planner.selectbox[0].set_value("adp2sgd").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "ε, paper's claim") == "none"  # below Theorem 2's floor: no paper answer
    assert 0.99 <= float(metric(planner, "ε (PLD upper bound)")) <= 1.0  # fixed-size, replace-one: symmetrised
    planner.selectbox[0].set_value("mapa").run()
    assert not planner.exception and not planner.error
    composed = float(metric(planner, "ε (optimal composition)"))
    assert float(metric(planner, "ε of the paper's σ (tight)")) < composed <= 1.0
    planner.selectbox[0].set_value("increasing-sizes")
    planner.text_input[0].set_value("2").run()
    assert 1.98 <= float(metric(planner, "ε (PLD, tight)")) <= 2.0
    assert int(metric(planner, "Rounds")) < 193


def test_planner_paper_noise_is_one_switch_away(planner):
    planner.radio[1].set_value("paper").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "Noise multiplier σ (paper)") == "7.554" == metric(planner, "Paper's σ")
    assert float(metric(planner, "ε (PLD, tight)")) == pytest.approx(0.1005, abs=2e-4)


@pytest.mark.parametrize(("box", "text", "field", "value"), [
    (0, "-1", "target_epsilon", -1.0),
    (1, "1", "target_delta", 1.0),
    (2, "1", "n_samples", 1),
    (4, "2.5", "clients", 2.5),
])
def test_planner_bad_input_is_the_requests_message_under_its_widget(planner, box, text, field, value):
    planner.text_input[box].set_value(text).run()
    assert not planner.exception
    assert errors(planner) == [refusal(Plan, **{field: value})]
    assert error_under(planner, planner.text_input[box].label) == errors(planner)[0]
    assert not planner.metric  # nothing is planned from refused input


def test_planner_text_that_is_not_a_number_names_the_field(planner):
    planner.text_input[1].set_value("abc").run()
    assert errors(planner) == ["target_delta must be a number; got 'abc'"]
    planner.text_input[1].set_value("1e-6")
    planner.text_input[4].set_value("five").run()
    assert errors(planner) == ["clients must be a whole number such as 10000 or 1e4; got 'five'"]
    assert error_under(planner, "Clients") == errors(planner)[0]
    planner.text_input[4].set_value("5e0").run()  # counts parse as on the command line
    assert not planner.error and metric(planner, "Rounds") == "193"


def test_planner_on_a_bundled_data_set_reports_a_too_small_client(planner):
    planner.radio[0].set_value("A scikit-learn bundled data set").run()  # breast_cancer: 569 examples
    assert not planner.exception
    assert len(planner.error) == 1
    assert planner.error[0].value.startswith("no noise multiplier in [1.2, 200] makes the paper's claim reach δ")
    planner.selectbox[1].set_value("dpscd").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "Rounds") == str(int(2.5 * 569 / 16))  # ⌊epochs·N/L⌋ = 88


def test_planner_asks_for_an_upload(planner):
    planner.radio[0].set_value("Upload a LIBSVM or CSV file").run()
    assert not planner.exception
    assert errors(planner) == ["upload a data set, or choose synthetic data"]


def test_app_entry_point_opens_the_planner():
    entry = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not entry.exception and not entry.error
    assert entry.title[0].value == "fedplan: plan a private federated run"
    assert metric(entry, "Rounds") == "193"
