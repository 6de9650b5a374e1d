"""Zhou et al. (FedSGD-DPC): T* and b* for the Laplace mechanism, with U(T, b) and the optimum.

The page builds the :class:`~fedplan.planner.tasks.fedsgd_dpc.FedsgdDpcOptimum` request of ``fedplan fedsgd-dpc
optimum`` (Laplace, raw constants) from its widgets (:mod:`fedplan.pages.widgets`) and shows its report; the heat
map is :func:`fedplan.planner.fedsgd_dpc.laplace_landscape` of the same problem.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.pages.widgets import Form, form_page
from fedplan.planner.display import theorem_label
from fedplan.planner.export import render
from fedplan.planner.fedsgd_dpc import laplace_landscape
from fedplan.planner.tasks.fedsgd_dpc import FedsgdDpcOptimum

st.set_page_config(page_title="fedplan: FedSGD-DPC", layout="wide")

#: Raw constants with the defaults of the CLI example (README): (request field, label, default).
FIELDS = (
    ("clients", "Clients N", "10"), ("client_size", "Records per client d_i", "6000"),
    ("model_dim", "Model dimension p", "7850"), ("strong_convexity", "Strong convexity μ", "10"),
    ("smoothness", "Smoothness λ", "20"), ("gradient_bound", "Gradient bound G", "1"),
    ("heterogeneity", "Non-iid degree Γ", "0"), ("initial_distance", "‖θ₀ − θ*‖² (Y₀)", "1"),
    ("target_epsilon", "ε of every client (Laplace, pure)", "0.05"), ("clipping_norm", "L1 clipping norm ξ₁", "1"),
)


def inputs() -> tuple[Form, FedsgdDpcOptimum | None]:
    form = Form(FedsgdDpcOptimum)
    for name, label, default in FIELDS:
        form.field(name, label, default=default)
    form.field("variant", "Variant")
    form.field("fixed_clients_per_round", "Fixed clients per round b (optional: optimise T only)")
    form.field("fixed_rounds", "Fixed rounds T (optional: optimise b only)")
    return form, form.build(mechanism="laplace")


@st.cache_data(show_spinner=False, max_entries=32)
def landscape(fields: tuple, optimal_rounds: int, _request: FedsgdDpcOptimum) -> list[dict]:
    """U(T, b) on T in [0, max(3T*, 10)] (and T*) for every b."""
    top = max(3 * optimal_rounds, 10)
    rounds = np.unique(np.append(np.linspace(0, top, 120).astype(int), optimal_rounds))
    return laplace_landscape(problem=_request.raw_problem(), epsilon=_request.target_epsilon,
                             clipping_norm=_request.clipping_norm, rounds=rounds, variant=_request.variant)


def landscape_chart(cells: list[dict], rounds: int, clients_per_round: int) -> alt.Chart:
    frame = pd.DataFrame(cells).assign(log10_U=lambda d: np.log10(d["U"]))
    heat = alt.Chart(frame).mark_rect().encode(
        x=alt.X("T:O", title="rounds T", axis=alt.Axis(labelOverlap=True)), y=alt.Y("b:O", title="clients per round b",
                                                                                  sort="descending"),
        color=alt.Color("log10_U:Q", title="log₁₀ U", scale=alt.Scale(scheme="viridis")),
        tooltip=["T", "b", alt.Tooltip("U", format=".5g")])
    choice = pd.DataFrame([{"T": rounds, "b": clients_per_round}])
    star = alt.Chart(choice).mark_point(shape="diamond", size=200, filled=True, color="red").encode(x="T:O", y="b:O")
    return (heat + star).properties(height=300, title="U(T, b) with the answer (T*, b*) in red")


def main() -> None:
    st.title("Optimal rounds and replies (Zhou et al., FedSGD-DPC)")
    st.latex(r"U(T,b)=\frac{C_1/b + C_2\,bT^2 + C_3}{T+\gamma}\quad\text{(zhou L354)}")
    st.latex(r"T^*(b)=\sqrt{\gamma^2+\frac{A_1+\gamma Y_0}{A_2}}-\gamma\ \text{(Eq. 6, L322)},\qquad "
             r"b^*(T)=\frac{\sqrt{C_1/C_2}}{T}\ \text{(L336)}")
    report, right, request = form_page(inputs, spinner="Searching the integer optimum…")
    if report is None:
        return
    plan, summary = report.result, report.values
    rounds, clients_per_round = int(plan.choice.rounds), plan.choice.clients_per_round
    with right:
        columns = st.columns(4)
        columns[0].metric("T* (rounds)", f"{summary['T_star']:g}")
        columns[1].metric("b* (clients per round)", f"{summary['b_star']}")
        columns[2].metric(theorem_label("Bound U(T*, b*)", summary["hypotheses"]), f"{summary['bound']:.5g}")
        label, beside = (("Exact optimum", summary["exact_optimum"]) if summary["variant"] == "paper"
                         else ("Paper rule", summary["paper_rule"]))
        columns[3].metric(f"{label} (T, b)", f"({beside['T']}, {beside['b']})", help=f"U = {beside['bound']:.5g}")
        regime = summary["regime"]
        st.write(f"Regime: **{regime['regime']}** (critical ε = {regime['critical_epsilon']:.4g}).")
        st.caption(report.statement)
        cells = landscape(tuple(request.inputs().items()), rounds, request)
        st.altair_chart(landscape_chart(cells, rounds, clients_per_round), width="stretch")
        st.dataframe(pd.DataFrame(summary["hypotheses"]), hide_index=True)
        if rounds > 0:
            st.download_button("Schedule JSON", render(plan.schedule(), "json"), file_name="fedsgd_dpc.json")


main()
