"""The increasing-sizes page: the VandijkSelect request built from widgets, and √T·σ against p."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pytest
from scipy.stats import norm

from fedplan.bounds import vandijk
from fedplan.planner.tasks.vandijk import VandijkSelect
from fedplan.planner.vandijk import select_vandijk
from tests.pages.helpers import capture_downloads, error_under, errors, metric, open_page, refusal

MAIN_TEXT = dict(initial_size=16, client_size=10_000, grad_computations=25_000, noise_multiplier=8, target_epsilon=1,
                 growth_exponent=1, r0="1/e", no_pld=True)
NO_SCHEDULE = ("The paper's parameter selection (L211-219) finds no increasing schedule for these inputs: its limits "
               "on the sample rate keep the sizes from growing.")


@pytest.fixture
def page():
    return open_page("2_Increasing_sample_sizes.py")


def box(page, label: str):
    return next(widget for widget in page.text_input if widget.label == label)


def test_corrected_plan_of_the_main_text_example(page):
    assert not page.exception and not page.error
    assert metric(page, "Rounds") == "185 / 185" and metric(page, "Constant-size rounds") == "1 563"
    assert float(metric(page, "ε (RDP upper bound)")) == pytest.approx(0.1253, abs=1e-4)
    assert page.caption[0].value == ("T = 185: the schedule s_i = ⌈N_c q (i+m)^p⌉ reaches K = 25 000 gradient "
                                     "computations after 185 rounds, and T counts the rounds run.")
    rdp_epsilon = VandijkSelect(**MAIN_TEXT).run()["tight_epsilon_rdp"]  # 0.12526 at the paper's δ = 1.10e-7
    assert page.caption[1].value == (
        "The paper's bound claims ε = 1 at its δ; the accountant (RDP upper bound) gives ε = "
        f"{math.ceil(rdp_epsilon * 1e4) / 1e4:.4f} for the same schedule at the same δ: the paper's bound is about "
        f"{1 / rdp_epsilon:.2g} times the accountant's.")


def test_increasing_sizes_page_marks_the_transitions_of_the_noise_curve(page):
    text = next(m.value for m in page.markdown if m.value.startswith("Transitions:"))
    shown = [float(value) for value in re.findall(r"K⁺?⁻?\) = ([0-9.]+)", text)]
    # the plan's m = 12.321 and γ = 0.0666 (rounded here, hence the tolerance)
    expected = vandijk.transition_exponents(initial_size=16, offset=12.321, client_size=10_000, epsilon=1, sigma=8,
                                            grad_computations=100_000, gamma=0.0666, p_max=2.0)
    assert shown == pytest.approx([expected["p_minus"][0], expected["p_plus"][0]], abs=2e-4)
    page.text_input[7].set_value("25000").run()  # K = 25 000: K stays below K⁻ for every p in (0, 2]
    assert any(m.value.startswith("Transitions: none in (0, 2]") for m in page.markdown)
    page.text_input[7].set_value("10").run()  # the curve's K is checked as the plan's: K ≥ s₀
    assert refusal(VandijkSelect, **{**MAIN_TEXT, "grad_computations": 10}) == (
        "grad_computations must be at least initial_size (16); got 10")
    # both boxes by their labels, the plan's s₀ too (drawn by the plan's form, not the curve's)
    assert errors(page) == ["Gradient computations K for this curve must be at least Initial sample size s₀ (16); "
                            "got 10"]
    assert error_under(page, "Gradient computations K for this curve") == errors(page)[0]
    page.text_input[7].set_value("100000").run()
    box(page, "Growth exponent p").set_value("0.5").run()  # m = 0.32: the curve (m fixed, L1151) needs m > 1
    assert not page.exception and metric(page, "Rounds") == "121 / 121"
    assert [info.value for info in page.info] == [
        "No curve for this plan: the curve keeps this plan's offset m = 0.3216 and needs m > 1, where q = s0/(N_c m^p) "
        "falls as p grows (L1151); raise the growth exponent p (m grows with p)."]


def test_paper_variant_explains_its_195_rounds_against_the_183_it_runs(page):
    page.radio[0].set_value("paper").run()
    assert not page.exception and not page.error
    assert metric(page, "Rounds") == "195 / 183" and metric(page, "Paper's δ") == "5.6e-08"
    assert any("hypothesis of the theorem fails" in w.value for w in page.warning)
    # the paper's q and m of Example 3 (L1669): T_up = (2K/(N_c q))^(1/2) = 194.5 -> 195; the sequence
    # ceil(N_c q (i+m)) from i = 0 sums to K = 25 000 after 183 rounds
    q, m = 0.00013216327772100012, 12.106237281566509
    assert math.ceil(math.sqrt(2 * 25_000 / (10_000 * q))) == 195
    total, rounds = 0, 0
    while total < 25_000:
        total, rounds = total + math.ceil(10_000 * q * (rounds + m) - 1e-9), rounds + 1
    assert rounds == 183
    # the paper's δ has no guarantee: said right under it (the label "Paper's δ at ε — no guarantee" was cut)
    assert page.caption[0].value == "**no guarantee**: fails gamma used for q \\>= m/T (realised T)"
    assert page.caption[1].value == (
        "The paper's T = 195 is its estimate ⌈((p+1)K/(N_c q))^(1/(p+1))⌉ (L1539, erratum I-33), which counts sizes "
        "N_c q i^p from i = 0. The schedule run starts at i + m with m = 12.11 and rounds each size up, so the "
        "schedule s_i = ⌈N_c q (i+m)^p⌉ reaches K = 25 000 gradient computations after 183 rounds; every "
        f"accountant's ε is for those 183 rounds. The paper's δ uses γ = m/T = {m / 195:.4g} of its T; the rounds run "
        f"have m/T = {m / 183:.4g}.")


def test_increasing_sizes_page_shows_the_requests_message_under_its_widget(page):
    page.text_input[3].set_value("0.5").run()
    assert not page.exception
    # the run's error (r0 = 1/e leaves (16)'s r infinite at σ = 0.5), under the widget of the r0 it names
    assert errors(page) == [refusal(VandijkSelect, **{**MAIN_TEXT, "noise_multiplier": 0.5})]
    assert errors(page)[0].startswith("r0 must be")
    assert error_under(page, "r0: r0(sigma), 1/e or a number") == errors(page)[0]
    assert [button.label for button in page.button] == ["σ = 5.87"]  # a σ at which r0 = 1/e gives a plan
    page.text_input[0].set_value("x").run()
    assert errors(page) == ["Initial sample size s₀ must be a whole number such as 10000 or 1e4; got 'x'"]


def under_changed_box(box_and_value: str, nearest: str) -> str:
    """A refusal that names no box, under the box just changed: its label and value, the reason, what to do (the
    browser walk: p 1 → 2 showed the reason alone at the top of the form, naming neither box nor value)."""
    return (f"{box_and_value} gives no plan: {NO_SCHEDULE[0].lower()}{NO_SCHEDULE[1:]} Change it back, or take "
            f"{nearest}, the nearest value with a plan (one click, on the right).")


def test_too_little_noise_offers_the_smallest_noise_multiplier_with_a_plan(page):
    """σ 8 → 3: one plain sentence, the selection's own words in an expander, and σ = 5.87 as one click."""
    box(page, "Noise multiplier σ").set_value("3").run()
    assert not page.exception
    assert errors(page) == [under_changed_box("Noise multiplier σ = 3", "σ = 5.87")]
    assert error_under(page, "Noise multiplier σ") == errors(page)[0]  # under the box just changed (was the top)
    assert box(page, "Gradient computations K for this curve")  # the curve's box stays (it had gone)
    message = refusal(VandijkSelect, **{**MAIN_TEXT, "noise_multiplier": 3})
    assert "lower grad_computations or p" in message  # the page names the box: its label
    assert [text.value for text in page.get("text")] == [
        message.replace("grad_computations", "Gradient computations K")]
    assert "m/T iteration diverges" in page.get("text")[0].value
    assert [button.label for button in page.button] == ["σ = 5.87"]  # only σ changed: only σ is searched
    # independently: σ = 5.87 plans, and one round's total variation at the largest q certifies its claim
    at = VandijkSelect(**{**MAIN_TEXT, "noise_multiplier": 5.87})
    sel = select_vandijk(**at.selection_arguments())
    assert max(sel.sizes) / 10_000 * (2 * norm.cdf(1 / (2 * 5.87)) - 1) > sel.delta
    assert at.run()["realised_rounds"] == 244
    page.button[0].click().run()
    assert not page.exception and not page.error
    assert box(page, "Noise multiplier σ").value == "5.87" and metric(page, "Rounds") == "244 / 244"


def test_too_much_work_offers_the_largest_k_with_a_plan(page):
    box(page, "Gradient computations K").set_value("1e7").run()
    assert errors(page) == [under_changed_box("Gradient computations K = 10000000", "K = 45 800")]
    assert [button.label for button in page.button] == ["K = 45 800"]
    with pytest.raises(ValueError, match="m/T iteration diverges"):
        select_vandijk(**VandijkSelect(**{**MAIN_TEXT, "grad_computations": 10**7}).selection_arguments())
    sel = select_vandijk(**VandijkSelect(**{**MAIN_TEXT, "grad_computations": 45_800}).selection_arguments())
    assert max(sel.sizes) / 10_000 * (2 * norm.cdf(1 / (2 * 8)) - 1) > sel.delta  # one round's TV > δ: ε > 0
    page.button[0].click().run()
    assert not page.exception and not page.error
    assert box(page, "Gradient computations K").value == "45800" and metric(page, "Rounds") == "663 / 663"
    box(page, "Gradient computations K").set_value("17").run()  # the selection plans, Theorem 3 refuses: its words
    message = refusal(VandijkSelect, **{**MAIN_TEXT, "grad_computations": 17})
    assert "(inputs: initial_size=16, client_size=10000, grad_computations=17, target_epsilon=1.0, " in message
    for name, label in (("initial_size", "Initial sample size s₀"), ("client_size", "Records per client N_c"),
                        ("grad_computations", "Gradient computations K"), ("target_epsilon", "ε of the paper's claim"),
                        ("noise_multiplier", "Noise multiplier σ"), ("r0", "r0")):
        message = message.replace(f"{name}=", f"{label} = ")
    assert errors(page) == [message]
    assert [button.label for button in page.button] == ["K = 16"]
    page.button[0].click().run()
    assert metric(page, "Rounds") == "1 / 1" and page.caption[0].value == (
        "T = 1: the schedule s_i = ⌈N_c q (i+m)^p⌉ reaches K = 16 gradient computations after 1 round, and T counts "
        "the rounds run.")


def test_growth_exponent_2_names_the_growth_exponent_and_offers_one_that_plans(page):
    """The browser walk's p 1 → 2 ("target_epsilon must be … got 0") now gets the selection's refusal in plain
    words with p = 1.21 as one click; p = 1.3 is a vacuous claim, said so."""
    box(page, "Growth exponent p").set_value("2").run()
    assert not page.exception and errors(page) == [under_changed_box("Growth exponent p = 2", "p = 1.21")]
    assert error_under(page, "Growth exponent p") == errors(page)[0]  # the box, its value, what to do
    assert [button.label for button in page.button] == ["p = 1.21"]
    box(page, "Growth exponent p").set_value("1.3").run()
    claimed = select_vandijk(**VandijkSelect(**{**MAIN_TEXT, "growth_exponent": 1.3}).selection_arguments()).delta
    (shown,) = re.fullmatch(r"Growth exponent p = 1\.3 gives no plan: the paper's bound claims only δ = ([0-9.]+) at "
                            r"ε = 1, a promise the schedule keeps even without noise: there is nothing to plan\. "
                            r"Change it back, or take p = 1\.21, the nearest value with a plan \(one click, on the "
                            r"right\)\.",
                            errors(page)[0]).groups()
    assert claimed <= float(shown) <= claimed * 1.01  # 3 digits, rounded up: never a smaller δ than claimed
    assert "nothing to plan" in refusal(VandijkSelect, **{**MAIN_TEXT, "growth_exponent": 1.3})
    assert [button.label for button in page.button] == ["p = 1.21"]
    page.button[0].click().run()
    assert not page.exception and not page.error and metric(page, "Rounds") == "238 / 238"
    assert not any("target_epsilon" in text for text in errors(page))


def test_the_schedule_downloads_as_csv_and_json(page, monkeypatch):
    files = capture_downloads(monkeypatch)
    page.run()
    assert sorted(files) == ["vandijk_schedule.csv", "vandijk_schedule.json"]
    data = json.loads(files["vandijk_schedule.json"]())
    plan = VandijkSelect(**MAIN_TEXT).run().result
    assert [point["sample_size"] for point in data["change_points"]] == list(plan.selection.sizes)
    assert data["metadata"]["epsilon_claimed"] == 1 and data["metadata"]["delta"] == plan.selection.delta
    assert data["privacy"]["accountant"] == "pld" and data["privacy"]["bound"] == "tight"
    assert 0 < data["privacy"]["epsilon"] <= plan.tight_rdp.epsilon  # the tight PLD ε, below the RDP bound shown
    text = files["vandijk_schedule.csv"]()
    assert "accountant pld (tight)" in text.splitlines()[1]
    rows = list(csv.DictReader(io.StringIO("\n".join(line for line in text.splitlines() if not line.startswith("#")))))
    assert [int(row["sample_size"]) for row in rows] == list(plan.selection.sizes)
    epsilons = [float(row["cumulative_epsilon"]) for row in rows]
    assert epsilons == sorted(epsilons) and epsilons[-1] == pytest.approx(data["privacy"]["epsilon"], rel=1e-9)



def test_a_box_changed_before_the_first_plan_arrives_is_still_the_box_just_changed(page):
    """CI under load (seed 26643737): p 1 → 2 typed while the default plan was still computing showed the reason at
    the top of the form, naming neither the box nor its value. Before the first plan the page compares with the
    inputs it opened with."""
    del page.session_state["vandijk_last_planned"]  # as if the default plan had not come back yet
    box(page, "Growth exponent p").set_value("2").run()
    assert not page.exception and errors(page) == [under_changed_box("Growth exponent p = 2", "p = 1.21")]
    assert error_under(page, "Growth exponent p") == errors(page)[0]
    assert [button.label for button in page.button] == ["p = 1.21"]  # only p changed: only p is searched
