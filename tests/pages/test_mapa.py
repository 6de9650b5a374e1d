"""The MAPA page: the mapa Schedule request built from widgets."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from fedplan.planner.tasks.mapa import Schedule
from tests.pages.helpers import capture_downloads, charts, error_under, errors, metric, open_page, refusal

#: P₁ with the Theorem 3 start and the paper's noise model, σ cancelling (spec li_mapa chk A8), at the paper's
#: settings b = 12, ε = 0.1, δ = 1e-3, θ = 0.5, τ = 5: 2(bε²(1 − √(1 − δ)) + 8)/(b²ε²θ²(τ + 1)) = 7.407463 (TV-M5).
P1 = 2 * (12 * 0.1**2 * (1 - (1 - 1e-3) ** 0.5) + 8) / (12**2 * 0.1**2 * 0.5**2 * 6)
#: γ₁ = 1/(2 P₁ L (τ + 1)) (Alg. 1, li Eq. (16)) at L = 10, τ = 5.
GAMMA1 = 1 / (2 * P1 * 10 * 6)


def test_mapa_page_shows_the_paper_totals_and_switches_noise_model():
    page = open_page("5_MAPA.py")
    assert not page.exception and not page.error
    # labels that fit a quarter of the results' width ("ε total, all uploads (basic)" was cut)
    assert [m.label for m in page.metric] == ["Stages", "ε total (basic)", "ε/edge (basic)", "ε/edge (advanced)"]
    assert (metric(page, "ε total"), metric(page, "ε/edge (basic)"), metric(page, "ε/edge (advanced)")) == (
        "2 500", "500", "86.52")  # spec TV-A1: 2500, 500, 86.5162 (rounded up)
    corrected_stages = int(metric(page, "Stages"))
    page.radio[0].set_value("paper").run()
    assert not page.exception and int(metric(page, "Stages")) > corrected_stages
    page.text_input[5].set_value("1.5").run()
    assert refusal(Schedule, iterations=25000, initial_gap=100, sensitivity_decay=1.5) == (
        "sensitivity_decay must be a real number in (0, 1); got 1.5")
    assert errors(page) == ["Sensitivity decay θ must be a real number in (0, 1); got 1.5"]
    assert error_under(page, "Sensitivity decay θ") == errors(page)[0]


def test_mapa_page_takes_one_upload_epsilon_per_edge():
    page = open_page("5_MAPA.py")
    page.text_input[0].set_value("0.1 0.1 0.1 0.1 0.2").run()  # as on the command line: one value per edge
    assert not page.exception and not page.error
    assert metric(page, "ε total") == "5 000"  # basic composition over T uploads at the largest ε
    page.text_input[0].set_value("0.1, 0.2").run()
    assert refusal(Schedule, iterations=25000, initial_gap=100, upload_epsilon=(0.1, 0.2)) == (
        "upload_epsilon must be one value or one value per edge (5); got 2 values")
    assert errors(page) == ["ε per upload must be one value or one value per edge (5); got 2 values"]
    assert error_under(page, "ε per upload") == errors(page)[0]


def test_mapa_page_totals_are_formatted_for_people():
    """T = 1e8 showed "10000000.0000"; now "1e7" (basic composition: 1e8 uploads of ε = 0.1)."""
    page = open_page("5_MAPA.py")
    page.text_input[8].set_value("1e8").run()
    assert not page.exception and metric(page, "ε total") == "1e7" and metric(page, "ε/edge (basic)") == "2e6"


def test_mapa_page_statement_renders_without_italics():
    """The statement's "j*epsilon_k, at worst b*epsilon_k" rendered "epsilon_k, at worst b" in italics."""
    page = open_page("5_MAPA.py")
    [statement] = [caption.value for caption in page.caption if caption.value.startswith("MAPA (Li et al.")]
    html = MarkdownIt().render(statement)
    assert "<em>" not in html and "costs j*epsilon_k, at worst b*epsilon_k = 1.2 per upload" in html


def test_mapa_page_draws_the_stages_over_the_iterations():
    """The step-size chart was bars from t = start to end on a linear axis: the first stages (1, 4, 13 iterations
    of 25 000) invisible, one flat bar. Now step lines over a log t axis, a point per stage and the last stage's end;
    γ₁ is the paper's 1/(2P₁L(τ+1)) with P₁ from the closed form (spec chk A8)."""
    page = open_page("5_MAPA.py")
    page.radio[0].set_value("paper").run()
    [(spec, [frame])] = charts(page)
    step, scales = spec["vconcat"]
    assert step["mark"]["type"] == scales["mark"]["type"] == "line"
    assert step["encoding"]["x"]["scale"]["type"] == "log" and scales["encoding"]["y"]["scale"]["type"] == "log"
    stages = Schedule(iterations=25000, initial_gap=100).run()["stages"]
    assert list(frame["t"]) == [row["start"] for row in stages] + [25000]
    assert frame["step size γ_s"][0] == pytest.approx(GAMMA1, rel=1e-6) and GAMMA1 == pytest.approx(1.1249916e-3,
                                                                                                       rel=1e-7)
    assert "goes from 0.001125 to 7.542e-4 over 9 stages" in next(
        caption.value for caption in page.caption if caption.value.startswith("Step size"))


def test_mapa_page_exports_a_compact_schedule(monkeypatch):
    """The CSV was 811 KB (a row per iteration); now a row per stage (9 rows, under 2 KB) with the cumulative ε
    (basic composition) at each stage's end, and the paper's step size."""
    files = capture_downloads(monkeypatch)
    page = open_page("5_MAPA.py")
    page.radio[0].set_value("paper").run()
    text = files["mapa_schedule.csv"]()
    rows = [line.split(",") for line in text.splitlines() if not line.startswith("#")]
    header, body = rows[0], rows[1:]
    assert len(text) < 2048 and len(body) == int(metric(page, "Stages")) == 9
    assert [int(row[header.index("rounds")]) for row in body][:4] == [1, 4, 13, 51]
    assert float(body[0][header.index("learning_rate")]) == pytest.approx(GAMMA1, rel=1e-12)
    assert [round(float(row[header.index("P")]), 6) for row in body][:4] == [7.407463, 7.40763, 7.408297, 7.410964]
    assert float(body[-1][header.index("cumulative_epsilon")]) == pytest.approx(2500, rel=1e-12)
    assert "mapa_schedule.json" in files


def test_mapa_page_says_when_the_schedule_cannot_train():
    """N = 1e6 with the corrected noise (E‖η‖² = N(N+1)λ²): P₁ ≈ 8N(N+1)/(b²θ²ε²(τ+1)) = 3.7e12 and γ₁ = 1/(2P₁L(τ+1))
    = 2.25e-15, so 25 000 steps add up to 5.6e-11, 5.6e-10 of one gradient step 1/L: said in words, with the
    boxes to change. The paper's defaults travel 23 full steps: no warning."""
    page = open_page("5_MAPA.py")
    assert not page.warning
    page.text_input[10].set_value("1e6").run()
    # P₁(τ+1) = 8σ²/(b³θ²ΔS₀²) + 8Δ₀/(b²θ²ΔS₀²), Δ₀ = N(N+1)ΔS₀²/ε² (spec li_mapa L248), ΔS₀ = 223.578838 (TV-P2)
    p1 = (8 * 30**2 / (12**3 * 0.5**2 * 223.578838**2) + 8 * 1e6 * (1e6 + 1) / (12**2 * 0.5**2 * 0.1**2)) / 6
    travel = 25000 / (2 * p1 * 10 * 6)  # one stage: T₁ far beyond T
    assert (f"{travel:.4g}", f"{travel * 10:.4g}") == ("5.625e-11", "5.625e-10")
    [warning] = [element.value for element in page.warning]
    assert "the step sizes add up to 5.625e-11, 5.625e-10 of one full gradient step 1/L = 0.1" in warning
    assert "raise **ε per upload** or **Iterations T**" in warning and "N(N+1)" in warning


def test_mapa_page_refuses_an_upload_epsilon_beyond_advanced_composition_under_its_box():
    """ε = 1e9 per upload was refused as "epsilon must be ... [0, 700]" at the top of the form (a name not on the
    page); now under the ε box, naming it by its label."""
    page = open_page("5_MAPA.py")
    page.text_input[0].set_value("1e9").run()
    assert error_under(page, "ε per upload") == "ε per upload must be a real number in (0, 700]; got 1e+09"


def test_mapa_page_explains_a_single_stage():
    """T = 40 with the corrected noise at N = 10: stage 1 lasts T₁ = 44 iterations (the T = 25 000 schedule starts
    stage 2 at t = 45), more than T, so the schedule has one stage: said in words."""
    page = open_page("5_MAPA.py")
    page.text_input[8].set_value("40").run()
    assert metric(page, "Stages") == "1"
    assert Schedule(iterations=25000, initial_gap=100, noise_model="corrected", model_dim=10).run()["stages"][1][
        "start"] == 45
    [note] = [element.value for element in page.info]
    assert note.startswith("**One stage only.** The first stage would last 44 iterations, more than T = 40")
