"""fedplan.pages.widgets without a page: text boxes parse like the command line, messages find their field."""

from __future__ import annotations

import pytest

from fedplan.pages.widgets import as_text, literal, named_field, parse
from fedplan.planner.tasks.base import options
from fedplan.planner.tasks.mapa import Schedule
from fedplan.planner.tasks.plan import Plan

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
