"""The accountant page: the Epsilon and Calibrate* requests built from widgets."""

from __future__ import annotations

import csv
import json
import math

import pytest
from scipy.optimize import brentq
from scipy.stats import norm
from streamlit.testing.v1 import AppTest

from fedplan.app_pages.widgets import literal
from fedplan.bounds import accounting
from fedplan.planner.tasks.accounting import CalibrateNoise, CalibrateSampleRate, Epsilon
from tests.pages.helpers import capture_downloads, charts, error_under, errors, metric, open_page, refusal

SCHEDULE = dict(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5)
PAGE_BUDGET = dict(time_budget=10.0)  # the page's PLD time budget (app_pages/1_Accountant.py TIME_BUDGET)


def set_schedule(app: AppTest, sample_rate: str, noise_multiplier: str, steps: str) -> AppTest:
    for box, text in zip(app.text_input[:3], (sample_rate, noise_multiplier, steps), strict=True):
        box.set_value(text)
    return app.run()


def labels(app: AppTest) -> list[str]:
    return [m.label for m in app.metric]


@pytest.fixture
def app() -> AppTest:
    return open_page("1_Accountant.py")


def test_epsilon_page_shows_pld_rdp_and_assumptions(app):
    assert not app.exception and not app.error
    assert 5.1919 <= float(metric(app, "ε (PLD")) <= 5.1979
    assert metric(app, "ε (PLD") == "5.1927"  # 5.19262 rounded up, never down
    assert metric(app, "ε (RDP upper bound)") == "5.6320"
    assert any("under Poisson sampling" in m.value and "add/remove-one" in m.value for m in app.caption)


def test_the_sampling_that_runs_is_accounted(app):
    app.selectbox[0].set_value("fixed_size").run()
    app.selectbox[1].set_value("replace_one").run()
    assert not app.exception and not app.error
    # PLD of the symmetrised pair (docs/SAMPLING.md §1) and WBK'19's RDP, both at σ/2: far above Poisson's 5.19
    assert float(metric(app, "ε (PLD upper bound)")) > 2 * 5.1937
    assert float(metric(app, "ε (RDP upper bound)")) > float(metric(app, "ε (PLD upper bound)"))
    assert any("under fixed-size sampling" in m.value and "replace-one" in m.value for m in app.caption)
    app.selectbox[0].set_value("with_replacement").run()
    app.selectbox[1].set_value("add_or_remove_one").run()
    assert not app.exception
    assert errors(app) == ["Sampling = with_replacement needs Data set size N (N): a record's multiplicity among "
                           "s = qN draws is Binomial(s, 1/N)"]  # "sampling=… needs dataset_size": the boxes' names
    app.selectbox[0].set_value("shuffle").run()
    assert not app.exception and not app.error
    assert float(metric(app, "ε (exact, upper bound)")) > 5.1937


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
    # the request's words (value, allowed range) with the box named by its label, not by its field sample_rate
    assert refusal(Epsilon, **{**SCHEDULE, "sample_rate": 1.5}) == (
        "sample_rate must be a real number in (0, 1]; got 1.5")
    assert errors(app) == ["Sample rate q must be a real number in (0, 1]; got 1.5"]
    assert error_under(app, "Sample rate q (share of the data per step)") == errors(app)[0]
    assert metric(app, "ε (PLD, tight)") == "5.1927"  # the last valid inputs' answer stays, saying so
    assert "last valid inputs" in app.info[0].value
    app.text_input[0].set_value("abc").run()
    assert errors(app) == ["Sample rate q must be a number; got 'abc'"]
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
    statement = CalibrateNoise(target_epsilon=2, target_delta=1e-5, sample_rate=0.01, steps=10_000,
                               **PAGE_BUDGET).run().statement
    assert app.caption[0].value == literal(statement)  # shown as typed: 'sample_rate=…' is no markup
    pld_sigma = float(metric(app, "σ (PLD"))
    rdp_sigma = float(metric(app, "σ (RDP upper bound)"))
    assert pld_sigma < rdp_sigma
    app.radio[1].set_value("steps").run()
    assert not app.exception and int(metric(app, "T (PLD")) > int(metric(app, "T (RDP upper bound)"))
    shown = metric(app, "T (PLD")
    app.text_input[0].set_value("abc").run()  # refused under its box; the last valid answer stays, saying so
    assert error_under(app, "Target ε") == "Target ε must be a number; got 'abc'"
    assert metric(app, "T (PLD") == shown and "last valid inputs" in app.info[0].value


def test_solve_for_names_the_boxes_by_their_labels(app):
    """ "Solve for: noise_multiplier | steps | sample_rate" showed the request's field names; now the labels of the
    boxes they replace, and the answer is headed by the symbol with the name in its help."""
    app.radio[0].set_value("Calibrate a parameter").run()
    solve_for = app.radio[1]
    assert solve_for.label == "Solve for" and solve_for.options == ["Noise multiplier σ", "Steps T", "Sample rate q"]
    assert [box.label for box in app.text_input][2:4] == ["Sample rate q (share of the data per step)", "Steps T"]
    assert app.metric[0].label == "σ (PLD, tight)" and app.metric[0].help.startswith("Noise multiplier σ, calibrated")


def test_small_and_large_epsilons_keep_their_digits(app):
    set_schedule(app, "1e-4", "2", "10")
    tight, rdp = (Epsilon(sample_rate=1e-4, noise_multiplier=2, steps=10, delta=1e-5, accountant=name,
                          **PAGE_BUDGET).run()["epsilon"] for name in ("pld", "rdp"))
    assert 0.0002282 < tight < 0.0002283 and 0.1028 < rdp < 0.1029
    assert metric(app, "ε (PLD, tight)") == "0.0002283"  # 4 significant digits, rounded up (was 0.0003)
    assert metric(app, "ε (RDP upper bound)") == "0.1029"
    set_schedule(app, "0.5", "0.5", "2000")
    large = Epsilon(sample_rate=0.5, noise_multiplier=0.5, steps=2000, delta=1e-5, **PAGE_BUDGET).run()["epsilon"]
    assert large > 100 and metric(app, "ε (").count(".") == 1 and len(metric(app, "ε (").replace(".", "")) == 5
    assert float(metric(app, "ε (")) >= large


def test_a_single_step_answer_is_explained(app):
    app.radio[0].set_value("Calibrate a parameter").run()
    app.radio[1].set_value("steps").run()
    app.text_input[0].set_value("0.15").run()
    one, two = (Epsilon(**{**SCHEDULE, "steps": steps}, **PAGE_BUDGET).run()["epsilon"] for steps in (1, 2))
    assert one <= 0.15 < two  # 0.1423 and 0.1745: one step fits, two do not
    assert not app.exception and not app.error and metric(app, "T (PLD, tight)") == "1"
    assert app.info[0].value.startswith("Only 1 step meets the target")


def test_epsilon_zero_by_the_participation_bound_is_explained_not_a_traceback(app):
    # Browser walk: a ZeroDivisionError traceback ("RDP overstates ε by" divided by the PLD's ε = 0). At q = 1e-6
    # for 10 steps a record is used at all with probability 1 - (1 - 1e-6)^10 = 9.99996e-6 ≤ δ = 1e-5: ε = 0.
    assert 1 - (1 - 1e-6) ** 10 <= 1e-5
    set_schedule(app, "1e-6", "5", "10")
    assert not app.exception and not app.error
    assert [(m.label, m.value) for m in app.metric] == [("ε (participation bound)", "0")]
    assert "used at all with probability at most δ" in app.info[0].value


def test_calibrating_the_sample_rate_for_a_tiny_target_is_an_answer(app):
    # Browser walk: calibrating q for target ε = 0.01 showed a ZeroDivisionError traceback; PLD would need 6.7e6
    # grid points, so the RDP answer is reported, named as the upper bound it is, with ε = 0 explained.
    app.radio[0].set_value("Calibrate a parameter").run()
    app.radio[1].set_value("sample_rate").run()
    app.text_input[0].set_value("0.01").run()
    assert not app.exception and not app.error
    assert labels(app) == ["q (RDP upper bound)", "ε reached (RDP upper bound)"]
    assert metric(app, "q (") == "1.18942e-07" and metric(app, "ε reached") == "0"
    assert "RDP answer reported" in app.warning[0].value and "far below the target 0.01" in app.info[0].value


def test_every_accountant_is_named_by_its_guarantee(app):
    # Browser walk: a fallback to RDP was headed "ε (RDP, tight)" with "RDP overstates ε by 0.0 %". Only a tight
    # PLD says "tight"; "overstates" only against a tight PLD; every other ε is an upper bound and says so.
    tight, rdp = (Epsilon(**SCHEDULE, accountant=name, **PAGE_BUDGET).run()["epsilon"] for name in ("pld", "rdp"))
    assert labels(app) == ["ε (PLD, tight)", "ε (RDP upper bound)", "RDP overstates ε by"]
    assert metric(app, "RDP overstates") == f"{100 * (rdp / tight - 1):.3g} %" == "8.46 %"
    app.selectbox[0].set_value("fixed_size").run()
    fixed = {name: Epsilon(**SCHEDULE, sampling="fixed_size", accountant=name, **PAGE_BUDGET).run()["epsilon"]
             for name in ("pld", "rdp")}
    assert labels(app) == ["ε (PLD upper bound)", "ε (RDP upper bound)", "RDP above PLD by"]  # fits its column
    assert metric(app, "RDP above") == f"{100 * (fixed['rdp'] / fixed['pld'] - 1):.3g} %"
    app.selectbox[0].set_value("shuffle").run()
    assert labels(app) == ["ε (exact, upper bound)"]  # no credit for shuffling: exact composition, upper bound
    app.selectbox[0].set_value("poisson").run()
    app.selectbox[1].set_value("replace_one").run()
    assert labels(app) == ["ε (PLD, tight)"] and any("No RDP bound" in m.value for m in app.caption)
    app.selectbox[1].set_value("add_or_remove_one").run()
    set_schedule(app, "1e-5", "1.1", "100")  # PLD would need 6.7e6 grid points: RDP answers
    assert not app.exception and not app.error
    assert labels(app) == ["ε (RDP upper bound)"]
    assert "The tight PLD ε was not computed" in app.warning[0].value


def test_the_curve_is_the_accounted_run_with_named_axes_and_accountants(app):
    (spec, frames), = charts(app)
    assert spec["layer"][0]["encoding"]["x"]["title"] == "steps T (log scale)"
    assert spec["layer"][0]["encoding"]["y"]["title"] == "ε at δ = 1e-05"
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert (scale["domain"], scale["range"]) == (["RDP upper bound", "PLD, tight"], ["#1f77b4", "#d62728"])
    line = frames[0].set_index("steps")["epsilon"]
    assert line[10_000] == pytest.approx(5.631992, rel=1e-6)  # the RDP metric's 5.6320, rounded up
    app.text_input[5].set_value("0.1").run()  # two-stage: the line is the two-stage run's RDP (was one-stage's)
    (spec, frames), = charts(app)
    two_stage = Epsilon(**SCHEDULE, client_sample_rate=0.1, accountant="rdp", **PAGE_BUDGET).run()["epsilon"]
    assert frames[0].set_index("steps")["epsilon"][10_000] == pytest.approx(two_stage, rel=1e-9)
    assert two_stage < 0.5 * line[10_000]


def test_a_rerun_reads_the_curve_from_the_cache(app, monkeypatch):
    calls = []
    curve = accounting.epsilon_curve
    monkeypatch.setattr(accounting, "epsilon_curve", lambda **options: calls.append(options) or curve(**options))
    app.run()
    app.checkbox[0].check().run()
    app.checkbox[0].uncheck().run()
    assert not app.exception and calls == []  # (was one 120-point curve per rerun)


def test_exports_what_each_task_computes(monkeypatch):
    files = capture_downloads(monkeypatch)
    app = open_page("1_Accountant.py")
    assert set(files) == {"epsilon.json", "epsilon.csv"}
    document = json.loads(files["epsilon.json"]())
    expected = Epsilon(**SCHEDULE, **PAGE_BUDGET).run().values
    answer = document["answer"]
    assert answer["epsilon"] == expected["epsilon"] and (answer["accountant"], answer["bound"]) == ("pld", "tight")
    assert (answer["sampling"], answer["neighboring_relation"], answer["delta"]) == ("poisson", "add_or_remove_one",
                                                                                      1e-5)
    assert document["comparison"]["accountant"] == "rdp" and document["comparison"]["bound"] == "upper bound"
    assert {row["accountant"] for row in document["curve"]} == {"RDP upper bound", "PLD, tight"}
    rows = list(csv.DictReader(files["epsilon.csv"]().splitlines()))
    assert [row["role"] for row in rows[:2]] == ["answer", "comparison"]
    assert (rows[0]["accountant"], float(rows[0]["epsilon"]), rows[0]["steps"]) == ("PLD, tight",
                                                                                     expected["epsilon"], "10000")
    assert len(rows) == 2 + len(document["curve"])
    assert all((row["sampling"], row["neighboring_relation"], float(row["delta"])) == ("poisson", "add_or_remove_one",
                                                                                       1e-5) for row in rows)
    app.radio[0].set_value("Calibrate a parameter").run()
    calibrated = CalibrateNoise(target_epsilon=2, target_delta=1e-5, sample_rate=0.01, steps=10_000,
                                **PAGE_BUDGET).run().values
    document = json.loads(files["calibrate_noise_multiplier.json"]())
    assert document["answer"]["value"] == calibrated["value"] == 2.12747 and document["answer"]["accountant"] == "pld"
    (row,) = csv.DictReader(files["calibrate_noise_multiplier.csv"]().splitlines())
    assert (row["parameter"], float(row["value"]), row["accountant"], float(row["target_epsilon"]),
            float(row["delta"]), row["sampling"]) == ("noise_multiplier", 2.12747, "PLD, tight", 2, 1e-5, "poisson")


def analytic_gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """ε of one Gaussian release of sensitivity 1 at δ (Balle & Wang 2018, Theorem 8), solved independently."""
    def excess(epsilon):
        a, b = 1 / (2 * noise_multiplier), epsilon * noise_multiplier
        return norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b) - delta
    return brentq(excess, 1e-6, 50, xtol=1e-12)


def test_an_unreachable_target_offers_the_nearest_one_with_one_click(app):
    app.radio[0].set_value("Calibrate a parameter").run()
    app.radio[1].set_value("sample_rate").run()
    app.selectbox[0].set_value("shuffle").run()
    app.text_input[0].set_value("0.01").run()
    message = refusal(CalibrateSampleRate, target_epsilon=0.01, target_delta=1e-5, noise_multiplier=1.1, steps=10_000,
                      sampling="shuffle", **PAGE_BUDGET)
    assert message.startswith("target_epsilon=0.01 cannot be met: even sample_rate=1e-12 (the lower end")
    shown = message.replace("target_epsilon=", "Target ε = ").replace("sample_rate=", "Sample rate q = ")
    assert errors(app) == [shown] and error_under(app, "Target ε") == shown
    # shuffling uses every record once however small q is: one Gaussian release, ε = 3.92125 at σ = 1.1, δ = 1e-5
    assert analytic_gaussian_epsilon(1.1, 1e-5) == pytest.approx(3.92125, abs=1e-5)
    assert [button.label for button in app.button] == ["Set target ε to 3.93"]
    assert [m.value for m in app.markdown if m.value.startswith("No ")] == [
        "No Sample rate q meets this target. The nearest target that can be met: ε = 3.93 (Sample rate q = 1e-12, "
        "the end of its range, reaches ε = 3.92125)."]
    app.button[0].click().run()
    assert not app.exception and not app.error and app.text_input[0].value == "3.93"
    assert labels(app)[0] == "q (exact, upper bound)" and float(metric(app, "ε reached")) <= 3.93


def test_a_schedule_file_is_accounted_named_and_exported(monkeypatch):
    files = capture_downloads(monkeypatch)
    app = open_page("1_Accountant.py")
    app.radio[0].set_value("ε of a schedule file").run()
    text = b"sample_rate,noise_multiplier,steps\n0.01,1.1,5000\n0.02,1.5,2000\n"
    app.file_uploader[0].set_value(("plan.csv", text, "text/csv")).run()
    assert not app.exception and not app.error
    segments = ((0.01, 1.1, 5000), (0.02, 1.5, 2000))
    tight, rdp = (Epsilon(segments=segments, delta=1e-5, accountant=name, **PAGE_BUDGET).run()["epsilon"]
                  for name in ("pld", "rdp"))
    assert labels(app) == ["ε (PLD, tight)", "ε (RDP upper bound)", "RDP overstates ε by"]
    assert float(metric(app, "ε (PLD, tight)")) >= tight > float(metric(app, "ε (PLD, tight)")) - 1e-4
    document = json.loads(files["schedule_epsilon.json"]())
    assert document["answer"]["epsilon"] == tight and document["comparison"]["epsilon"] == rdp
    assert [segment["steps"] for segment in document["answer"]["segments"]] == [5000, 2000]
    rows = list(csv.DictReader(files["schedule_epsilon.csv"]().splitlines()))
    assert [(row["role"], row["accountant"], row["steps"]) for row in rows] == [
        ("answer", "PLD, tight", "7000"), ("comparison", "RDP upper bound", "7000")]
