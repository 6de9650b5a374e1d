"""Xu et al. A(DP)²SGD: ε against the noise multiplier with Theorem 2's feasibility band, paper vs tight.

The page builds the :class:`~fedplan.planner.tasks.adp2sgd.MinEpsilon` request of ``fedplan adp2sgd min-epsilon``
from its widgets (:mod:`fedplan.pages.widgets`) and shows its report; the chart is
:func:`fedplan.planner.adp2sgd.epsilon_against_noise` of the same setting.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.pages.widgets import Form, form_page
from fedplan.planner.adp2sgd import epsilon_against_noise
from fedplan.planner.display import epsilon_text, theorem_label
from fedplan.planner.tasks.adp2sgd import MinEpsilon

st.set_page_config(page_title="fedplan: A(DP)²SGD", layout="wide")

CURVE_POINTS = 24
PAPER, TIGHT = "Theorem 2 (paper)", "tight (same sampling, replace-one)"


def setting_inputs() -> tuple[Form, MinEpsilon | None]:
    form = Form(MinEpsilon)
    form.field("workers", "Workers K", default="16")
    form.field("examples_per_worker", "Examples per worker n", default="3125")
    form.field("batch_size", "Batch size B", default="256")
    form.field("steps", "Iterations T", default="58594")
    form.field("delta", "δ", default="1e-5")
    return form, form.build()


@st.cache_data(show_spinner=False, max_entries=16)
def epsilon_curve(fields: tuple, _request: MinEpsilon) -> pd.DataFrame:
    progress = st.progress(0.0, text="Tight accountant along the curve")
    rows = epsilon_against_noise(setting=_request.setting(), points=CURVE_POINTS,
                                 progress=lambda done, total: progress.progress(done / total))
    progress.empty()
    frame = pd.DataFrame([{"noise multiplier z": row["noise_to_sensitivity"], "ε": row[key], "answer": answer}
                          for row in rows for key, answer in (("paper_epsilon", PAPER), ("tight_epsilon", TIGHT))
                          if row[key] is not None])
    return frame


def band_chart(frame: pd.DataFrame, band: tuple[float, float], floor: float) -> alt.Chart:
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("noise multiplier z", scale=alt.Scale(type="log")), y=alt.Y("ε", scale=alt.Scale(type="log")),
        color="answer", tooltip=list(frame))
    shade = alt.Chart(pd.DataFrame({"low": [band[0]], "high": [band[1]]})).mark_rect(opacity=0.12).encode(
        x="low", x2="high")
    rule = alt.Chart(pd.DataFrame({"ε": [floor]})).mark_rule(strokeDash=[4, 4]).encode(y="ε")
    return (shade + lines + rule).properties(height=360, title="Theorem 2 certifies only inside the band (shaded); "
                                                               "dashed: its smallest ε")


def main() -> None:
    st.title("A(DP)²SGD (Xu et al.): closed-form privacy and its feasibility band")
    st.latex(r"\sigma^2 = \frac{20\,G^2 T \alpha}{K^2 n_{(1)}^2 \mu\,\varepsilon},\quad "
             r"\alpha = \frac{\log(1/\delta)}{(1-\mu)\varepsilon} + 1 \quad\text{(Theorem 2, xu L171-175)}")
    report, right, request = form_page(setting_inputs)
    if report is None:
        return
    band = tuple(report["noise_band"])
    with right:
        columns = st.columns(3)
        columns[0].metric(theorem_label("Smallest ε Theorem 2 certifies", report["hypotheses"]),
                          epsilon_text(report["floor_epsilon"]),
                          help=f"at z = {report['floor_noise_multiplier']:.5g}")
        columns[1].metric("Noise band (z)", f"[{band[0]:.4g}, {band[1]:.4g})")
        columns[2].metric("Tight ε at that z", epsilon_text(report["tight_epsilon"]), help=report["tight_sampling"])
        frame = epsilon_curve(tuple(request.inputs().items()), request)
        st.altair_chart(band_chart(frame, band, report["floor_epsilon"]), width="stretch")
        st.caption("Noise on each worker's averaged minibatch gradient, std 2Gz/B; replace-one neighbours; "
                   "worker choice plus minibatch modelled as one sampling without replacement at rate "
                   "B/(K n₍₁₎), as the paper does (xu L520).")
        st.caption(report.statement)


main()
