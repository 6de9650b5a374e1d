"""Damaskinos thesis: DP-SCD σ against batch size (MA128 vs tight), staleness dampening, Byzantine n vs f."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.bounds import byzantine, dpscd, kardam
from fedplan.planner.display import parse_number, parse_whole

st.set_page_config(page_title="fedplan: Damaskinos", layout="wide")

BATCH_GRID = (100, 200, 500, 1000, 2000, 5000, 10_000)




@st.cache_data(show_spinner=False, max_entries=32)
def sigma_by_batch(epsilon: float, delta: float, examples: int, epochs: float) -> pd.DataFrame:
    rows = []
    progress = st.progress(0.0, text="Calibrating σ per batch size")
    for index, batch in enumerate(BATCH_GRID):
        if batch <= examples:
            steps = dpscd.outer_iterations(examples=examples, batch_size=batch, epochs=epochs)
            q = dpscd.sample_rate(examples=examples, batch_size=batch)
            for result in dpscd.compare_accountants(target_epsilon=epsilon, target_delta=delta, sample_rate=q,
                                                    steps=steps, accountants=("ma128", "rdp")):
                rows.append({"batch size L": batch, "accountant": result.accountant, "σ": result.noise_multiplier})
        progress.progress((index + 1) / len(BATCH_GRID))
    progress.empty()
    return pd.DataFrame(rows)


def dpscd_tab() -> None:
    st.latex(r"\sigma = \min\{\sigma : \mathrm{MA}(\delta, \sigma, L/N, T) \le \varepsilon\},\quad "
             r"T = \lfloor E\,N/L \rfloor \quad\text{(thesis Eq. 6.2, L1336-1340)}")
    left, right = st.columns([1, 2])
    with left:
        epsilon = parse_number("epsilon", st.text_input("ε", "0.1"))
        delta = parse_number("delta", st.text_input("δ", "1e-3"))
        examples = parse_whole("examples", st.text_input("Examples N", "347786"))
        epochs = parse_number("epochs", st.text_input("Epochs E", "50"))
    frame = sigma_by_batch(epsilon, delta, examples, epochs)
    with right:
        chart = alt.Chart(frame).mark_line(point=True).encode(
            x=alt.X("batch size L", scale=alt.Scale(type="log")), y="σ", color="accountant", tooltip=list(frame))
        st.altair_chart(chart.properties(height=300, title="σ for the same (ε, δ): the authors' MA128 vs RDP"),
                        width="stretch")
        st.caption("Poisson sampling at rate L/N, add/remove-one neighbours; MA128 is the classic moments accountant "
                   "(orders 1..128) the thesis used.")


def dampening_tab() -> None:
    st.latex(r"\Lambda(\tau) = e^{-\beta\tau},\quad \beta = \frac{2\ln(1+\tau_{thres}/2)}{\tau_{thres}}"
             r"\quad\text{(AdaSGD, L612)}")
    tau_thres = parse_number("tau_thres", st.text_input("τ_thres", "12"))
    adasgd = kardam.adasgd_dampening(tau_thres=tau_thres)
    taus = np.linspace(0.0, 2.0 * tau_thres, 97)
    curves = {"AdaSGD e^{-βτ}": adasgd, "DynSGD 1/(1+τ)": kardam.Dampening("inverse")}
    frame = pd.concat([pd.DataFrame({"staleness τ": taus, "Λ(τ)": function(taus), "dampening": name})
                       for name, function in curves.items()])
    st.metric("β", f"{adasgd.rate:.6f}", help=f"Λ(τ_thres/2) = {adasgd(tau_thres / 2):.4f} = 1/(1 + τ_thres/2)")
    chart = alt.Chart(frame).mark_line().encode(x="staleness τ", y="Λ(τ)", color="dampening")
    st.altair_chart(chart.properties(height=300), width="stretch")


def byzantine_tab() -> None:
    workers = parse_whole("workers", st.text_input("Workers n", "19"))
    rows = []
    for rule in byzantine.RULES:
        try:
            tolerance = byzantine.max_byzantine(workers=workers, rule=rule)
            rows.append({"rule": rule, "requirement": tolerance.requirement, "max f": tolerance.max_faults,
                         "source": tolerance.source})
        except ValueError as error:
            rows.append({"rule": rule, "requirement": byzantine.requirement_text(rule=rule), "max f": None,
                         "source": str(error)})
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def main() -> None:
    st.title("Damaskinos: DP-SCD, staleness dampening, Byzantine tolerance")
    tabs = st.tabs(["DP-SCD σ vs batch size", "Dampening curves", "Byzantine n vs f"])
    for tab, content in zip(tabs, (dpscd_tab, dampening_tab, byzantine_tab), strict=True):
        with tab:
            try:
                content()
            except ValueError as error:
                st.error(str(error))


main()
