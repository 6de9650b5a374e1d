"""Damaskinos thesis: DP-SCD σ against batch size (MA128 vs tight), staleness dampening, Byzantine n vs f.

Each tab builds the request of its command from its widgets (:mod:`fedplan.pages.widgets`): ``fedplan dpscd
calibrate`` (:class:`~fedplan.planner.tasks.damaskinos.DpscdCalibrate`, one per batch size of the chart),
``fedplan staleness beta`` (:class:`~fedplan.planner.tasks.damaskinos.StalenessBeta`) and ``fedplan byzantine
max-f`` (:class:`~fedplan.planner.tasks.damaskinos.ByzantineMaxF`, one per rule).
"""

from __future__ import annotations

from dataclasses import replace

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.bounds import byzantine
from fedplan.pages.widgets import Form, report
from fedplan.planner.tasks.damaskinos import ByzantineMaxF, DpscdCalibrate, StalenessBeta

st.set_page_config(page_title="fedplan: Damaskinos", layout="wide")

BATCH_GRID = (100, 200, 500, 1000, 2000, 5000, 10_000)
#: The accountant of the DP-SCD requests: RDP (tight), with the authors' MA128 as its comparison.
DPSCD_ACCOUNTANT = "rdp"


def sigma_by_batch(request: DpscdCalibrate) -> pd.DataFrame:
    """σ of the request at every batch size of the grid (and its own), under RDP and the authors' MA128."""
    batches = sorted({batch for batch in BATCH_GRID if batch <= request.examples} | {request.batch_size})
    rows = []
    progress = st.progress(0.0, text="Calibrating σ per batch size")
    for index, batch in enumerate(batches):
        answer = report(replace(request, batch_size=batch))
        for accountant, sigma in ((answer["accountant"], answer["noise_multiplier"]),
                                  (answer["comparison"]["accountant"], answer["comparison"]["noise_multiplier"])):
            rows.append({"batch size L": batch, "accountant": accountant, "σ": sigma})
        progress.progress((index + 1) / len(batches))
    progress.empty()
    return pd.DataFrame(rows)


def dpscd_tab() -> None:
    st.latex(r"\sigma = \min\{\sigma : \mathrm{MA}(\delta, \sigma, L/N, T) \le \varepsilon\},\quad "
             r"T = \lfloor E\,N/L \rfloor \quad\text{(thesis Eq. 6.2, L1336-1340)}")
    left, right = st.columns([1, 2])
    with left:
        form = Form(DpscdCalibrate)
        form.field("target_epsilon", "ε", default="0.1")
        form.field("target_delta", "δ", default="1e-3")
        form.field("examples", "Examples N", default="347786")
        form.field("epochs", "Epochs E", default="50")
        form.field("batch_size", "Batch size L (marked on the chart)", default="1000")
        request = form.build(accountant=DPSCD_ACCOUNTANT)
        answer = form.answer(request)
    if answer is None:
        return
    with right:
        columns = st.columns(3)
        columns[0].metric("σ (MA128, the thesis)", f"{answer['comparison']['noise_multiplier']:.6g}")
        columns[1].metric(f"σ ({answer['accountant'].upper()})", f"{answer['noise_multiplier']:.6g}")
        columns[2].metric("Iterations T", f"{answer['steps']}",
                          help=f"sample rate q = L/N = {answer['sample_rate']:.4g}")
        frame = sigma_by_batch(request)
        chart = alt.Chart(frame).mark_line(point=True).encode(
            x=alt.X("batch size L", scale=alt.Scale(type="log")), y="σ", color="accountant", tooltip=list(frame))
        rule = alt.Chart(pd.DataFrame({"batch size L": [request.batch_size]})).mark_rule(strokeDash=[4, 4]).encode(
            x="batch size L")
        st.altair_chart((chart + rule).properties(height=300, title="σ for the same (ε, δ): the authors' MA128 vs "
                                                                    "RDP"), width="stretch")
        st.caption("Poisson sampling at rate L/N, add/remove-one neighbours; MA128 is the classic moments accountant "
                   "(orders 1..128) the thesis used.")
        st.caption(answer.statement)


def dampening_tab() -> None:
    st.latex(r"\Lambda(\tau) = e^{-\beta\tau},\quad \beta = \frac{2\ln(1+\tau_{thres}/2)}{\tau_{thres}}"
             r"\quad\text{(AdaSGD, L612)}")
    form = Form(StalenessBeta)
    threshold = form.field("staleness_threshold", "τ_thres", default="12")
    request = form.build()
    if request is None:
        return
    answer = form.answer(replace(request, staleness_values=tuple(np.linspace(0.0, 2.0 * threshold, 97))))
    if answer is None:
        return
    curves = {"AdaSGD e^{-βτ}": answer["dampening"], "DynSGD 1/(1+τ)": answer["inverse_dampening"]}
    frame = pd.DataFrame([{"staleness τ": float(tau), "Λ(τ)": value, "dampening": name}
                          for name, values in curves.items() for tau, value in values.items()])
    st.metric("β", f"{answer['beta']:.6f}",
              help=f"Λ(τ_thres/2) = {answer['dampening_at_crossing']:.4f} = 1/(1 + τ_thres/2)")
    chart = alt.Chart(frame).mark_line().encode(x="staleness τ", y="Λ(τ)", color="dampening")
    st.altair_chart(chart.properties(height=300), width="stretch")
    st.caption(answer.statement)


def byzantine_tab() -> None:
    form = Form(ByzantineMaxF)
    form.field("workers", "Workers n", default="19")
    rows = []
    for rule in byzantine.RULES:
        request = form.build(rule=rule)
        if request is None:  # the number of workers is refused (shown under its box)
            return
        try:
            answer = report(request)
            rows.append({"rule": rule, "requirement": answer["requirement"], "max f": answer["max_f"],
                         "source": answer["source"]})
        except ValueError as error:  # too few workers for this rule: said in its row
            rows.append({"rule": rule, "requirement": byzantine.requirement_text(rule=rule), "max f": None,
                         "source": str(error)})
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def main() -> None:
    st.title("Damaskinos: DP-SCD, staleness dampening, Byzantine tolerance")
    tabs = st.tabs(["DP-SCD σ vs batch size", "Dampening curves", "Byzantine n vs f"])
    for tab, content in zip(tabs, (dpscd_tab, dampening_tab, byzantine_tab), strict=True):
        with tab:
            content()


main()
