"""Li et al. MAPA: the multi-stage schedule (step size, sensitivity, stage lengths) and its privacy totals.

The page builds the :class:`~fedplan.planner.tasks.mapa.Schedule` request of ``fedplan mapa schedule`` from its
widgets (:mod:`fedplan.pages.widgets`) and shows its report: the stages, the privacy totals, the hypotheses.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.pages.widgets import Form, form_page
from fedplan.planner.display import epsilon_text, theorem_label
from fedplan.planner.export import render
from fedplan.planner.tasks.mapa import Schedule

st.set_page_config(page_title="fedplan: MAPA", layout="wide")

#: The request's fields as the page labels them; defaults are the paper's experimental settings (li L437-447), and
#: the page's own for what the paper does not give (T, F₀, N).
FIELDS = (
    ("upload_epsilon", "ε per upload", None), ("batch_size", "Batch size b", None),
    ("gradient_std", "Gradient noise σ (not DP)", None), ("smoothness", "Smoothness L", None),
    ("failure_probability", "Theorem 3 failure probability δ", None),
    ("sensitivity_decay", "Sensitivity decay θ", None), ("max_staleness", "Max staleness τ", None),
    ("edges", "Edge nodes K", None), ("iterations", "Iterations T", "25000"),
    ("initial_gap", "Initial gap F₀ (the paper gives none)", "100"),
)


def inputs() -> tuple[Form, Schedule | None]:
    form = Form(Schedule)
    for name, label, default in FIELDS:
        form.field(name, label, default=default)
    if form.field("noise_model", "Noise model", default="corrected") == "corrected":
        form.field("model_dim", "Model dimension N", default="10")
    return form, form.build()


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
    report, right, _ = form_page(inputs)
    if report is None:
        return
    privacy, stages = report["privacy"], report["stages"]
    with right:
        columns = st.columns(4)
        columns[0].metric(theorem_label("Stages", report["hypotheses"]), f"{report['num_stages']}")
        columns[1].metric("ε total, all uploads (basic)", epsilon_text(privacy["basic_epsilon"]))
        columns[2].metric("ε per edge (basic)", epsilon_text(privacy["per_edge_epsilon"]))
        columns[3].metric("ε per edge (advanced)", epsilon_text(privacy["advanced_epsilon"]),
                          help=f"at δ = {privacy['advanced_delta']:g}")
        if not report["hypotheses_hold"]:
            st.warning("A hypothesis of the paper fails for this schedule (see the table).")
        st.altair_chart(stage_chart(stages), width="stretch")
        st.dataframe(pd.DataFrame(stages)[["index", "start", "end", "iterations", "P", "learning_rate",
                                           "sensitivity", "noise_scale"]], hide_index=True)
        st.dataframe(pd.DataFrame(report["hypotheses"]), hide_index=True)
        st.caption(report.statement)
        st.download_button("Schedule JSON", render(report.result.schedule(), "json"), file_name="mapa_schedule.json")


main()
