"""fedplan planner page (the app's home page, opened by ``streamlit run app.py``).

The user states a privacy budget (ε, δ), a data set, the number of clients and a compute budget, picks a recipe,
and gets what to run: by default the noise the tight accountant calibrates for the sampling that runs (the tight ε
within 1 % below the budget), with the paper's own noise and the budget it leaves unused beside it; the schedule by
change of parameters, every hypothesis checked, and downloads in fedplan's formats and for Opacus, Flower and
TF-Privacy where the plan runs there. The page builds the :class:`~fedplan.planner.tasks.plan.Plan` request of
``fedplan plan`` from its widgets (:mod:`fedplan.app_pages.widgets`) and shows its report; the other pages (sidebar)
hold the accountant, one page per paper and the validation by simulation.

Only the inputs the chosen recipe reads are drawn (:data:`~fedplan.planner.recipes.RECIPE_INPUTS`); a plan the
van Dijk recipe refuses gets the nearest values that plan, one click each (:meth:`Plan.nearest`); a degenerate plan
(one round, a bound that promises nothing, a budget left unused) is said in words beside its numbers; the ε chart
is the headline's accountant, named. A plan is computed in a child process of the server
(:mod:`fedplan.app_pages.background`): when the tight calibration takes longer than 0.1 s the page shows progress,
with the time the last plan took as estimate and Cancel, keeps the previous plan in view marked as such, and stays
live; plans (refusals too), their downloads and the chart are kept per request.

Under the plan, "Validate this plan" runs the backing simulation of exactly that plan (its schedule, data and clients:
:class:`~fedplan.planner.tasks.validate_plan.ValidatePlan`) on the app's executor, with the progress, time estimate,
Cancel, claims and charts of the Validate page (:mod:`fedplan.app_pages.plan_validation`), for every recipe
(:data:`~fedplan.planner.plan_validation.ENGINES`).
"""

from __future__ import annotations

import functools
import hashlib

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.app_pages.background import answer, known
from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.markdown_elements import show_table
from fedplan.app_pages.plan_validation import validation_section
from fedplan.app_pages.widgets import Form, changed_field, download_name, downloads
from fedplan.bounds.sampling import SAMPLING_HELP, SAMPLINGS
from fedplan.planner.display import epsilon_text, number_text, theorem_label
from fedplan.planner.export import for_library, render
from fedplan.planner.library_accountants import library_module
from fedplan.planner.plan_validation import ENGINES
from fedplan.planner.recipes import RECIPE_INPUTS, RECIPES, EpsilonCurve
from fedplan.planner.simulate.data import SKLEARN_SETS
from fedplan.planner.tasks.base import Report
from fedplan.planner.tasks.plan import Plan
from fedplan.planner.tasks.validate_plan import ValidatePlan
from fedplan.planner.uploads import UPLOAD_SUFFIXES, dataset_from_upload

st.set_page_config(page_title="fedplan: planner", layout="wide")

DATA_SOURCES = ("Synthetic logistic data", "A scikit-learn bundled data set", "Upload a LIBSVM or CSV file")


@st.cache_data(show_spinner=False, max_entries=8)
def uploaded_data(filename: str, content: bytes):
    return dataset_from_upload(filename, content)


def data_inputs(form: Form) -> dict | None:
    """The data fields of the request: synthetic (n_samples × n_features), a bundled set, or an upload's arrays."""
    source = st.radio("Data", DATA_SOURCES)
    if source == DATA_SOURCES[0]:
        form.field("n_samples", "Examples")
        form.field("n_features", "Features")
        return {"dataset": "synthetic"}
    if source == DATA_SOURCES[1]:
        form.field("dataset", "Data set (standardised features)", choices=list(SKLEARN_SETS), widget="selectbox")
        return {}
    upload = st.file_uploader("LIBSVM or CSV file", type=[suffix.lstrip(".") for suffix in UPLOAD_SUFFIXES])
    if upload is None:
        form.error("upload a data set, or choose synthetic data")
        return None
    features, labels = uploaded_data(upload.name, upload.getvalue())
    return {"dataset": upload.name, "features": features, "labels": labels}


#: The boxes a one-click fix sets (their session-state keys) and every input's label; the recipe decides which are
#: drawn (:data:`~fedplan.planner.recipes.RECIPE_INPUTS`).
KEYS = {name: f"planner_{name}" for name in ("target_epsilon", "clients", "epochs", "batch_size")}
RECIPE_KEY = "planner_recipe"
#: The last request that planned: its plan stays in view under a refusal.
LAST_KEY = "planner_last_request"
#: The inputs of the last run that built a request, and the box a refused plan's message went under (its key).
LAST_INPUTS, REFUSED_BOX = "planner_last_inputs", "planner_refused_box"
LABELS = {"target_epsilon": "Privacy budget ε", "target_delta": "δ", "clients": "Clients",
          "epochs": "Compute budget: passes over the data (epochs)", "batch_size": "Batch size",
          "noise": "Noise", "sampling": "Sampling that runs"}


def request_inputs() -> tuple[Form, Plan | None]:
    """The :class:`Plan` request from the widgets of the inputs the chosen recipe reads (None, with the reason
    shown, if the input is refused); the inputs it ignores are not drawn, and a caption names them."""
    st.subheader("Your run")
    for key in KEYS.values():  # a box the recipe hides keeps its text for when it is drawn again
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    form = Form(Plan)
    recipe = form.field("recipe", "Recipe", widget="selectbox", format_func=lambda key: RECIPES[key][0],
                        key=RECIPE_KEY)
    used = RECIPE_INPUTS[recipe]
    form.field("target_epsilon", LABELS["target_epsilon"], key=KEYS["target_epsilon"])
    if "target_delta" in used:
        form.field("target_delta", LABELS["target_delta"], default="1e-6")
    data = data_inputs(form)
    for name in ("clients", "epochs", "batch_size"):
        if name in used:
            label = LABELS[name] + (": the initial sample size s₀" if recipe == "increasing-sizes" and
                                    name == "batch_size" else "")
            form.field(name, label, key=KEYS[name])
    if "noise" in used:
        form.field("noise", LABELS["noise"], format_func=NOISE_LABELS.get)
    if "sampling" in used:
        form.field("sampling", LABELS["sampling"], choices=[None, *SAMPLINGS], widget="selectbox",
                   format_func=lambda name: "the recipe's own" if name is None else f"{name}: {SAMPLING_HELP[name]}")
    unused = [LABELS[name] for name in LABELS if name != "target_epsilon" and name not in used]
    if unused:
        st.caption(f"This recipe does not use: {', '.join(unused)}.")
    return form, None if data is None else form.build(**data)


NOISE_LABELS = {"tight": "tight: spend the budget", "paper": "the paper's σ"}


#: Accountant names short enough for a metric label in a fifth of the results column (the full name is in its help).
SHORT_ACCOUNTANT = {"RDP upper bound": "RDP bound", "optimal composition": "optimal", "participation bound":
                    "part. bound"}


def _unused(share) -> str:
    return f"{100 * share:.1f} % left"  # of the budget (the help says so): short enough for the metric's chip


def headline_metrics(values) -> None:
    columns = st.columns(5)
    columns[0].metric("Rounds", f"{values['rounds']:,}".replace(",", " "))  # exact, thousands spaced
    if values.get("noise_multiplier") is not None:
        columns[1].metric(f"σ ({values['noise']})", f"{values['noise_multiplier']:.4g}",
                          help=f"noise multiplier σ (noise std / clipping norm); aggregated noise √T·σ = "
                               f"{values['aggregated_noise']:.4g}")
    elif "clients_per_round" in values:
        columns[1].metric("Clients per round", f"{values['clients_per_round']}")
    else:
        columns[1].metric(f"ε/upload ({values['noise']})", f"{values['per_upload_epsilon']:.4g}",
                          help=f"{values['stages']} MAPA stages")
    label = values["epsilon_label"]
    columns[2].metric(f"ε ({SHORT_ACCOUNTANT.get(label, label)})", epsilon_text(values["tight_epsilon"]),
                      delta=_unused(values["unused_budget"]), delta_color="off", delta_arrow="off",
                      help=f"{label}: {values['guarantee']}; sampling {values['sampling']}; "
                           f"{values['tight_accountant']}")
    hypotheses = values["hypotheses"]
    if values.get("paper_noise_multiplier") is not None:
        columns[3].metric(theorem_label("Paper's σ", hypotheses), f"{values['paper_noise_multiplier']:.4g}",
                          help="the noise multiplier the paper's own rule gives for this budget")
    elif values.get("paper_per_upload_epsilon") is not None:
        columns[3].metric(theorem_label("Paper's ε/upload", hypotheses),
                          f"{values['paper_per_upload_epsilon']:.4g}")
    else:
        columns[3].metric("Paper's σ", "none", help="the paper's theorem certifies nothing for this budget")
    if values.get("paper_tight_epsilon") is None:
        columns[4].metric("Paper's ε", "none", help="the paper's theorem certifies nothing for this plan")
    else:
        claim = values["claimed_epsilon"]
        columns[4].metric("ε at paper's σ", epsilon_text(values["paper_tight_epsilon"]),
                          delta=_unused(values["paper_unused_budget"]), delta_color="off", delta_arrow="off",
                          help=f"the tight ε of the paper's σ, by the headline's accountant; the paper claims ε = "
                               f"{epsilon_text(claim) if claim is not None else 'none'} at "
                               f"δ = {values['claimed_delta']:.3g}")


def hypotheses_table(values) -> None:
    if not values["hypotheses"]:
        return
    frame = pd.DataFrame([{"check": "holds" if h["holds"] else "FAILS", "hypothesis": h["name"],
                           "numbers": h["detail"], "paper line": h["source"]} for h in values["hypotheses"]])
    if not values["hypotheses_hold"]:
        st.warning("A hypothesis of the paper's theorem fails for this plan: its claimed ε is not a guarantee.")
    show_table(frame)


def notes(values) -> None:
    """What is unusual about the plan, in plain words, next to its numbers: a single round, a bound that promises
    nothing, a budget left unused."""
    for note in [*values["notes"], *([values["note"]] if values.get("note") else [])]:
        st.info(note)


@st.cache_data(show_spinner=False, max_entries=32)
def curve_chart(curve: EpsilonCurve) -> dict:
    """The Vega-Lite spec of ε after each round, titled with the accountant of the headline ε (cached: Altair's
    validation is the largest part of a rerun)."""
    x_title, y_title = curve.axis, f"ε ({curve.label})"
    frame = pd.DataFrame({x_title: curve.rounds, y_title: curve.epsilons})
    chart = alt.Chart(frame).mark_line(point=len(curve.rounds) <= 12).encode(
        x=alt.X(x_title, title=x_title), y=alt.Y(y_title, title=y_title))
    return chart.properties(height=220, title=f"ε spent after each {curve.unit} ({curve.label}, as the headline)"
                            ).to_dict()


def schedule_section(result, *, current: bool) -> None:
    """The ε curve, the phases and the downloads; no downloads when the plan shown is not for the current inputs
    (a refused input keeps the last plan in view: exporting it would run other inputs than the boxes show)."""
    schedule = result.schedule
    if result.epsilon_curve is not None:
        show_chart(curve_chart(result.epsilon_curve))
    phases = pd.DataFrame([{"start round": start, "rounds": length, **values}
                           for start, length, values in schedule.phases()])
    show_table(phases)
    if current:
        offered = downloads(schedule, f"fedplan_{result.recipe}")
        if "flower" not in offered:
            st.caption("For Flower, plan per client (clients, clients per round, rounds) on the **DP-SGD and "
                       "federated** page (sidebar): these recipes protect one example or add Laplace noise.")
        if "opacus" in offered:
            opacus_for_its_accountant(schedule, f"fedplan_{result.recipe}")
    else:
        st.caption("Downloads come back when the inputs plan again: the plan shown is for earlier inputs.")


#: The accountants an Opacus file's σ can be calibrated for (planner.library_accountants): fedplan's tight one (the
#: plan's σ), or the one the training loop will print, Opacus's RDP or PRV accountant.
OPACUS_ACCOUNTANTS = {"fedplan": "fedplan's tight accountant (the plan's σ)", "rdp": "Opacus's RDPAccountant",
                      "prv": "Opacus's PRVAccountant (slow: about half a minute)"}


def opacus_for_its_accountant(schedule, stem: str) -> None:
    """An Opacus file whose σ makes Opacus's own accountant report ε ≤ the target (its RDP accountant reports 1.286
    for the default plan's tight σ, its PRV accountant 1.0099: a training loop printing them would say the budget
    is exceeded). Calibrated in the background (the library's accountant is called on the schedule)."""
    choice = st.selectbox("σ of an Opacus file calibrated for", list(OPACUS_ACCOUNTANTS),
                          format_func=OPACUS_ACCOUNTANTS.__getitem__, key="planner_library_accountant",
                          help="the accountant your training loop prints ε with: its ε of the file's σ is then at "
                               "most the target (fedplan's tight ε of that σ is smaller)")
    if choice == "fedplan":
        return
    digest = hashlib.sha256(render(schedule, "json").encode()).hexdigest()
    try:
        library = answer(("library", digest, choice), functools.partial(for_library, schedule, "opacus", choice),
                         kind="library", label=f"Calibrating σ for {OPACUS_ACCOUNTANTS[choice]}",
                         imports=(library_module("opacus", choice),))
    except ValueError as refused:
        st.error(str(refused))
        return
    if library is None:
        return
    record = library.metadata["library_accountant"]
    st.download_button(f"Opacus, σ for its {choice.upper()} accountant", render(library, "opacus"),
                       file_name=download_name(f"{stem}_{choice}", "opacus"))
    st.caption(f"σ = {record['noise_multiplier']:g} (the plan's {record['fedplan_noise_multiplier']:g}): "
               f"{record['calibrated_for']} reports ε = {record['library_epsilon']:.4f} ≤ {record['target_epsilon']:g}"
               f"; fedplan's tight accountant ({record['fedplan_accountant']}) gives ε = "
               f"{record['fedplan_epsilon']:.4f} for it, so the run spends less than the budget "
               f"({record['library_calls']} call(s) of Opacus's accountant, {record['seconds']:g} s).")


def edited_box(request: Plan, key: tuple) -> str | None:
    """Where a refusal naming several boxes goes: under the one box changed since the last run that built a
    request (the user's last edit), kept for these inputs (``key``: :func:`plan_key`) on later reruns. Called on
    every run that builds a request: a refusal computed in the background arrives in a later run, after the one
    that saw the edit (it went to the top of the form)."""
    kept = st.session_state.get(REFUSED_BOX)
    box = changed_field(request.inputs(), st.session_state.get(LAST_INPUTS))
    if box is None and kept is not None and kept[0] == key:
        box = kept[1]
    st.session_state[REFUSED_BOX] = (key, box)
    return box


def plan_key(request: Plan) -> tuple:
    """What a plan depends on: the request's fields and the digests of an upload's arrays."""
    digests = tuple(None if array is None else hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
                    for array in (request.features, request.labels))
    return ("plan", tuple(request.inputs().items()), digests)


def planned(request: Plan) -> tuple[Report | None, str | None]:
    """The request's report, or the message refusing it (kept too: Zhou's T* = 0 over 100 clients took 10-30 s to
    refuse). Computed in the background (:mod:`fedplan.app_pages.background`): a plan the tight calibration takes
    seconds for shows progress while the page stays live."""
    try:
        return request.run(), None
    except ValueError as error:
        return None, str(error)


def offer_nearest(request: Plan, right, key: tuple) -> None:
    """Under a refused increasing-sizes plan: a button per input whose nearest value has a plan (the others held),
    and one to switch to DP-SCD, whose plan needs no schedule of the paper's form. :meth:`Plan.nearest` plans
    again for each input (2-3 s): in the background, like the plan (``key``: :func:`plan_key`)."""
    with right:
        found = answer(("nearest", key), request.nearest, kind="nearest", label="Looking for the nearest plans")
    if found is None:
        return
    right.markdown("**The nearest plans that exist** (one click sets the box; the other inputs stay):")
    for name, value in found.items():
        text = str(value) if isinstance(value, int) else number_text(value, 3)
        right.button(f"Set {LABELS[name]} to {text}", key=f"nearest_{name}", on_click=st.session_state.__setitem__,
                     args=(KEYS[name], text))
    if not found:
        right.write("No single input reaches a plan of this recipe (the others held): change two, or the recipe.")
    right.button(f"Switch the recipe to {RECIPES['dpscd'][0]}", key="nearest_recipe",
                 on_click=st.session_state.__setitem__, args=(RECIPE_KEY, "dpscd"))


#: Seeds the "Validate this plan" section runs at most (the default plan's 2 seeds take about 11 s on 2 cores).
MAX_SEEDS = 5
#: Where the section keeps its last result (with the key of the plan and inputs that produced it).
VALIDATION_KEY = "planner_validation"


def validate_section(request: Plan, result, *, current: bool) -> None:
    """"Validate this plan": the backing simulation of exactly the plan shown (its schedule, data and clients) on the
    app's executor, its claims and curves against the plan's bound. A plan shown for earlier inputs has no Run button,
    and a result of other inputs is marked out of date."""
    st.subheader("Validate this plan")
    st.caption(f"Runs the plan's own schedule (rounds, sample sizes, noise, clients and data as shown) on "
               f"{ENGINES[result.recipe]} with every example training, at most {MAX_SEEDS} seeds, and checks the "
               "plan's claims.")
    left, right = st.columns([1, 2])
    with left:
        form = Form(ValidatePlan)
        seeds = form.count("seeds", "Seeds to run", "2", low=1, high=MAX_SEEDS,
                           help=f"how many seeds to run (0, 1, …), at most {MAX_SEEDS} here")
        if result.recipe == "increasing-sizes":  # the plan fixes neither the step sizes nor the clipping norm
            form.field("learning_rate", "Learning rate η₀ (η_t = η₀/(1 + βt))")
            form.field("decay", "Decay β")
            form.field("clipping_norm", "Clipping norm C")
        elif result.recipe == "dpscd":  # nor DP-SCD's bound on a coordinate update
            form.field("clipping_norm", "Clipping norm C (bound on each coordinate update)")
        elif result.recipe == "adp2sgd":  # nor A(DP)²SGD's step (its run clips unit rows at G = 1)
            form.field("learning_rate", "Learning rate η̄")
        # MAPA's plan fixes its steps γ_s and sensitivities ΔS_s (clipping at bΔS_s/2): the seeds are all it needs
        validation = None
        if current and seeds is not None:
            validation = form.build(plan_schedule=result.schedule, dataset=request.dataset,
                                    n_samples=request.n_samples, n_features=request.n_features,
                                    features=request.features, labels=request.labels, clients=request.clients,
                                    seeds=tuple(range(seeds)))
        elif not current:
            st.caption("Validation comes back when the inputs plan again: the plan shown is for earlier inputs.")
        else:
            form.show_problems()
    key = None if validation is None else (tuple(request.inputs().items()), tuple(validation.inputs().items()))
    validation_section(validation, key, state_key=VALIDATION_KEY, controls=left, output=right,
                       on_error=form.error, button="Validate this plan",
                       file_stem=f"fedplan_{result.recipe}_validation")


def main() -> None:
    st.title("fedplan: plan a private federated run")
    st.caption("State your budget, data and compute; pick a recipe from the papers; get what to run, calibrated so "
               "that the tight ε of the sampling that runs spends the budget, with the paper's own answer and the "
               "budget it leaves unused beside it.")
    left, right = st.columns([1, 2])
    with left:
        form, request = request_inputs()
    report, current, pending = None, True, False
    if request is not None:
        with right:
            key = plan_key(request)  # hashes an upload's arrays: once a run
            edited = edited_box(request, key)
            outcome = answer(key, functools.partial(planned, request), kind="plan", label="Planning")
        pending = outcome is None
        report, refusal = (None, None) if pending else outcome
        if refusal is not None:
            form.error(refusal, otherwise=edited)
            if request.recipe == "increasing-sizes":
                offer_nearest(request, right, key)
    if request is not None:
        st.session_state[LAST_INPUTS] = request.inputs()
    if report is not None:
        st.session_state[LAST_KEY] = request
    elif LAST_KEY in st.session_state:  # the last plan stays in view, said to be the last one
        last, current = st.session_state[LAST_KEY], False
        report = (known(plan_key(last)) or (None, None))[0]
        if report is not None:
            right.info("The plan below is for the earlier inputs: the new one is being planned (above)." if pending
                       else "The plan below is for the last inputs that planned: correct the input marked in red (or "
                       "take a fix above) to update it.")
    if report is None:
        return
    with right:
        headline_metrics(report.values)
        notes(report.values)
        st.caption(report.statement)
        hypotheses_table(report.values)
        schedule_section(report.result, current=current)
    validate_section(st.session_state[LAST_KEY], report.result, current=current)


main()
