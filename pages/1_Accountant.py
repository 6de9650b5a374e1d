"""Accountant page: ε of a schedule (PLD and RDP), calibration of σ, T or q, and ε against steps.

Thin over :mod:`bounds.accounting`: it parses inputs, calls the accountant (cached), and shows the
results, the assumptions behind them, and ε against steps.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.bounds import accounting
from fedplan.planner.display import epsilon_text, parse_number
from fedplan.planner.uploads import segments_from_upload

st.set_page_config(page_title="fedplan: privacy accountant", layout="wide")

ASSUMPTIONS = ("Assumptions behind every number: Poisson sampling (each example joins a step independently with "
               "probability q), add/remove-one neighbouring data sets, Gaussian noise with noise multiplier "
               "σ = noise standard deviation / clipping norm.")


@st.cache_data(show_spinner=False, max_entries=256)
def cached_epsilon(q: float, sigma: float, steps: float, delta: float, accountant: str) -> dict:
    return accounting.get_epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps, delta=delta,
                                  accountant=accountant, time_budget=10.0).to_dict()


@st.cache_data(show_spinner=False, max_entries=256)
def cached_calibration(parameter: str, target_epsilon: float, target_delta: float, fixed: tuple,
                       accountant: str) -> dict:
    return accounting.calibrate(parameter, target_epsilon=target_epsilon, target_delta=target_delta,
                                accountant=accountant, time_budget=10.0, **dict(fixed)).to_dict()


def epsilon_chart(q: float, sigma: float, steps: int, delta: float, pld_points: list[tuple[int, float]]):
    grid = np.unique(np.geomspace(1, max(2 * steps, 10), 120).astype(int))
    rdp_curve = accounting.epsilon_curve(sample_rate=q, noise_multiplier=sigma, steps=grid, delta=delta)
    frame = pd.DataFrame({"steps": grid, "epsilon": rdp_curve, "accountant": "RDP"})
    pld_frame = pd.DataFrame(pld_points, columns=["steps", "epsilon"]).assign(accountant="PLD")
    colour = alt.Color("accountant", scale=alt.Scale(domain=["PLD", "RDP"], range=["#d62728", "#1f77b4"]))
    line = alt.Chart(frame).mark_line().encode(x=alt.X("steps", scale=alt.Scale(type="log")), y="epsilon",
                                               color=colour)
    dots = alt.Chart(pld_frame).mark_point(filled=True, size=70).encode(x="steps", y="epsilon", color=colour)
    rule = alt.Chart(pd.DataFrame({"steps": [steps]})).mark_rule(strokeDash=[4, 4]).encode(x="steps")
    return (line + dots + rule).properties(height=320)


def pld_curve_points(q: float, sigma: float, steps: int, delta: float) -> list[tuple[int, float]]:
    points = sorted({max(1, int(t)) for t in np.geomspace(1, 2 * steps, 6)} | {steps})
    progress = st.progress(0.0, text="PLD ε along the curve")
    values = []
    for index, t in enumerate(points):
        values.append((t, cached_epsilon(q, sigma, t, delta, "pld")["epsilon"]))
        progress.progress((index + 1) / len(points), text=f"PLD ε at {t} steps")
    progress.empty()
    return values


def epsilon_page() -> None:
    left, right = st.columns([1, 2])
    with left:
        q = parse_number("sample_rate", st.text_input("Sample rate q (Poisson)", "0.01"))
        sigma = parse_number("noise_multiplier", st.text_input("Noise multiplier σ", "1.1"))
        steps = parse_number("steps", st.text_input("Steps T", "10000"))
        delta = parse_number("delta", st.text_input("δ", "1e-5"))
        show_curve = st.checkbox("Add PLD points to the curve (slower)", value=False)
    pld_result = cached_epsilon(q, sigma, steps, delta, "pld")
    rdp_result = cached_epsilon(q, sigma, steps, delta, "rdp")
    with right:
        first, second, third = st.columns(3)
        first.metric(f"ε ({pld_result['accountant'].upper()}, tight)", epsilon_text(pld_result["epsilon"]))
        second.metric("ε (RDP)", epsilon_text(rdp_result["epsilon"]))
        third.metric("RDP overstates ε by", f"{100 * (rdp_result['epsilon'] / pld_result['epsilon'] - 1):.1f} %")
        st.caption(pld_result["statement"])
        if pld_result["fallback_reason"]:
            st.warning(pld_result["fallback_reason"])
        points = pld_curve_points(q, sigma, int(steps), delta) if show_curve else [(int(steps), pld_result["epsilon"])]
        st.altair_chart(epsilon_chart(q, sigma, int(steps), delta, points), width="stretch")


@st.cache_data(show_spinner=False, max_entries=32)
def cached_schedule_epsilon(filename: str, content: bytes, delta: float, accountant: str) -> dict:
    segments = segments_from_upload(filename, content)
    return accounting.get_epsilon(segments=segments, delta=delta, accountant=accountant, time_budget=10.0).to_dict()


def schedule_file_page() -> None:
    left, right = st.columns([1, 2])
    with left:
        upload = st.file_uploader("Schedule: CSV or JSON of segments (sample_rate, noise_multiplier, steps)",
                                  type=["csv", "json"])
        delta = parse_number("delta", st.text_input("δ", "1e-5", key="schedule_delta"))
    if upload is None:
        raise ValueError("upload a schedule file: one segment per row (CSV) or a JSON list of segments")
    with right, st.spinner("Accounting the schedule (PLD and RDP)…"):
        results = {name: cached_schedule_epsilon(upload.name, upload.getvalue(), delta, name)
                   for name in ("pld", "rdp")}
    with right:
        first, second = st.columns(2)
        first.metric(f"ε ({results['pld']['accountant'].upper()}, tight)", epsilon_text(results["pld"]["epsilon"]))
        second.metric("ε (RDP)", epsilon_text(results["rdp"]["epsilon"]))
        st.caption(results["pld"]["statement"])


def calibration_page() -> None:
    left, right = st.columns([1, 2])
    with left:
        parameter = st.radio("Solve for", ["noise_multiplier", "steps", "sample_rate"], horizontal=True)
        target_epsilon = parse_number("target_epsilon", st.text_input("Target ε", "2"))
        target_delta = parse_number("target_delta", st.text_input("Target δ", "1e-5"))
        fixed = {}
        if parameter != "sample_rate":
            fixed["sample_rate"] = parse_number("sample_rate", st.text_input("Sample rate q (Poisson)", "0.01"))
        if parameter != "noise_multiplier":
            fixed["noise_multiplier"] = parse_number("noise_multiplier", st.text_input("Noise multiplier σ", "1.1"))
        if parameter != "steps":
            fixed["steps"] = parse_number("steps", st.text_input("Steps T", "10000"))
    with right, st.spinner("Calibrating (RDP bracket, then PLD)…"):
        pld_answer = cached_calibration(parameter, target_epsilon, target_delta, tuple(sorted(fixed.items())), "pld")
    with right:
        first, second = st.columns(2)
        first.metric(f"{parameter} ({pld_answer['accountant'].upper()})", f"{pld_answer['value']:.6g}",
                     help=f"ε = {epsilon_text(pld_answer['epsilon'], 6)}")
        second.metric(f"{parameter} (RDP)", f"{pld_answer['rdp_value']:.6g}")
        st.caption(pld_answer["statement"])
        if pld_answer["fallback_reason"]:
            st.warning(pld_answer["fallback_reason"])


def main() -> None:
    st.title("Privacy accountant")
    st.write(ASSUMPTIONS)
    task = st.radio("Task", ["ε of a schedule", "ε of a schedule file", "Calibrate a parameter"], horizontal=True)
    try:
        if task == "ε of a schedule":
            epsilon_page()
        elif task == "ε of a schedule file":
            schedule_file_page()
        else:
            calibration_page()
    except ValueError as error:
        st.error(str(error))


main()
