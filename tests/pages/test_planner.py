"""The planner page (the app's home page): the Plan request built from widgets."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from fedplan.planner.display import epsilon_text
from fedplan.planner.tasks.plan import Plan
from tests.pages.helpers import (
    ROOT,
    capture_downloads,
    charts,
    claims_table,
    error_under,
    errors,
    metric,
    open_page,
    refusal,
    tables,
)

#: A request's field as the Planner's box names it in a message (app_pages/widgets.py labelled): field → label.
BOX_WORDS = (("target_delta", "δ"), ("target_epsilon", "Privacy budget ε"), ("batch_size", "Batch size"),
             ("epochs =", "Compute budget ="), ("or epochs", "or Compute budget"), ("clients =", "Clients ="),
             (", clients", ", Clients"))


def in_page_words(message: str) -> str:
    """The request's message as the page shows it: its fields named by the boxes' labels."""
    for name, label in BOX_WORDS:
        message = message.replace(name, label)
    return message


@pytest.fixture
def planner() -> AppTest:
    return open_page("0_Planner.py")


def test_planner_answers_the_default_question_with_a_schedule_and_downloads(planner):
    assert not planner.exception and not planner.error
    assert metric(planner, "Rounds") == "193" and metric(planner, "σ (tight)") == "1.274"
    assert 0.99 <= float(metric(planner, "ε (PLD, tight)")) <= 1.0
    assert metric(planner, "Paper's σ") == "7.554"
    assert float(metric(planner, "ε at paper's σ")) == pytest.approx(0.1005, abs=2e-4)
    table = tables(planner)[-1]
    assert len(table) == 193 and list(table["sample_size"][:2]) == ["16", "18"]  # one row per change: every round
    assert set(tables(planner)[0]["check"]) == {"holds"}
    labels = [button.label for button in planner.get("download_button")]
    assert labels == ["CSV", "JSON", "YAML", "Opacus"]
    # no Flower export for a per-example plan: the page says where a client-level plan for Flower is made
    assert any("For Flower, plan per client" in line.value and "DP-SGD and federated" in line.value
               for line in planner.caption)


def test_planner_switches_recipe_and_budget(planner):
    planner.selectbox[0].set_value("fedsgd-dpc").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "Clients per round") == "5"
    planner.selectbox[0].set_value("dpscd").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "Rounds") == "7 812"  # exact, thousands spaced for people
    planner.selectbox[0].set_value("adp2sgd").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "Paper's ε") == "none"  # below Theorem 2's floor: no paper answer
    assert 0.99 <= float(metric(planner, "ε (PLD upper bound)")) <= 1.0  # fixed-size, replace-one: symmetrised
    planner.selectbox[0].set_value("mapa").run()
    assert not planner.exception and not planner.error
    composed = float(metric(planner, "ε (optimal)"))
    assert float(metric(planner, "ε at paper's σ")) < composed <= 1.0
    planner.selectbox[0].set_value("increasing-sizes")
    planner.text_input[0].set_value("2").run()
    assert 1.98 <= float(metric(planner, "ε (PLD, tight)")) <= 2.0
    assert int(metric(planner, "Rounds")) < 193


def test_planner_paper_noise_is_one_switch_away(planner):
    planner.radio[1].set_value("paper").run()
    assert not planner.exception and not planner.error
    assert metric(planner, "σ (paper)") == "7.554" == metric(planner, "Paper's σ")
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
    assert errors(planner) == [refusal(Plan, **{field: value}).replace(field, planner.text_input[box].label)]
    assert error_under(planner, planner.text_input[box].label) == errors(planner)[0]
    # the last plan stays in view, said to be the last one (issue 20: the results stay visible)
    assert planner.info[0].value.startswith("The plan below is for the last inputs that planned")
    assert metric(planner, "Rounds") == "193"
    # ... but it cannot be downloaded: the export would run other inputs than the boxes show
    assert not planner.get("download_button")
    assert any(line.value.startswith("Downloads come back when the inputs plan again") for line in planner.caption)


def test_planner_text_that_is_not_a_number_names_the_field(planner):
    planner.text_input[1].set_value("abc").run()
    assert errors(planner) == ["δ must be a number; got 'abc'"]
    planner.text_input[1].set_value("1e-6")
    planner.text_input[4].set_value("five").run()
    assert errors(planner) == ["Clients must be a whole number such as 10000 or 1e4; got 'five'"]
    assert error_under(planner, "Clients") == errors(planner)[0]
    planner.text_input[4].set_value("5e0").run()  # counts parse as on the command line
    assert not planner.error and metric(planner, "Rounds") == "193"


def test_planner_on_a_bundled_data_set_offers_another_recipe_in_one_click(planner):
    planner.radio[0].set_value("A scikit-learn bundled data set").run()  # breast_cancer: 569 examples
    assert not planner.exception
    assert errors(planner) == [in_page_words(refusal(Plan, dataset="breast_cancer"))]
    assert errors(planner)[0].startswith("no increasing-sizes plan: no noise multiplier σ in [1.2, 200]")
    assert "113 records each" in errors(planner)[0]
    # no single input reaches a plan (it takes N_c ≥ 300 records with s₀ = 1): said, and the recipe switch offered
    assert any(text.value.startswith("No single input reaches a plan") for text in planner.markdown)
    assert [button.label for button in planner.button] == [
        "Switch the recipe to Damaskinos: DP-SCD noise calibration"]
    planner.button(key="nearest_recipe").click().run()
    assert not planner.exception and not planner.error
    assert planner.selectbox(key="planner_recipe").value == "dpscd"
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


def test_planner_refused_van_dijk_plan_names_boxes_on_the_page_and_sets_the_nearest_in_one_click(planner):
    """Issue 20: clients 5 → 100 ended in 'widen sigma_range … lower grad_computations', controls the page lacks."""
    planner.text_input(key="planner_clients").set_value("100").run()
    assert not planner.exception
    message = errors(planner)[0]
    assert errors(planner) == [in_page_words(refusal(Plan, clients=100))]
    assert error_under(planner, "Clients") == message  # under the box just changed (it names four: was the top)
    planner.run()  # a rerun with nothing changed keeps it there
    assert error_under(planner, "Clients") == message
    assert "grad_computations" not in message and "sigma_range" not in message
    boxes = {"batch_size": "Batch size: the initial sample size s₀", "clients": "Clients",
             "epochs": "Compute budget: passes over the data (epochs)", "target_epsilon": "Privacy budget ε"}
    named = message[message.rindex(";"):]
    assert all(label.split(":")[0] in named for label in boxes.values()) and all(
        planner.text_input(key=f"planner_{name}").label == label for name, label in boxes.items())
    # the nearest plans, each one input moved (12 clients plan, 13 do not: tests/planner/test_recipes.py)
    labels = [button.label for button in planner.button]
    assert labels[:2] == ["Set Clients to 12", "Set Batch size to 1"]
    planner.button(key="nearest_clients").click().run()
    assert not planner.exception and not planner.error
    assert planner.text_input(key="planner_clients").value == "12" and metric(planner, "Rounds") == "165"


def test_planner_shows_only_the_inputs_the_recipe_reads(planner):
    """Issue 20: DP-SCD ignored the clients box; Zhou's pure-ε plan has no δ, epochs, batch, noise or sampling."""
    planner.selectbox(key="planner_recipe").set_value("dpscd").run()
    assert not planner.exception and not planner.error
    assert [box.label for box in planner.text_input] == [
        "Privacy budget ε", "δ", "Examples", "Features", "Compute budget: passes over the data (epochs)",
        "Batch size", "Seeds to run", "Clipping norm C (bound on each coordinate update)"]  # the last two: validation
    assert "This recipe does not use: Clients." in [caption.value for caption in planner.caption]
    planner.selectbox(key="planner_recipe").set_value("fedsgd-dpc").run()
    assert not planner.exception and not planner.error
    assert [box.label for box in planner.text_input] == ["Privacy budget ε", "Examples", "Features", "Clients",
                                                         "Seeds to run"]  # the last: "Validate this plan"
    assert [radio.label for radio in planner.radio] == ["Data"] and len(planner.selectbox) == 1
    assert ("This recipe does not use: δ, Compute budget: passes over the data (epochs), Batch size, Noise, "
            "Sampling that runs.") in [caption.value for caption in planner.caption]
    # a degenerate plan said in plain words next to its number (issue 20: a 1-round plan came without a word)
    assert metric(planner, "Rounds") == "1"
    assert planner.info[0].value.startswith("A single round: at ε = 1 over 5 clients, Zhou et al.'s bound is "
                                            "smallest when the clients reply once.")


def test_planner_chart_and_headline_name_one_accountant(planner):
    """Issue 20: the chart was RDP while the headline ε was PLD; now the chart's title and axis name the headline's
    accountant, and its last point is the headline's ε (the values: tests/planner/test_recipes.py)."""
    for recipe, label, unit, x_title in [
            ("increasing-sizes", "PLD, tight", "round", "rounds run"),
            ("adp2sgd", "PLD upper bound", "update of one worker", "updates of one worker")]:
        planner.selectbox(key="planner_recipe").set_value(recipe).run()
        assert not planner.exception and not planner.error
        [(spec, [frame])] = charts(planner)
        assert spec["title"] == f"ε spent after each {unit} ({label}, as the headline)"
        assert spec["encoding"]["y"]["title"] == f"ε ({label})" and spec["encoding"]["x"]["title"] == x_title
        assert epsilon_text(frame[f"ε ({label})"].iloc[-1]) == metric(planner, f"ε ({label})")


def test_planner_rerun_reuses_the_plan_and_its_downloads(planner, monkeypatch):
    """Speed (issue 20): a rerun of the same inputs renders no download again (the CSV's cumulative ε composed the
    193 rounds again, 1.9 s) and plans nothing (st.cache_data keyed on the request)."""
    from fedplan.app_pages import widgets

    calls, render = [], widgets.render
    monkeypatch.setattr(widgets, "render", lambda schedule, fmt, **options: calls.append(fmt) or render(schedule, fmt))

    def planned_again(self, **_):
        raise AssertionError("planned again")

    monkeypatch.setattr(Plan, "run", planned_again)
    planner.run()
    assert not planner.exception and not planner.error and metric(planner, "Rounds") == "193"
    assert calls == ["json"]  # the cache key only
    assert [button.label for button in planner.get("download_button")][:2] == ["CSV", "JSON"]


def test_planner_caches_a_refusal_and_a_hidden_box_keeps_its_text(planner, monkeypatch):
    """Speed (issue 20): Zhou's T* = 0 refusal planned again on every rerun (6.6 s in the browser walk); and a box
    the recipe hides (DP-SCD has no Clients) keeps its text for when it is drawn again."""
    planner.selectbox(key="planner_recipe").set_value("fedsgd-dpc").run()
    planner.text_input(key="planner_clients").set_value("10").run()
    message = errors(planner)
    assert message == [in_page_words(refusal(Plan, recipe="fedsgd-dpc", clients=10))]
    assert "use fewer clients" in message[0]
    planner.selectbox(key="planner_recipe").set_value("dpscd").run()
    assert "Clients" not in [box.label for box in planner.text_input]

    def planned_again(self, **_):
        raise AssertionError("planned again")

    monkeypatch.setattr(Plan, "run", planned_again)
    planner.selectbox(key="planner_recipe").set_value("fedsgd-dpc").run()
    assert not planner.exception and errors(planner) == message
    assert planner.text_input(key="planner_clients").value == "10"


# --- "Validate this plan" (issue 20, item 1): the backing simulation of exactly the plan shown

def validation_captions(page) -> list[str]:
    return [caption.value for caption in page.caption]


def test_validate_this_plan_runs_the_plan_shown_and_says_whether_it_meets_its_claims(planner, monkeypatch):
    """Before: the home page ended with "check a plan ... on the Validate page", which ran the paper's σ (7.554), not
    the plan's; now the plan's own schedule runs (its σ, its 193 rounds, its 5 clients of 10 000 examples)."""
    files = capture_downloads(monkeypatch)
    planner.run()  # the plan's downloads, recorded
    plan = json.loads(files["fedplan_increasing-sizes.json"]())
    sigma = plan["change_points"][0]["noise_multiplier"]
    assert metric(planner, "σ (tight)") == f"{sigma:.4g}"
    estimate = ("This run: about 252,020 client updates (the plan's 25202 gradients per client × clients=5 × 2 seeds), "
                "estimated at up to 11 s")
    assert any(text.startswith(estimate) for text in validation_captions(planner))
    planner.button(key="planner_validation_run").click().run()
    assert not planner.exception and not planner.error
    verdict = planner.info[-1].value  # NO GUARANTEE: Lemma 3's delay hypothesis fails (the plan claims no rate)
    assert verdict == ("NO GUARANTEE: 2 of 3 claims pass; 'E||w_t - w*||^2 <= Lemma 3's rate' is NO GUARANTEE: a "
                       "hypothesis of its theorem fails, so the bound promises nothing.")
    claims = {row["claim"]: row["result"] for row in claims_table(planner).to_dict("records")}
    assert claims == {"spent epsilon <= the plan's schedule, same accountant": "PASS",
                      "the plan's epsilon <= the budget": "PASS", "E||w_t - w*||^2 <= Lemma 3's rate": "NO GUARANTEE"}
    exported = json.loads(files["fedplan_increasing-sizes_validation.json"]())
    assert [run["noise"] for run in exported["runs"]] == [{"noise_multiplier": [sigma]}] * 2  # the plan's σ ran
    assert exported["plan"]["rounds"] == plan["rounds"] == 193
    assert exported["plan"]["privacy"]["epsilon"] == plan["privacy"]["epsilon"]
    titles = [spec["title"]["text"] if isinstance(spec["title"], dict) else spec["title"] for spec, _ in
              charts(planner)]
    assert titles[1:] == ["simulated training accuracy (mean over the seeds, 10-90 % band)",
                          "simulated training loss (mean over the seeds, 10-90 % band)",
                          "empirical delays τ̂(t) against Lemma 3's envelope"]  # the first: the plan's ε curve
    accuracy = charts(planner)[1][1][0]
    assert sorted(accuracy["rounds"])[-1] == 193  # the run's curve covers the plan's rounds
    assert any(re.fullmatch(r"This result took \d+\.\d s to compute on the Dask worker \S+ \(estimated 11\.\d s "
                            r"before it started\)\.", text) for text in validation_captions(planner))

    # stale: an input of the run changes, the result stays marked out of date until the next run
    planner.text_input[-1].set_value("0.2").run()  # Clipping norm C, the last box
    assert [w.value for w in planner.warning] == [
        "Out of date (inputs changed): this result is for the inputs of the last run. Press Validate this plan to "
        "update it."]
    assert planner.subheader[-1].value.endswith("— out of date (inputs changed)") and claims_table(planner) is not None


def test_validate_this_plan_on_zhou_plots_the_distance_against_the_plans_bound(planner, monkeypatch):
    files = capture_downloads(monkeypatch)
    planner.selectbox(key="planner_recipe").set_value("fedsgd-dpc").run()
    scale = json.loads(files["fedplan_fedsgd-dpc.json"]())["change_points"][0]["laplace_scale"]
    assert not [box for box in planner.text_input if box.label.startswith("Learning rate")]  # the plan fixes η_t
    planner.button(key="planner_validation_run").click().run()
    assert not planner.exception and not planner.error
    assert planner.success[0].value == "PASS: the run meets every claim (2)."
    (spec, frames), = [chart for chart in charts(planner) if "‖θ_t − θ*‖²" in str(chart[0].get("title"))]
    assert set(frames[1]["series"]) == {"simulated mean", "bound U(t, b)"}
    assert frames[1][frames[1]["series"] == "bound U(t, b)"]["value"].tolist() == pytest.approx([44.339], abs=5e-4)
    exported = json.loads(files["fedplan_fedsgd-dpc_validation.json"]())
    assert [run["noise"] for run in exported["runs"]] == [{"noise_scale": [scale]}] * 2  # the plan's Laplace scale
    # the plan changes (ε 1 → 2): its result is out of date, and the Run button validates the new plan
    planner.text_input(key="planner_target_epsilon").set_value("2").run()
    assert not planner.exception and planner.warning[0].value.startswith("Out of date (inputs changed)")


def test_validate_this_plan_on_dpscd_runs_its_iterations_batches_and_noise(planner, monkeypatch):
    """DP-SCD's plan was "not available" to validate; its schedule now runs on the DP-SCD engine (L = 16 of the
    50 000 examples, T = 7 812 iterations, the tight σ), with the clipping norm as an input."""
    files = capture_downloads(monkeypatch)
    planner.selectbox(key="planner_recipe").set_value("dpscd").run()
    sigma = json.loads(files["fedplan_dpscd.json"]())["change_points"][0]["noise_multiplier"]
    assert [box.label for box in planner.text_input][-1] == "Clipping norm C (bound on each coordinate update)"
    assert any(text.startswith("This run: about 249,984 client updates (the plan's T=7812 iterations × L=16 "
                               "coordinates × 2 seeds)") for text in validation_captions(planner))
    planner.button(key="planner_validation_run").click().run()
    assert not planner.exception and not planner.error
    assert planner.success[0].value == "PASS: the run meets every claim (2)."
    exported = json.loads(files["fedplan_dpscd_validation.json"]())
    assert [run["noise"] for run in exported["runs"]] == [{"noise_multiplier": [sigma]}] * 2  # the plan's σ ran
    assert any(text.startswith("No bound line on the loss: the DP-SCD plan's guarantee is its privacy")
               for text in validation_captions(planner))


def small_plan(planner, files, recipe: str) -> dict:
    """The plan of ``recipe`` for 2 000 synthetic examples of 4 features over 4 clients (the defaults otherwise), its
    JSON download."""
    planner.selectbox(key="planner_recipe").set_value(recipe)
    next(box for box in planner.text_input if box.label == "Examples").set_value("2000")
    next(box for box in planner.text_input if box.label == "Features").set_value("4")
    planner.text_input(key="planner_clients").set_value("4").run()
    assert not planner.exception and not planner.error
    return json.loads(files[f"fedplan_{recipe}.json"]())


def test_validate_this_plan_on_adp2sgd_asks_the_step_and_runs_the_plans_updates_per_worker(planner, monkeypatch):
    """A(DP)²SGD's plan was "not available" to validate; its schedule now runs (2 000 examples over 4 workers, batch
    16, 2.5 epochs: T = 312 iterations, 78 per worker in round robin, the tight σ), with the step η̄ as its one extra
    input; Theorem 1 is NO GUARANTEE (it draws the workers at random)."""
    files = capture_downloads(monkeypatch)
    plan = small_plan(planner, files, "adp2sgd")
    assert (plan["rounds"], plan["metadata"]["iterations"]) == (78, 312)
    labels = [box.label for box in planner.text_input]
    assert labels[labels.index("Seeds to run"):] == ["Seeds to run", "Learning rate η̄"]
    assert any(text.startswith("This run: about 16,624 client updates (the plan's T=312 iterations and ∇F over 2000 "
                               "examples at 200 of them × 2 seeds)") for text in validation_captions(planner))
    planner.text_input[-1].set_value("0.5")
    planner.button(key="planner_validation_run").click().run()
    assert not planner.exception and not planner.error
    assert planner.info[-1].value == ("NO GUARANTEE: 2 of 3 claims pass; '(1/T) sum_t E||grad F(theta^t)||^2 <= "
                                      "Theorem 1' is NO GUARANTEE: a hypothesis of its theorem fails, so the bound "
                                      "promises nothing.")
    claims = {row["claim"]: row["result"] for row in claims_table(planner).to_dict("records")}
    assert claims == {"spent epsilon <= the plan's schedule, same accountant": "PASS",
                      "the plan's epsilon <= the budget": "PASS",
                      "(1/T) sum_t E||grad F(theta^t)||^2 <= Theorem 1": "NO GUARANTEE"}
    exported = json.loads(files["fedplan_adp2sgd_validation.json"]())
    assert exported["plan"]["rounds"] == 78 and exported["inputs"]["learning_rate"] == 0.5
    sigma = plan["change_points"][0]["noise_multiplier"]  # fedplan's σ = 2z, Xu's z = noise_to_sensitivity
    assert [run["noise"] for run in exported["runs"]] == [{"noise_multiplier": [sigma]}] * 2  # the plan's σ ran
    assert any(text.startswith("No bound line on accuracy or loss: the A(DP)²SGD plan's guarantee is its privacy")
               for text in validation_captions(planner))


def test_validate_this_plan_on_mapa_runs_the_plans_stages_and_uploads_per_edge_with_seeds_alone(planner, monkeypatch):
    """MAPA's plan was "not available" to validate; its schedule now runs (2 000 examples over 4 edges, batch 16, 2.5
    epochs: T = 312 Cloud updates, 78 per edge in round robin, its 3 stages), with no input beyond the seeds (the plan
    fixes its steps and sensitivities); both privacy claims and Theorem 4 at every stage pass."""
    files = capture_downloads(monkeypatch)
    plan = small_plan(planner, files, "mapa")
    assert (plan["rounds"], len(plan["change_points"]), plan["privacy"]["releases"]) == (312, 3, 78)
    labels = [box.label for box in planner.text_input]
    assert labels[labels.index("Seeds to run"):] == ["Seeds to run"]
    assert any(text.startswith("This run: about 32,624 client updates (the plan's T=312 iterations and f and ∇f over "
                               "2000 examples at 200 of them × 2 seeds)") for text in validation_captions(planner))
    planner.button(key="planner_validation_run").click().run()
    assert not planner.exception and not planner.error
    assert planner.success[0].value == "PASS: the run meets every claim (5)."
    claims = {row["claim"]: row["result"] for row in claims_table(planner).to_dict("records")}
    assert claims == {"spent epsilon <= the plan's schedule, same accountant": "PASS",
                      "the plan's epsilon <= the budget": "PASS",
                      **{f"stage {s}: mean E||grad f(x_t)||^2 <= Theorem 4": "PASS" for s in (1, 2, 3)}}
    exported = json.loads(files["fedplan_mapa_validation.json"]())
    assert exported["plan"]["rounds"] == 312
    per_upload = plan["privacy"]["epsilon_per_release"]  # the ledger's headline: busiest edge, basic composition
    assert [run["epsilon"] for run in exported["runs"]] == pytest.approx([78 * per_upload] * 2, rel=1e-12)
    assert any(text.startswith("No bound line on accuracy or loss: the MAPA plan's guarantee is its privacy")
               for text in validation_captions(planner))


def test_every_recipe_of_the_planner_has_an_engine_that_validates_its_plan():
    from fedplan.planner.plan_validation import ENGINES
    from fedplan.planner.recipes import RECIPES

    assert set(ENGINES) == set(RECIPES)


@pytest.mark.parametrize("recipe", ["increasing-sizes", "mapa"])
def test_metric_labels_fit_a_fifth_of_the_results_column(recipe):
    # a browser look at 1400 px: "Noise multip…", "ε of the pape…" and "0.00 % of th…" were cut
    planner = open_page("0_Planner.py")
    if recipe != "increasing-sizes":
        planner.selectbox(key="planner_recipe").set_value(recipe).run()
    assert not planner.exception and len(planner.metric) == 5
    for shown in planner.metric:
        assert len(shown.label) <= 16, shown.label
        assert len(shown.proto.delta) <= 11, shown.proto.delta  # "89.9 % left", no arrow: the chip is narrow


def test_an_opacus_file_calibrated_for_opacus_rdp_accountant(monkeypatch):
    # a new user's walk: Opacus's RDPAccountant printed ε = 1.286 for the default plan's σ and target 1
    from opacus.accountants import RDPAccountant

    from fedplan.app_pages.widgets import download_name
    from tests.test_benchmarks import load_benchmark

    files = capture_downloads(monkeypatch)
    planner = open_page("0_Planner.py")
    planner.selectbox(key="planner_library_accountant").set_value("rdp").run()
    assert not planner.exception and not planner.error
    text = files[download_name("fedplan_increasing-sizes_rdp", "opacus")]()
    flow = load_benchmark("flow")
    (sigma,) = flow.opacus_noise_multipliers(text)
    assert sigma > 1.27439  # more noise than the plan's tight σ
    accountant = RDPAccountant()
    accountant.history = [tuple(entry) for entry in flow.assigned(text, "ACCOUNTANT_HISTORY")]
    assert 0.99 <= accountant.get_epsilon(delta=1e-6) <= 1.0  # Opacus's own ε: within 1 % below the target
    assert any(f"σ = {sigma:g} (the plan's 1.27439)" in caption.value for caption in planner.caption)
