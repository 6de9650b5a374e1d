"""The FedSGD-DPC page: the FedsgdDpcOptimum request (Laplace, raw constants) built from widgets."""

from __future__ import annotations

import json

import pytest

from fedplan.planner.tasks.fedsgd_dpc import FedsgdDpcOptimum
from tests.pages.helpers import capture_downloads, charts, error_under, errors, metric, open_page, refusal

CLIENTS = "Clients N (up to 10 000 here)"
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
    assert refusal(FedsgdDpcOptimum, **{**README, "strong_convexity": 30}) == (
        "smoothness must be a real number in [30, inf); got 20")
    assert errors(fedsgd_page) == ["Smoothness λ must be a real number in [30, inf); got 20"]
    assert error_under(fedsgd_page, "Smoothness λ") == errors(fedsgd_page)[0]
    fedsgd_page.text_input[3].set_value("10")
    fedsgd_page.text_input[0].set_value("1").run()
    # the request's words with the page's own range (N ≤ 10 000 here; the request takes up to 1e7)
    assert refusal(FedsgdDpcOptimum, **{**README, "clients": 1}) == "clients must be an integer in [2, 1e+07]; got 1"
    assert errors(fedsgd_page) == ["Clients N must be an integer in [2, 10000]; got 1"]
    assert error_under(fedsgd_page, CLIENTS) == errors(fedsgd_page)[0]


def rendered(markdown: str) -> str:
    """HTML of a markdown string by a CommonMark renderer (markdown-it, like Streamlit's front end)."""
    from markdown_it import MarkdownIt

    return MarkdownIt().render(markdown)


def test_fedsgd_page_explains_t_zero_and_offers_the_smallest_epsilon_that_trains(fedsgd_page):
    """ε = 1e-6 gave "T* = 0" and nothing else. Now the page says in words why (no round beats the initial model),
    names the box to change, and one click sets the smallest ε with T* ≥ 1 (0.00265, planner test against brute
    force), where one round is explained too."""
    fedsgd_page.text_input[8].set_value("1e-6").run()
    assert not fedsgd_page.exception and not fedsgd_page.error and metric(fedsgd_page, "T*") == "0"
    [warning] = [element.value for element in fedsgd_page.warning]
    assert "T\\* = 0: do not train" in warning and "<em>" not in rendered(warning)
    assert "Raise **ε of every client (Laplace, pure)** to at least 0.00265" in warning
    assert not fedsgd_page.get("download_button")  # nothing to export
    [button] = fedsgd_page.button
    assert button.label == "Set ε = 0.00265"
    button.click().run()
    assert fedsgd_page.text_input[8].value == "0.00265" and metric(fedsgd_page, "T*") == "1"
    assert not fedsgd_page.warning and fedsgd_page.info[0].value.startswith("**One round only.**")


def test_fedsgd_page_takes_one_size_per_client(fedsgd_page):
    """"6000,3000" was refused as not a whole number; it is one size per client now (as on the command line)."""
    box = "Records per client d_i (one for all, or one per client: 6000, 3000, …)"
    fedsgd_page.text_input[1].set_value("6000,3000").run()
    assert refusal(FedsgdDpcOptimum, **{**README, "client_size": (6000, 3000)}) == (
        "client_size must be one value or one value per client (10); got 2 values")
    assert errors(fedsgd_page) == [
        "Records per client d_i must be one value or one value per client (10); got 2 values"]
    assert error_under(fedsgd_page, box) == errors(fedsgd_page)[0]
    fedsgd_page.text_input[0].set_value("2").run()
    assert not fedsgd_page.exception and not fedsgd_page.error
    request = FedsgdDpcOptimum(**{**README, "clients": 2, "client_size": (6000, 3000)}).run()
    assert metric(fedsgd_page, "T*") == f"{request['T_star']}" == "14"
    assert metric(fedsgd_page, "Bound U(T*, b*)") == "0.3618"  # d_1 = ... = d_N (L250) fails: said right under it
    assert [c.value for c in fedsgd_page.caption if c.value.startswith("**no guarantee**")] == [
        "**no guarantee**: fails d\\_1 = ... = d\\_N"]
    assert request["bound"] <= 0.3618 < request["bound"] + 1e-4  # rounded up in the 4th digit


def test_fedsgd_page_keeps_every_input_and_the_last_answer_under_a_bad_value(fedsgd_page):
    fedsgd_page.text_input[0].set_value("x").run()
    assert error_under(fedsgd_page, CLIENTS) == "Clients N must be a whole number such as 10000 or 1e4; got 'x'"
    assert [box.label for box in fedsgd_page.text_input] == [
        CLIENTS, "Records per client d_i (one for all, or one per client: 6000, 3000, …)", "Model dimension p",
        "Strong convexity μ", "Smoothness λ", "Gradient bound G", "Non-iid degree Γ", "‖θ₀ − θ*‖² (Y₀)",
        "ε of every client (Laplace, pure)", "L1 clipping norm ξ₁",
        "Fixed clients per round b (optional: optimise T only)", "Fixed rounds T (optional: optimise b only)"]
    assert fedsgd_page.radio[0].label == "Variant"
    assert metric(fedsgd_page, "T*") == "120"  # the last valid answer stays, marked as such
    assert fedsgd_page.info[0].value.startswith("The answer below is for the last valid inputs")
    fedsgd_page.text_input[0].set_value("20").run()
    assert not fedsgd_page.info and not fedsgd_page.error and metric(fedsgd_page, "T*") != "120"


def test_fedsgd_page_regime_renders_without_stray_emphasis(fedsgd_page):
    """"Regime: **b*=1**" rendered as "b=1*" (the asterisk opened an emphasis); the statement's "theta*" likewise."""
    [regime] = [element.value for element in fedsgd_page.markdown if element.value.startswith("Regime")]
    html = rendered(regime)
    assert "<strong>b*=1</strong>" in html and "<em>" not in html and "critical ε = 0.0004992" in html
    assert all("<em>" not in rendered(caption.value) for caption in fedsgd_page.caption)


def test_fedsgd_page_exports_json_and_csv(monkeypatch):
    files = capture_downloads(monkeypatch)
    page = open_page("3_FedSGD_DPC.py")
    assert sorted(files) == ["fedsgd_dpc.csv", "fedsgd_dpc.json"]
    schedule = json.loads(files["fedsgd_dpc.json"]())
    assert schedule["rounds"] == 120 and schedule["change_points"][0]["clients_per_round"] == 1
    text = files["fedsgd_dpc.csv"]()
    assert "# guarantee: (ε = 0.05, δ = 0)-DP per example (record-level): Laplace releases, ε = 0.00416667 each, 12 " \
           "per unit, basic composition" in text
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    assert rows[0].startswith("start_round,rounds,clients_per_round") and rows[1].startswith("0,120,1,laplace,")
    assert len(rows) == 2 and not page.exception


def test_fedsgd_page_heat_map_labels_a_few_round_numbers_per_axis(fedsgd_page):
    """Every one of the 61 rounds (0, 6, 12, 18, … 353, 360) was labelled, turned on its side: crammed. Now the rounds
    are drawn in round steps (10 up to 3T* = 360) and a few round numbers label each axis, the rounds horizontally."""
    [(spec, [heat, _])] = charts(fedsgd_page)
    x, y = spec["layer"][0]["encoding"]["x"]["axis"], spec["layer"][0]["encoding"]["y"]["axis"]
    assert sorted(set(heat["T"])) == list(range(0, 361, 10)) and sorted(set(heat["b"])) == list(range(1, 11))
    assert x["labelAngle"] == 0 and x["values"] == [0, 100, 200, 300]
    assert y["values"] == [1, 2, 4, 6, 8, 10] and x["labelOverlap"] is y["labelOverlap"] is False  # all drawn
    fedsgd_page.text_input[0].set_value("1000").run()  # b on a geometric spread: labelled at the powers of ten
    [(spec, [heat, _])] = charts(fedsgd_page)
    x, y = spec["layer"][0]["encoding"]["x"]["axis"], spec["layer"][0]["encoding"]["y"]["axis"]
    assert x["values"] == [0, 10_000, 20_000, 30_000] and y["values"] == [1, 10, 100, 1000]
    assert set(y["values"]) <= set(heat["b"]) and set(x["values"]) <= set(heat["T"])


def test_fedsgd_page_metric_labels_fit_their_columns(fedsgd_page):
    """ "b* (clients per round)" and "Bound U(T*, b*) — no guarantee" were cut in a column a quarter of the results
    wide (Chromium, 1280 px: 123 px, about 20 characters)."""
    assert [m.label for m in fedsgd_page.metric] == ["T* (rounds)", "b* (clients/round)", "Bound U(T*, b*)",
                                                     "Paper rule"]
    assert fedsgd_page.metric[3].help == "(T, b) of the paper rule, U = 0.0675"
    assert 0.0674 < FedsgdDpcOptimum(**README).run()["paper_rule"]["bound"] <= 0.0675  # rounded up


def test_fedsgd_page_heat_map_stays_small_for_many_clients(fedsgd_page):
    """N = 1000 drew 120 × 1000 cells (4 s a rerun); now at most 40 b (with b* and the powers of ten) by about 60 T."""
    fedsgd_page.text_input[0].set_value("1000").run()
    [(spec, [heat, star])] = charts(fedsgd_page)
    assert heat["b"].nunique() <= 41 and heat["T"].nunique() <= 61 and len(star) == 1
    assert {1, 1000, int(star["b"][0])} <= set(heat["b"]) and int(star["T"][0]) == 12000


def test_fedsgd_page_privacy_caption_shows_the_epsilon_the_noise_guarantees(fedsgd_page):
    """Paper variant, b = 5: the noise is calibrated on bT/N = 5 · 49/10 = 24.5 replies, but a client replies up to 25
    times (erratum Z-1), so the guarantee is 25 · 0.05/24.5 = 0.0510204 > the target 0.05: the page shows that ε,
    rounded up, with the mechanism, accounting, sampling and neighbouring relation."""
    fedsgd_page.radio[0].set_value("paper")
    fedsgd_page.text_input[10].set_value("5").run()
    [privacy] = [caption.value for caption in fedsgd_page.caption if caption.value.startswith("Privacy")]
    assert privacy.startswith("Privacy: every client's records are protected with pure ε ≤ 0.05103 (Laplace, basic "
                              "composition over at most 25 replies; no sampling")
    assert 25 * 0.05 / 24.5 <= 0.05103 < 25 * 0.05 / 24.5 + 1e-5


def test_fedsgd_page_caps_the_clients_it_searches(fedsgd_page):
    """N = 1e5 took 40 s (the exact optimum tries every b); the page takes N up to 10 000 and says so under the box."""
    fedsgd_page.text_input[0].set_value("1e5").run()
    assert error_under(fedsgd_page, CLIENTS) == "Clients N must be an integer in [2, 10000]; got 100000"
    assert metric(fedsgd_page, "T*") == "120"  # the last valid answer stays
