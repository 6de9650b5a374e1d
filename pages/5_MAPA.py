"""Li et al. MAPA: the multi-stage schedule (step size, sensitivity, stage lengths) and its privacy totals."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.planner.display import epsilon_text, parse_number, parse_whole
from fedplan.planner.export import render
from fedplan.planner.mapa import plan_mapa

st.set_page_config(page_title="fedplan: MAPA", layout="wide")

#: The paper's experimental settings (li L437-447): (parameter, label, default, whole number).
FIELDS = (
    ("epsilon", "ε per upload", "0.1", False), ("batch_size", "Batch size b", "12", True),
    ("sigma", "Gradient noise σ (not DP)", "30", False), ("smoothness", "Smoothness L", "10", False),
    ("delta", "Theorem 3 failure probability δ", "1e-3", False), ("theta", "Sensitivity decay θ", "0.5", False),
    ("max_staleness", "Max staleness τ", "5", True), ("num_edges", "Edge nodes K", "5", True),
    ("iterations", "Iterations T", "25000", True), ("initial_gap", "Initial gap F₀ (the paper gives none)", "100",
                                                       False),
)


def inputs() -> dict:
    values = {}
    for name, label, default, whole in FIELDS:
        values[name] = (parse_whole if whole else parse_number)(name, st.text_input(label, default))
    values["noise_model"] = st.radio("Noise model", ["corrected", "paper"], horizontal=True,
                                     help="E‖η‖² = N(N+1)λ² for the noise of Eq. (6) (corrected) or 2λ² (paper)")
    if values["noise_model"] == "corrected":
        values["model_dim"] = parse_whole("model_dim", st.text_input("Model dimension N", "10"))
    return values


@st.cache_data(show_spinner=False, max_entries=32)
def cached_plan(items: tuple):
    return plan_mapa(**dict(items))


def stage_chart(rows: list[dict]) -> alt.Chart:
    frame = pd.DataFrame(rows)
    base = alt.Chart(frame).encode(x=alt.X("start", title="iteration t"), x2="end")
    step = base.mark_bar(height=12).encode(y=alt.Y("learning_rate", title="step size γ_s", scale=alt.Scale(
        type="log")), tooltip=["index", "start", "end", "P", "learning_rate", "sensitivity"])
    sensitivity = base.mark_bar(height=12, color="#d62728").encode(
        y=alt.Y("sensitivity", title="sensitivity ΔS_s", scale=alt.Scale(type="log")))
    return alt.vconcat(step.properties(height=180), sensitivity.properties(height=180))


def main() -> None:
    st.title("MAPA (Li et al.): the multi-stage adaptive schedule")
    st.latex(r"\gamma_s = \frac{1}{2 P_s L(\tau+1)},\quad \Delta S_{s+1} = \theta\,\Delta S_s,\quad "
             r"\lambda_s = \Delta S_s/\varepsilon \quad\text{(Alg. 1 L345-383, Eq. (15)-(16) L318-326)}")
    left, right = st.columns([1, 2])
    try:
        with left:
            values = inputs()
        plan = cached_plan(tuple(sorted(values.items())))
        with right:
            privacy = plan.result.privacy
            columns = st.columns(4)
            columns[0].metric("Stages", f"{len(plan.result.stages)}")
            columns[1].metric("ε total, all uploads (basic)", epsilon_text(privacy.basic_epsilon))
            columns[2].metric("ε per edge (basic)", epsilon_text(privacy.per_edge_epsilon))
            columns[3].metric("ε per edge (advanced)", epsilon_text(privacy.advanced_epsilon),
                              help=f"at δ = {privacy.advanced_delta:g}")
            if not plan.summary()["hypotheses_hold"]:
                st.warning("A hypothesis of the paper fails for this schedule (see the table).")
            st.altair_chart(stage_chart(plan.stage_rows()), width="stretch")
            st.dataframe(pd.DataFrame(plan.stage_rows())[["index", "start", "end", "iterations", "P", "learning_rate",
                                                           "sensitivity", "noise_scale"]], hide_index=True)
            st.dataframe(pd.DataFrame(plan.summary()["hypotheses"]), hide_index=True)
            st.caption(plan.statement())
            st.download_button("Schedule JSON", render(plan.schedule(), "json"), file_name="mapa_schedule.json")
    except ValueError as error:
        st.error(str(error))


main()
