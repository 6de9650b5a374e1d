"""Validate a plan by simulation: run the backing simulation on a few seeds and plot it against the bound.

Thin over :mod:`planner.validate`. Runs are capped (seeds, examples) so that they finish in seconds; a
Cancel button stops a run (Streamlit abandons the script run on the click).
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.bounds.validation import check_real
from fedplan.planner.display import epsilon_text, parse_number, parse_whole

st.set_page_config(page_title="fedplan: validate by simulation", layout="wide")

ALGORITHMS = ("van Dijk: increasing sample sizes", "FedSGD-DPC (Zhou): optimal T and b")
MAX_SEEDS = 5
MAX_EXAMPLES = 200_000




def data_inputs():
    from fedplan.planner.simulate.data import SKLEARN_SETS

    source = st.selectbox("Data", ["synthetic", *SKLEARN_SETS])
    examples = parse_whole("examples", st.text_input("Examples (synthetic)", "62500"), low=100, high=MAX_EXAMPLES)
    return source, examples


@st.cache_data(show_spinner=False, max_entries=8)
def dataset(source: str, examples: int):
    from fedplan.planner.simulate.data import load_dataset

    return load_dataset(source, n_samples=examples, n_features=20, test_fraction=0.2)


def run_vandijk(data, clients: int, seeds: int, epsilon: float, delta: float, progress):
    from fedplan.planner.validate import validate_vandijk_plan
    from fedplan.planner.vandijk import plan_vandijk

    epochs = parse_number("epochs", st.text_input("Passes over each client's data", "2.5"))
    learning_rate = parse_number("learning_rate", st.text_input("Learning rate η₀", "0.15"))
    clipping_norm = parse_number("clipping_norm", st.text_input("Clipping norm C", "0.1"))
    client_size = data.X_train.shape[0] // clients
    plan = plan_vandijk(initial_size=16, client_size=client_size, epsilon=epsilon, epochs=epochs,
                        sigma_range=(1.2, 200.0), delta=delta, r0=1 / math.e, with_pld=False,
                        learning_rate=learning_rate, decay=0.001)
    if not st.button("Run simulation", type="primary"):
        return None
    return validate_vandijk_plan(plan=plan, dataset=data, clients=clients, clipping_norm=clipping_norm,
                                 seeds=tuple(range(seeds)), on_run=progress)


def run_fedsgd(data, clients: int, seeds: int, epsilon: float, delta: float, progress):
    from fedplan.planner.validate import validate_fedsgd_dpc

    mechanism = st.radio("Mechanism", ["laplace", "gaussian"], horizontal=True)
    if not st.button("Run simulation", type="primary"):
        return None
    return validate_fedsgd_dpc(dataset=data, clients=clients, mechanism=mechanism, epsilon=epsilon, delta=delta,
                               seeds=tuple(range(seeds)), on_run=progress)


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
    verdict = "every claim holds" if report.passed else "a claim fails"
    st.subheader(f"{report.algorithm}: {len(report.seeds)} seed(s), {verdict}")
    claims = pd.DataFrame([{"result": "PASS" if c.passed else "FAIL", "claim": c.name, "numbers": c.detail,
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
    try:
        with left:
            algorithm = st.radio("Algorithm", ALGORITHMS)
            source, examples = data_inputs()
            clients = parse_whole("clients", st.text_input("Clients", "5"), low=1, high=1000)
            seeds = parse_whole("seeds", st.text_input("Seeds", "2"), low=1, high=MAX_SEEDS)
            epsilon = check_real("epsilon", parse_number("epsilon", st.text_input("ε", "1")), low=0.0, low_open=True)
            delta = check_real("delta", parse_number("delta", st.text_input("δ", "1e-6")), low=0.0, high=1.0,
                               low_open=True, high_open=True)
            data = dataset(source, examples)
            with right:
                progress = st.progress(0.0, text="Press Run simulation")
                cancel = st.button("Cancel")
            run = run_vandijk if algorithm == ALGORITHMS[0] else run_fedsgd
            report = run(data, clients, seeds, epsilon, delta,
                         lambda done, total: progress.progress(done / total, text=f"seed {done} of {total} done"))
        with right:
            if cancel:
                st.info("Simulation cancelled.")
            if report is not None:
                st.session_state["validation"] = report
            if "validation" in st.session_state:
                show(st.session_state["validation"])
    except ValueError as error:
        st.error(str(error))


main()
