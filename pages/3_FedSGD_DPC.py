"""Zhou et al. (FedSGD-DPC): T* and b* for the Laplace mechanism, with U(T, b) and the optimum (thin over planner)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.planner.display import parse_number, parse_whole
from fedplan.planner.export import render
from fedplan.planner.fedsgd_dpc import laplace_landscape, plan_fedsgd_dpc

st.set_page_config(page_title="fedplan: FedSGD-DPC", layout="wide")

#: Raw constants with the defaults of the CLI example (README): (parameter, label, default).
FIELDS = (
    ("num_clients", "Clients N", "10"), ("client_sizes", "Records per client d_i", "6000"),
    ("model_dim", "Model dimension p", "7850"), ("strong_convexity", "Strong convexity μ", "10"),
    ("smoothness", "Smoothness λ", "20"), ("gradient_bound", "Gradient bound G", "1"),
    ("heterogeneity", "Non-iid degree Γ", "0"), ("initial_distance", "‖θ₀ − θ*‖² (Y₀)", "1"),
)
INTEGER_FIELDS = ("num_clients", "model_dim")


@st.cache_data(show_spinner=False, max_entries=32)
def cached_plan(problem_items: tuple, epsilon: float, clipping_norm: float, variant: str):
    problem = zhou.Problem(**dict(problem_items))
    plan = plan_fedsgd_dpc(problem=problem, mechanism="laplace", epsilon=epsilon, clipping_norm=clipping_norm,
                           variant=variant)
    top = max(3 * int(plan.choice.rounds), 10)
    rounds = np.unique(np.append(np.linspace(0, top, 120).astype(int), int(plan.choice.rounds)))
    cells = laplace_landscape(problem=problem, epsilon=epsilon, clipping_norm=clipping_norm, rounds=rounds,
                              variant=variant)
    return plan, cells


def inputs() -> tuple[tuple, float, float, str]:
    values = {}
    for name, label, default in FIELDS:
        parse = parse_whole if name in INTEGER_FIELDS else parse_number
        values[name] = parse(name, st.text_input(label, default))
    epsilon = parse_number("epsilon", st.text_input("ε of every client (Laplace, pure)", "0.05"))
    clipping_norm = parse_number("clipping_norm", st.text_input("L1 clipping norm ξ₁", "1"))
    variant = st.radio("Variant", ["corrected", "paper"], horizontal=True)
    return tuple(values.items()), epsilon, clipping_norm, variant


def landscape_chart(cells: list[dict], plan) -> alt.Chart:
    frame = pd.DataFrame(cells).assign(log10_U=lambda d: np.log10(d["U"]))
    heat = alt.Chart(frame).mark_rect().encode(
        x=alt.X("T:O", title="rounds T", axis=alt.Axis(labelOverlap=True)), y=alt.Y("b:O", title="clients per round b",
                                                                                  sort="descending"),
        color=alt.Color("log10_U:Q", title="log₁₀ U", scale=alt.Scale(scheme="viridis")),
        tooltip=["T", "b", alt.Tooltip("U", format=".5g")])
    choice = pd.DataFrame([{"T": int(plan.choice.rounds), "b": plan.choice.clients_per_round}])
    star = alt.Chart(choice).mark_point(shape="diamond", size=200, filled=True, color="red").encode(x="T:O", y="b:O")
    return (heat + star).properties(height=300, title="U(T, b) with the exact integer optimum (red)")


def main() -> None:
    st.title("Optimal rounds and replies (Zhou et al., FedSGD-DPC)")
    st.latex(r"U(T,b)=\frac{C_1/b + C_2\,bT^2 + C_3}{T+\gamma}\quad\text{(zhou L354)}")
    st.latex(r"T^*(b)=\sqrt{\gamma^2+\frac{A_1+\gamma Y_0}{A_2}}-\gamma\ \text{(Eq. 6, L322)},\qquad "
             r"b^*(T)=\frac{\sqrt{C_1/C_2}}{T}\ \text{(L336)}")
    left, right = st.columns([1, 2])
    try:
        with left:
            problem_items, epsilon, clipping_norm, variant = inputs()
        with right, st.spinner("Searching the integer optimum…"):
            plan, cells = cached_plan(problem_items, epsilon, clipping_norm, variant)
        with right:
            summary = plan.summary()
            columns = st.columns(4)
            columns[0].metric("T* (rounds)", f"{summary['T_star']:g}")
            columns[1].metric("b* (clients per round)", f"{summary['b_star']}")
            columns[2].metric("Bound U(T*, b*)", f"{summary['bound']:.5g}")
            rule = summary["paper_rule"]
            columns[3].metric("Paper rule (T, b)", f"({rule['T']}, {rule['b']})", help=f"U = {rule['bound']:.5g}")
            regime = summary["regime"]
            st.write(f"Regime: **{regime['regime']}** (critical ε = {regime['critical_epsilon']:.4g}).")
            st.caption(summary["statement"])
            st.altair_chart(landscape_chart(cells, plan), width="stretch")
            st.dataframe(pd.DataFrame(summary["hypotheses"]), hide_index=True)
            if plan.choice.rounds > 0:
                st.download_button("Schedule JSON", render(plan.schedule(), "json"), file_name="fedsgd_dpc.json")
    except ValueError as error:
        st.error(str(error))


main()
