"""Li et al. MAPA: the multi-stage schedule (step size, sensitivity, stage lengths) and its privacy totals.

The page builds the :class:`~fedplan.planner.tasks.mapa.Schedule` request of ``fedplan mapa schedule`` from its
widgets (:mod:`fedplan.app_pages.widgets`) and shows its report: the stages, the privacy totals, the hypotheses.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.markdown_elements import show_formula, show_table
from fedplan.app_pages.widgets import Form, form_page, literal, theorem_metric
from fedplan.planner.display import number_text
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
#: The stage table's columns as the page shows them.
TABLE = {"index": "stage", "start": "from t", "end": "to t", "iterations": "iterations", "P": "P_s",
         "learning_rate": "step size γ_s", "sensitivity": "sensitivity ΔS_s", "noise_scale": "noise scale λ_s"}


def rounded_up(value: float) -> str:
    """A sensitivity or a noise scale for the stage table: 4 digits, rounded up (a value copied from the table never
    gives less noise than the schedule's)."""
    return number_text(value, up=True)


def inputs() -> tuple[Form, Schedule | None]:
    form = Form(Schedule)
    for name, label, default in FIELDS:
        form.field(name, label, default=default)
    if form.field("noise_model", "Noise model", default="corrected") == "corrected":
        form.field("model_dim", "Model dimension N", default="10")
    return form, form.build()


def stage_chart(rows: list[dict]) -> dict:
    """γ_s, and ΔS_s with λ_s, as step lines over the iterations t (log axis: the first stages last 1, 4, 13, …
    iterations, the last thousands); one point per stage start, the last stage drawn to its end. A plain Vega-Lite
    dict with a named data set (Streamlit sends it as Arrow): Altair and its validation took 0.05–0.1 s a plan."""
    points = [{"t": row["start"], "stage": row["index"], "step size γ_s": row["learning_rate"],
               "sensitivity ΔS_s": row["sensitivity"], "noise scale λ_s": row["noise_scale"]} for row in rows]
    points.append({**points[-1], "t": rows[-1]["end"]})
    x = {"field": "t", "type": "quantitative", "title": "iteration t (log scale)", "scale": {"type": "log"}}
    mark = {"type": "line", "interpolate": "step-after", "point": True}
    stage_and_t = [{"field": "stage", "type": "quantitative"}, {"field": "t", "type": "quantitative"}]
    step = {"height": 160, "title": "Step size per stage", "mark": mark, "encoding": {
        "x": x, "y": {"field": "step size γ_s", "type": "quantitative", "title": "step size γ_s",
                      "scale": {"zero": True}},
        "tooltip": [*stage_and_t, {"field": "step size γ_s", "type": "quantitative", "format": ".4g"}]}}
    scales = {"height": 180, "title": "Sensitivity and noise scale per stage", "mark": mark,
              "transform": [{"fold": ["sensitivity ΔS_s", "noise scale λ_s"], "as": ["quantity", "value"]}],
              "encoding": {
                  "x": x, "y": {"field": "value", "type": "quantitative", "title": "ΔS_s and λ_s (log scale)",
                                "scale": {"type": "log"}},
                  "color": {"field": "quantity", "type": "nominal", "title": None, "legend": {"orient": "top"}},
                  "tooltip": [*stage_and_t, {"field": "quantity", "type": "nominal"},
                              {"field": "value", "type": "quantitative", "format": ".4g"}]}}
    return {"datasets": {"stages": pd.DataFrame(points)}, "data": {"name": "stages"}, "vconcat": [step, scales]}


@st.cache_data(show_spinner=False, max_entries=32)
def exports(fields: tuple, _plan) -> dict[str, str]:
    """The schedule as JSON (change-points, metadata, statement) and as CSV: one row per stage, with the
    cumulative ε (basic composition) at its end."""
    schedule = _plan.schedule()
    return {"json": render(schedule, "json"),
            "csv": render(schedule, "csv", cumulative_epsilon=_plan.cumulative_epsilon())}


def step_size_words(report) -> str:
    """What sets the step size, in words (li Alg. 1 L345-383, Eq. (16) L326)."""
    stages = report["stages"]
    first, last = stages[0]["learning_rate"], stages[-1]["learning_rate"]
    change = abs(last - first) / first
    trend = (f"it stays at {number_text(first)} (it changes by {change:.2%})" if change < 0.01 else
             f"it goes from {number_text(first)} to {number_text(last)} over {len(stages)} stages")
    text = (f"Step size γ_s = 1/(2 P_s L (τ + 1)) (Alg. 1, Eq. (16)): {trend}; P_s from "
            f"{number_text(stages[0]['P'])} to {number_text(stages[-1]['P'])}.")
    if report["noise_model"] == "corrected":
        text += (" With the corrected noise model the noise's E‖η‖² = N(N+1)λ² grows with the model dimension N, and "
                 "P_s with it: a larger N gives a smaller step size (the paper's model, 2λ², ignores N).")
    return text


def barely_moves(report, smoothness: float) -> str | None:
    """A plain warning when the steps of all T iterations add up to less than one gradient step 1/L: Σ_s γ_s T_s L
    < 1 (an L-smooth f's full step is 1/L), else None."""
    travel = sum(row["learning_rate"] * row["iterations"] for row in report["stages"]) * smoothness
    if travel >= 1:
        return None
    why = "the noise term of P_s grows as 1/ε²"
    if report["noise_model"] == "corrected":
        why += " and as N(N+1) with the model dimension N"
    return (f"**The model will barely move.** Over all {number_text(report['iterations'], 12)} iterations the step "
            f"sizes add up to {number_text(travel / smoothness)}, {number_text(travel)} of one full gradient step "
            f"1/L = {number_text(1 / smoothness)}. The privacy noise sets the step size ({why}): raise **ε per "
            "upload** or **Iterations T** for a schedule that trains.")


def main() -> None:
    st.title("MAPA (Li et al.): the multi-stage adaptive schedule")
    show_formula("γ_s = 1 / (2·P_s·L·(τ+1)),  ΔS_(s+1) = θ·ΔS_s,  λ_s = ΔS_s/ε",
                 "Alg. 1 L345-383, Eq. (15)-(16) L318-326")
    report, right, request = form_page(inputs, keep="mapa_last_valid")
    if report is None:
        return
    privacy, stages = report["privacy"], report["stages"]
    fields = tuple(request.inputs().items())
    with right:
        columns = st.columns(4)
        theorem_metric(columns[0], "Stages", f"{report['num_stages']}", report["hypotheses"])
        columns[1].metric("ε total (basic)", number_text(privacy["basic_epsilon"], up=True),
                          help="all uploads of all edges, basic composition")
        columns[2].metric("ε/edge (basic)", number_text(privacy["per_edge_epsilon"], up=True))
        columns[3].metric("ε/edge (advanced)", number_text(privacy["advanced_epsilon"], up=True))
        st.caption("Pure ε-DP uploads (Laplace-type noise, li Eq. (6)), replace-one neighbouring mini-batches, drawn "
                   "with replacement: no sampling amplification. Totals by basic composition over all "
                   f"{number_text(report['iterations'], 12)} uploads, and per edge (round robin) by basic and advanced "
                   f"composition at δ = {privacy['advanced_delta']:g} (Dwork & Roth Thm 3.16, 3.20); upper bounds, "
                   "rounded up.")
        if not report["hypotheses_hold"]:
            st.warning("A hypothesis of the paper fails for this schedule (see the table).")
        show_chart(stage_chart(stages))
        st.caption(step_size_words(report))
        if report["num_stages"] == 1:
            st.info(f"**One stage only.** The first stage would last {number_text(stages[0]['length'], 12)} "
                    f"iterations, more than T = {number_text(report['iterations'], 12)}: the sensitivity is never "
                    "reduced, and MAPA runs as AUDP with the constant step above.")
        stuck = barely_moves(report, request.smoothness)
        if stuck is not None:
            st.warning(stuck)
        table = pd.DataFrame(stages)[list(TABLE)].rename(columns=TABLE)
        show_table(table, {TABLE["P"]: number_text, TABLE["learning_rate"]: number_text,  # noise: never shown low
                           TABLE["sensitivity"]: rounded_up, TABLE["noise_scale"]: rounded_up})
        show_table(pd.DataFrame(report["hypotheses"]))
        st.caption(literal(report.statement))
        files = exports(fields, report.result)
        json_column, csv_column = st.columns(2)
        json_column.download_button("Schedule JSON", files["json"], file_name="mapa_schedule.json")
        csv_column.download_button("Schedule CSV (one row per stage)", files["csv"], file_name="mapa_schedule.csv")


main()
