"""fedplan planner page (the app's home page, opened by ``streamlit run app.py``).

The user states a privacy budget (ε, δ), a data set, the number of clients and a compute budget, picks a recipe,
and gets what to run: by default the noise the tight accountant calibrates for the sampling that runs (the tight ε
within 1 % below the budget), with the paper's own noise and the budget it leaves unused beside it; the schedule by
change of parameters, every hypothesis checked, and downloads in fedplan's formats and for Opacus, Flower and
TF-Privacy where the plan runs there. The page builds the :class:`~fedplan.planner.tasks.plan.Plan` request of
``fedplan plan`` from its widgets (:mod:`fedplan.pages.widgets`) and shows its report; the other pages (sidebar)
hold the accountant, one page per paper and the validation by simulation.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.bounds.sampling import SAMPLING_HELP, SAMPLINGS
from fedplan.pages.widgets import Form, downloads, form_page
from fedplan.planner.display import epsilon_text, theorem_label
from fedplan.planner.recipes import RECIPES
from fedplan.planner.simulate.data import SKLEARN_SETS
from fedplan.planner.tasks.plan import Plan
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


def request_inputs() -> tuple[Form, Plan | None]:
    """The :class:`Plan` request from the widgets (None, with the reason shown, if the input is refused)."""
    st.subheader("Your run")
    form = Form(Plan)
    form.field("target_epsilon", "Privacy budget ε")
    form.field("target_delta", "δ", default="1e-6")
    data = data_inputs(form)
    form.field("clients", "Clients")
    form.field("epochs", "Compute budget: passes over each client's data")
    form.field("batch_size", "Batch size (van Dijk: the initial sample size s₀)")
    form.field("recipe", "Recipe", widget="selectbox", format_func=lambda key: RECIPES[key][0])
    form.field("noise", "Noise", format_func=NOISE_LABELS.get)
    form.field("sampling", "Sampling that runs", choices=[None, *SAMPLINGS], widget="selectbox",
               format_func=lambda name: "the recipe's own" if name is None else f"{name}: {SAMPLING_HELP[name]}")
    return form, None if data is None else form.build(**data)


NOISE_LABELS = {"tight": "tight: spend the budget", "paper": "the paper's σ"}


def _unused(share) -> str:
    return f"{100 * share:.2f} % of the budget unused"


def headline_metrics(values) -> None:
    columns = st.columns(5)
    columns[0].metric("Rounds", f"{values['rounds']:g}")
    if values.get("noise_multiplier") is not None:
        columns[1].metric(f"Noise multiplier σ ({values['noise']})", f"{values['noise_multiplier']:.4g}",
                          help=f"aggregated noise √T·σ = {values['aggregated_noise']:.4g}")
    elif "clients_per_round" in values:
        columns[1].metric("Clients per round", f"{values['clients_per_round']}")
    else:
        columns[1].metric(f"ε per upload ({values['noise']})", f"{values['per_upload_epsilon']:.4g}",
                          help=f"{values['stages']} MAPA stages")
    columns[2].metric(f"ε ({values['epsilon_label']})", epsilon_text(values["tight_epsilon"]),
                      delta=_unused(values["unused_budget"]), delta_color="off",
                      help=f"{values['guarantee']}; sampling {values['sampling']}; {values['tight_accountant']}")
    hypotheses = values["hypotheses"]
    if values.get("paper_noise_multiplier") is not None:
        columns[3].metric(theorem_label("Paper's σ", hypotheses), f"{values['paper_noise_multiplier']:.4g}",
                          help="the noise multiplier the paper's own rule gives for this budget")
    elif values.get("paper_per_upload_epsilon") is not None:
        columns[3].metric(theorem_label("Paper's ε per upload", hypotheses),
                          f"{values['paper_per_upload_epsilon']:.4g}")
    else:
        columns[3].metric("Paper's σ", "none", help="the paper's theorem certifies nothing for this budget")
    if values.get("paper_tight_epsilon") is None:
        columns[4].metric("ε, paper's claim", "none", help="the paper's theorem certifies nothing for this plan")
    else:
        claim = values["claimed_epsilon"]
        columns[4].metric("ε of the paper's σ (tight)", epsilon_text(values["paper_tight_epsilon"]),
                          delta=_unused(values["paper_unused_budget"]), delta_color="off",
                          help=f"the paper claims ε = {epsilon_text(claim) if claim is not None else 'none'} at "
                               f"δ = {values['claimed_delta']:.3g}")


def hypotheses_table(values) -> None:
    if not values["hypotheses"]:
        return
    frame = pd.DataFrame([{"check": "holds" if h["holds"] else "FAILS", "hypothesis": h["name"],
                           "numbers": h["detail"], "paper line": h["source"]} for h in values["hypotheses"]])
    if not values["hypotheses_hold"]:
        st.warning("A hypothesis of the paper's theorem fails for this plan: its claimed ε is not a guarantee.")
    st.dataframe(frame, hide_index=True)


def schedule_section(result) -> None:
    schedule = result.schedule
    if result.cumulative_epsilon is not None:
        curve = pd.DataFrame({"round": range(1, schedule.rounds + 1), "cumulative ε (RDP)": result.cumulative_epsilon})
        chart = alt.Chart(curve).mark_line().encode(x="round", y=alt.Y("cumulative ε (RDP)"))
        st.altair_chart(chart.properties(height=220, title="ε spent after each round (RDP, an upper bound)"),
                        width="stretch")
    phases = pd.DataFrame([{"start round": start, "rounds": length, **values}
                           for start, length, values in schedule.phases()])
    st.dataframe(phases, hide_index=True, height=240)
    downloads(schedule, f"fedplan_{result.recipe}")


def main() -> None:
    st.title("fedplan: plan a private federated run")
    st.caption("State your budget, data and compute; pick a recipe from the papers; get what to run, calibrated so "
               "that the tight ε of the sampling that runs spends the budget, with the paper's own answer and the "
               "budget it leaves unused beside it.")
    report, right, _ = form_page(request_inputs, spinner="Planning…")
    if report is None:
        return
    with right:
        headline_metrics(report.values)
        st.caption(report.statement)
        hypotheses_table(report.values)
        schedule_section(report.result)
        st.caption("Next: check a plan against its bound on the **Validate by simulation** page (sidebar).")


main()
