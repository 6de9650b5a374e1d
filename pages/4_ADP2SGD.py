"""Xu et al. A(DP)²SGD: ε against the noise multiplier with Theorem 2's feasibility band, paper vs tight."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.bounds import adp2sgd as xu
from fedplan.planner.display import epsilon_text, parse_number, parse_whole

st.set_page_config(page_title="fedplan: A(DP)²SGD", layout="wide")

CURVE_POINTS = 24




def setting_inputs() -> xu.Setting:
    return xu.Setting(workers=parse_whole("workers", st.text_input("Workers K", "16")),
                      examples_per_worker=parse_whole("examples_per_worker",
                                                      st.text_input("Examples per worker n", "3125")),
                      batch_size=parse_whole("batch_size", st.text_input("Batch size B", "256")),
                      steps=parse_whole("steps", st.text_input("Iterations T", "58594")),
                      delta=parse_number("delta", st.text_input("δ", "1e-5")))


@st.cache_data(show_spinner=False, max_entries=16)
def epsilon_curve(setting: xu.Setting) -> pd.DataFrame:
    low, high = xu.noise_band(setting=setting)
    grid = np.unique(np.concatenate([np.geomspace(0.5, max(2 * high, 4.0), CURVE_POINTS), [low, high]]))
    rows = []
    progress = st.progress(0.0, text="Tight accountant along the curve")
    for index, z in enumerate(grid):
        paper = xu.paper_epsilon_for_noise(setting=setting, noise_multiplier=float(z))
        if paper.feasible:
            rows.append({"noise multiplier z": z, "ε": paper.epsilon, "answer": "Theorem 2 (paper)"})
        rows.append({"noise multiplier z": z, "ε": xu.tight_epsilon(setting=setting, noise_multiplier=float(z)).epsilon,
                     "answer": "tight (same sampling, replace-one)"})
        progress.progress((index + 1) / len(grid))
    progress.empty()
    return pd.DataFrame(rows)


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
    left, right = st.columns([1, 2])
    try:
        with left:
            setting = setting_inputs()
        floor = xu.epsilon_floor(setting=setting)
        band = xu.noise_band(setting=setting)
        with right:
            columns = st.columns(3)
            columns[0].metric("Smallest ε Theorem 2 certifies", epsilon_text(floor.epsilon),
                              help=f"at z = {floor.noise_multiplier:.5g}")
            columns[1].metric("Noise band (z)", f"[{band[0]:.4g}, {band[1]:.4g})")
            tight = xu.tight_epsilon(setting=setting, noise_multiplier=floor.noise_multiplier)
            columns[2].metric("Tight ε at that z", epsilon_text(tight.epsilon), help=tight.sampling)
            st.altair_chart(band_chart(epsilon_curve(setting), band, floor.epsilon), width="stretch")
            st.caption("Noise on each worker's averaged minibatch gradient, std 2Gz/B; replace-one neighbours; "
                       "worker choice plus minibatch modelled as one sampling without replacement at rate "
                       "B/(K n₍₁₎), as the paper does (xu L520).")
    except ValueError as error:
        st.error(str(error))


main()
