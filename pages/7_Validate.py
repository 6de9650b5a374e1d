"""Validate a plan by simulation: run the backing simulation on a few seeds and plot it against the bound.

The page builds the request of ``fedplan validate vandijk`` or ``fedplan validate fedsgd-dpc``
(:mod:`fedplan.planner.tasks.validate`) from its widgets (:mod:`fedplan.pages.widgets`) and runs it when asked.
Runs are capped (seeds, examples, clients) so that they finish in seconds; a Cancel button stops a run (Streamlit
abandons the script run on the click).
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.pages.widgets import Form
from fedplan.planner.display import epsilon_text
from fedplan.planner.simulate.data import SKLEARN_SETS
from fedplan.planner.tasks.validate import ValidateFedsgdDpc, ValidateVandijk

st.set_page_config(page_title="fedplan: validate by simulation", layout="wide")

ALGORITHMS = {"van Dijk: increasing sample sizes": ValidateVandijk,
              "FedSGD-DPC (Zhou): optimal T and b": ValidateFedsgdDpc}
MAX_SEEDS = 5
MAX_EXAMPLES = 200_000
MAX_CLIENTS = 1000
#: The held-out share of the data on this page (the van Dijk plan's client size is the training share / clients).
TEST_FRACTION = 0.2
#: The van Dijk plan the page validates: s₀ = 16, the smallest σ in this range whose claimed δ meets δ, r0 = 1/e.
VANDIJK_PLAN = {"initial_size": 16, "noise_multiplier_range": (1.2, 200.0), "r0": "1/e", "no_pld": True}


@st.cache_data(show_spinner=False, max_entries=8)
def training_examples(source: str, examples: int) -> int:
    """Examples in the training part of the page's data (the van Dijk plan splits them over the clients)."""
    from fedplan.planner.simulate.data import load_dataset

    return load_dataset(source, n_samples=examples, test_fraction=TEST_FRACTION).X_train.shape[0]


def common_inputs(form: Form) -> int | None:
    """Data, clients, seeds, ε and δ; returns the number of seeds (None if refused)."""
    form.field("dataset", "Data", choices=["synthetic", *SKLEARN_SETS], widget="selectbox")
    form.field("n_samples", "Examples (synthetic)", default="62500", limit=(100, MAX_EXAMPLES))
    form.field("clients", "Clients", default="5", limit=(1, MAX_CLIENTS))
    seeds = form.count("seeds", "Seeds", "2", low=1, high=MAX_SEEDS,
                       help=f"how many seeds to run (0, 1, …), at most {MAX_SEEDS} on this page")
    form.field("target_epsilon", "ε", default="1")
    form.field("target_delta", "δ", default="1e-6")
    return seeds


def vandijk_request(form: Form, seeds: int | None) -> ValidateVandijk | None:
    form.field("epochs", "Passes over each client's data", default="2.5")
    form.field("learning_rate", "Learning rate η₀", default="0.15")
    form.field("clipping_norm", "Clipping norm C", default="0.1")
    values, clients = form.values, form.values.get("clients")
    if form.show_problems() or seeds is None:
        return None
    client_size = training_examples(values["dataset"], values["n_samples"]) // clients
    return form.build(seeds=tuple(range(seeds)), test_fraction=TEST_FRACTION, client_size=client_size,
                      **VANDIJK_PLAN)


def fedsgd_request(form: Form, seeds: int | None) -> ValidateFedsgdDpc | None:
    form.field("mechanism", "Mechanism", default="laplace")
    if seeds is None:
        form.show_problems()
        return None
    return form.build(seeds=tuple(range(seeds)), test_fraction=TEST_FRACTION)


def band_chart(rows: list[dict], quantity: str, log: bool = False) -> alt.Chart:
    frame = pd.DataFrame([row for row in rows if row["quantity"] == quantity])
    y_scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    band = alt.Chart(frame).mark_area(opacity=0.25).encode(x="round", y=alt.Y("q10", title=quantity, scale=y_scale),
                                                           y2="q90")
    mean = alt.Chart(frame).mark_line().encode(x="round", y="mean")
    layers = band + mean
    if frame["predicted"].notna().any():
        layers += alt.Chart(frame).mark_line(color="#d62728", strokeDash=[4, 4]).encode(x="round", y="predicted")
    return layers.properties(height=240, title=f"simulated {quantity} (mean, 10-90 % band)"
                             + (", bound dashed red" if frame["predicted"].notna().any() else ""))


def delay_chart(rows: list[dict]) -> alt.Chart:
    frame = pd.DataFrame([row for row in rows if row["quantity"] == "delay"])
    long = frame.melt(id_vars="t", value_vars=["tau_hat_q50", "tau_hat_q90", "tau_hat_q100", "envelope"],
                      var_name="series", value_name="delay")
    return alt.Chart(long).mark_line(point=True).encode(x="t", y="delay", color="series").properties(
        height=240, title="empirical delays τ̂(t) against Lemma 3's envelope")


def show(report) -> None:
    verdicts = ", ".join(f"{count} {verdict}" for verdict, count in report.verdicts.items())
    st.subheader(f"{report.algorithm}: {len(report.seeds)} seed(s), {verdicts}")
    claims = pd.DataFrame([{"result": c.verdict, "claim": c.name, "numbers": c.detail,
                            "source": c.source} for c in report.claims])
    st.dataframe(claims, hide_index=True)
    spent = max(run.epsilon for run in report.runs)
    st.metric("ε spent (worst client, executed schedule)", epsilon_text(spent))
    for note in report.notes:
        st.caption(note)
    quantities = {row["quantity"] for row in report.table}
    if "dist_sq" in quantities:
        st.altair_chart(band_chart(list(report.table), "dist_sq", log=True), width="stretch")
    for quantity in ("accuracy", "loss"):
        if quantity in quantities:
            st.altair_chart(band_chart(list(report.table), quantity), width="stretch")
    if "delay" in quantities:
        st.altair_chart(delay_chart(list(report.table)), width="stretch")


def main() -> None:
    st.title("Validate a plan by simulation")
    st.caption("Runs the backing simulation (event-driven engine, privacy ledger) on a few seeds and compares it "
               "with the bound. Capped at 5 seeds and 200 000 examples so that it finishes in seconds.")
    left, right = st.columns([1, 2])
    with left:
        algorithm = st.radio("Algorithm", list(ALGORITHMS))
        form = Form(ALGORITHMS[algorithm])
        seeds = common_inputs(form)
        build = vandijk_request if ALGORITHMS[algorithm] is ValidateVandijk else fedsgd_request
        request = build(form, seeds)
    if request is None:
        return
    with right:
        progress = st.progress(0.0, text="Press Run simulation")
        cancel = st.button("Cancel")
    with left:
        run = st.button("Run simulation", type="primary")
        report = form.answer(request, progress=lambda done, total: progress.progress(
            done / total, text=f"seed {done} of {total} done")) if run else None
    with right:
        if cancel:
            st.info("Simulation cancelled.")
        if report is not None:
            st.session_state["validation"] = report.result
        if "validation" in st.session_state:
            show(st.session_state["validation"])


main()
