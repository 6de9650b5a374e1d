"""fedplan.app_pages.widgets without a page: text boxes parse like the command line, messages find their field."""

from __future__ import annotations

import pytest

from fedplan.app_pages.widgets import as_text, box_name, labelled, literal, named_field, parse
from fedplan.planner.tasks.base import options
from fedplan.planner.tasks.mapa import Schedule
from fedplan.planner.tasks.plan import Plan
from tests.pages.helpers import open_page

PLAN = options(Plan)


@pytest.mark.parametrize(("name", "text", "value"), [
    ("clients", "5", 5), ("clients", "1e4", 10_000), ("clients", " 10000.0 ", 10_000), ("clients", "2.5", 2.5),
    ("target_delta", "1e-6", 1e-6), ("target_epsilon", "2", 2.0), ("dataset", "digits", "digits"),
])
def test_text_boxes_parse_like_the_command_line(name, text, value):
    assert parse(name, PLAN[name], text) == value


@pytest.mark.parametrize(("name", "text", "message"), [
    ("clients", "five", "clients must be a whole number such as 10000 or 1e4; got 'five'"),
    ("target_delta", "abc", "target_delta must be a number; got 'abc'"),
    ("target_epsilon", "", "target_epsilon must be a number; got ''"),
])
def test_a_text_that_is_not_a_number_names_the_field(name, text, message):
    with pytest.raises(ValueError) as error:
        parse(name, PLAN[name], text)
    assert str(error.value) == message


def test_several_values_and_an_empty_optional_box():
    upload_epsilon = options(Schedule)["upload_epsilon"]
    assert parse("upload_epsilon", upload_epsilon, "0.1, 0.2 0.3") == (0.1, 0.2, 0.3)
    assert parse("model_dim", options(Schedule)["model_dim"], " ", optional=True) is None


def test_defaults_are_shown_as_users_type_them():
    assert [as_text(value) for value in (1e-6, 50000.0, 2.5, 16, None, (0.1,), 1e20)] == [
        "1e-6", "50000", "2.5", "16", "", "0.1", "1e20"]


@pytest.mark.parametrize(("message", "field"), [
    ("clients must be an integer in [1, inf); got 2.5", "clients"),
    ("upload_epsilon[1] must be a real number in (0, inf); got -1", "upload_epsilon"),
    ("r0 = 0.367879 at sigma = 0.5 violates (16)'s hypotheses", "r0"),
    ("give exactly one of noise_to_sensitivity, noise_std; got none", "noise_std"),
    ("no noise multiplier in [1.2, 200] makes the paper's claim reach δ", None),
    # the Accountant with Steps T empty: under the empty box, not under the first one listed (sample_rate)
    ("give a schedule file, or all of sample_rate, noise_multiplier, steps (missing steps)", "steps"),
])
def test_an_error_is_shown_under_the_field_it_names(message, field):
    assert named_field(message, ["clients", "upload_epsilon", "r0", "noise_std", "sample_rate", "steps"]) == field


def test_literal_text_renders_as_typed():
    """MAPA's statement "a record drawn j times costs j*epsilon_k, at worst b*epsilon_k" rendered "epsilon_k, at worst
    b" in italics; escaped, the CommonMark renderer (markdown-it, as Streamlit's) gives the text back unchanged."""
    from markdown_it import MarkdownIt

    text = "j*epsilon_k, at worst b*epsilon_k = 1.2 (theta*||^2) for $5 and $6 [a](b) x_1_y <b> `c`"
    assert "<em>" in MarkdownIt().render(text)
    rendered = MarkdownIt().render(literal(text))
    assert rendered == f"<p>{text.replace('<', '&lt;').replace('>', '&gt;')}</p>\n"


@pytest.mark.parametrize(("message", "shown"), [
    # the subject, a field named with "=", an item of a field that takes several values
    ("batch_size must be at most dataset_size = 60000; got 70000",
     "Batch size B must be at most Training examples N = 60000; got 70000"),
    ("target_epsilon=0.01 cannot be met: even sample_rate=1 (the upper end of its allowed range) gives ε=3.92",
     "Target ε = 0.01 cannot be met: even Sample rate q = 1 (the upper end of its allowed range) gives ε=3.92"),
    ("upload_epsilon[1] must be a real number in (0, 700]; got -1",
     "ε per upload (value 2) must be a real number in (0, 700]; got -1"),
    ("give a schedule file, or all of sample_rate, noise_multiplier, steps (missing steps)",
     "give a schedule file, or all of Sample rate q, Noise multiplier σ, Steps T (missing Steps T)"),
    # "steps" and "epochs" as words of a sentence stay words; a field the form did not draw keeps its name
    ("epochs = 15 over N = 60000 in batches of 256 is 1e9 steps; at most 1e8 are accounted",
     "Epochs E = 15 over N = 60000 in batches of 256 is 1e9 steps; at most 1e8 are accounted"),
    ("client_sample_rate must be in (0, 1]; got 2", "client_sample_rate must be in (0, 1]; got 2"),
    # a remedy's list names boxes, "over 10 clients" and "use fewer clients" are words
    ("T* = 0 over 10 clients; lower batch_size, clients or epochs, or use fewer clients",
     "T* = 0 over 10 clients; lower Batch size B, Clients N or Epochs E, or use fewer clients"),
])
def test_a_message_names_the_boxes_by_their_labels(message, shown):
    labels = {"batch_size": "Batch size B", "dataset_size": "Training examples N", "target_epsilon": "Target ε",
              "sample_rate": "Sample rate q", "upload_epsilon": "ε per upload", "steps": "Steps T",
              "noise_multiplier": "Noise multiplier σ", "epochs": "Epochs E", "clients": "Clients N"}
    assert labelled(message, labels) == shown


def test_a_box_is_named_by_its_label_without_the_detail():
    assert [box_name(label) for label in ("Batch size B (q = B/N)", "r0: r0(sigma), 1/e or a number",
                                          "Records per client d_i (one for all, or one per client: 6000, 3000, …)",
                                          "Gradient computations K for this curve")] == [
        "Batch size B", "r0", "Records per client d_i", "Gradient computations K for this curve"]


@pytest.fixture
def conflicting_defaults(monkeypatch) -> list[tuple]:
    """Widgets drawn with a default other than the value the Session State API had set for their key (a one-click
    fix): (key, default, value). A widget is given its key's value as its default (``kept_value``), so that a browser
    tab that lost the widget's value shows the server's; Streamlit's log line about a default beside a set value is
    turned off in .streamlit/config.toml."""
    from streamlit.elements.lib import policies
    from streamlit.runtime.state import get_session_state

    found: list[tuple] = []
    check = policies.check_session_state_rules

    def recording(default_value, key, writes_allowed=True):
        state = get_session_state()
        if key is not None and default_value is not None and state.is_new_state_value(key) \
                and isinstance(default_value, str) and default_value != state[key]:
            found.append((key, default_value, state[key]))
        return check(default_value, key, writes_allowed)

    monkeypatch.setattr(policies, "check_session_state_rules", recording)
    return found


def test_a_one_click_fix_sets_its_box_which_is_drawn_with_that_value(conflicting_defaults):
    """The FedSGD-DPC page's "Set ε = 0.00265" under T* = 0 sets the ε box's session state; the box is drawn with
    that value as its default, not the page's "0.05"."""
    page = open_page("3_FedSGD_DPC.py")
    page.text_input[8].set_value("1e-6").run()
    [button] = page.button
    button.click().run()
    assert not page.exception and page.text_input[8].value == "0.00265"
    assert conflicting_defaults == []


def test_the_log_line_about_a_default_beside_a_set_value_is_off():
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert config["global"]["disableWidgetStateDuplicationWarning"] is True


#: Chromium at 1280 × 1000 (benchmarks/browser.py), metric labels that did and did not fit: the results' column (2/3
#: of the page) split in 4 is 123 px wide, in 3 169 px: "Rounds (reported / run)" (23 characters) and "ε per edge
#: (advanced)" (21, with a help icon) were cut at 123 px, "Constant-size rounds" (20) was not; "Smallest ε Theorem 2
#: certifies" (30, help) and "ε at the chosen z (RDP upper bound)" (35, help) were cut at 169 px.
PAGE_WIDTH, COLUMN_GAP, CHARACTER, HELP_ICON = 826, 16, 6.0, 20


def metric_widths(app) -> list[tuple[str, float, float]]:
    """Each metric's label, the width it needs (characters and its help icon) and the width of its column (the
    page's width times each enclosing column's share of its row, less a gap), in pixels."""
    found = []

    def walk(node, share: float) -> None:
        children = list(getattr(node, "children", {}).values())
        weights = sum(child.weight for child in children if type(child).__name__ == "Column")
        for child in children:
            inner = share * child.weight / weights if type(child).__name__ == "Column" else share
            if type(child).__name__ == "Metric":
                needed = CHARACTER * len(child.label) + (HELP_ICON if child.help else 0)
                found.append((child.label, needed, PAGE_WIDTH * share - COLUMN_GAP))
            walk(child, inner)

    walk(app._tree, 1.0)
    return found


def per_user(app):
    app.text_input(key="dpsgd-user").set_value("10").run()


def calibrate_sample_rate(app):
    app.radio[0].set_value("Calibrate a parameter").run()
    app.radio[1].set_value("sample_rate").run()


def no_guarantee(app):
    app.text_input[1].set_value("6000,3000").run()
    app.text_input[0].set_value("2").run()


@pytest.mark.parametrize(("page", "action"), [
    ("1_Accountant.py", None), ("1_Accountant.py", calibrate_sample_rate), ("2_Increasing_sample_sizes.py", None),
    ("3_FedSGD_DPC.py", None), ("3_FedSGD_DPC.py", no_guarantee), ("4_ADP2SGD.py", None), ("5_MAPA.py", None),
    ("6_Damaskinos.py", None), ("8_DP_SGD_and_federated.py", None), ("8_DP_SGD_and_federated.py", per_user),
])
def test_metric_labels_fit_their_columns(page, action):
    """No label is cut in its column (the widths measured in Chromium above); the detail goes in its help."""
    app = open_page(page)
    if action is not None:
        action(app)
    widths = metric_widths(app)
    assert not app.exception and widths
    assert [(label, needed, width) for label, needed, width in widths if needed > width] == []


@pytest.mark.parametrize("current, previous, expected", [
    ({"clients": 100, "epochs": 2.5}, {"clients": 5, "epochs": 2.5}, "clients"),
    ({"clients": 100, "epochs": 5.0}, {"clients": 5, "epochs": 2.5}, None),  # two changed: no single box
    ({"clients": 5, "epochs": 2.5}, {"clients": 5, "epochs": 2.5}, None),
    ({"clients": 100}, None, None),  # nothing answered yet
])
def test_changed_field_is_the_one_box_changed_since_the_last_answer(current, previous, expected):
    from fedplan.app_pages.widgets import changed_field

    assert changed_field(current, previous) == expected
