"""Accountant page: ε of a schedule (PLD and RDP), calibration of σ, T or q, and ε against steps.

Thin over :mod:`fedplan.planner.tasks.accounting`: each task builds the request of ``fedplan epsilon`` or ``fedplan
calibrate …`` from its widgets (:mod:`fedplan.pages.widgets`) and shows its report (cached), the assumptions behind
it, and ε against steps.
"""

from __future__ import annotations

from dataclasses import replace

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.bounds import accounting
from fedplan.pages.widgets import Form, report
from fedplan.planner.display import epsilon_text
from fedplan.planner.tasks.accounting import CalibrateNoise, CalibrateSampleRate, CalibrateSteps, Epsilon
from fedplan.planner.uploads import segments_from_upload

st.set_page_config(page_title="fedplan: privacy accountant", layout="wide")

ASSUMPTIONS = ("Assumptions behind every number: Poisson sampling (each example joins a step independently with "
               "probability q), add/remove-one neighbouring data sets, Gaussian noise with noise multiplier "
               "σ = noise standard deviation / clipping norm.")
#: Seconds the PLD accountant may take in the app before the RDP answer is reported instead.
TIME_BUDGET = 10.0
CALIBRATIONS = {"noise_multiplier": CalibrateNoise, "steps": CalibrateSteps, "sample_rate": CalibrateSampleRate}
#: The schedule's fields as the page labels them, with the page's defaults.
SCHEDULE_FIELDS = (("sample_rate", "Sample rate q (Poisson)", "0.01"),
                   ("noise_multiplier", "Noise multiplier σ", "1.1"), ("steps", "Steps T", "10000"))


def epsilon_chart(request: Epsilon, pld_points: list[tuple[int, float]]):
    steps = request.steps
    grid = np.unique(np.geomspace(1, max(2 * steps, 10), 120).astype(int))
    rdp_curve = accounting.epsilon_curve(sample_rate=request.sample_rate, noise_multiplier=request.noise_multiplier,
                                         steps=grid, delta=request.delta)
    frame = pd.DataFrame({"steps": grid, "epsilon": rdp_curve, "accountant": "RDP"})
    pld_frame = pd.DataFrame(pld_points, columns=["steps", "epsilon"]).assign(accountant="PLD")
    colour = alt.Color("accountant", scale=alt.Scale(domain=["PLD", "RDP"], range=["#d62728", "#1f77b4"]))
    line = alt.Chart(frame).mark_line().encode(x=alt.X("steps", scale=alt.Scale(type="log")), y="epsilon",
                                               color=colour)
    dots = alt.Chart(pld_frame).mark_point(filled=True, size=70).encode(x="steps", y="epsilon", color=colour)
    rule = alt.Chart(pd.DataFrame({"steps": [steps]})).mark_rule(strokeDash=[4, 4]).encode(x="steps")
    return (line + dots + rule).properties(height=320)


def pld_curve_points(request: Epsilon) -> list[tuple[int, float]]:
    """PLD ε of the same schedule at a few step counts (each one the request with other steps)."""
    points = sorted({max(1, int(t)) for t in np.geomspace(1, 2 * request.steps, 6)} | {request.steps})
    progress = st.progress(0.0, text="PLD ε along the curve")
    values = []
    for index, t in enumerate(points):
        values.append((t, report(replace(request, steps=t))["epsilon"]))
        progress.progress((index + 1) / len(points), text=f"PLD ε at {t} steps")
    progress.empty()
    return values


def epsilon_page() -> None:
    left, right = st.columns([1, 2])
    with left:
        form = Form(Epsilon)
        for name, label, default in SCHEDULE_FIELDS:
            form.field(name, label, default=default)
        form.field("delta", "δ", default="1e-5")
        show_curve = st.checkbox("Add PLD points to the curve (slower)", value=False)
        request = form.build(time_budget=TIME_BUDGET)
        pld = form.answer(request)
        rdp = form.answer(request and replace(request, accountant="rdp"))
    if pld is None or rdp is None:
        return
    with right:
        first, second, third = st.columns(3)
        first.metric(f"ε ({pld['accountant'].upper()}, tight)", epsilon_text(pld["epsilon"]))
        second.metric("ε (RDP)", epsilon_text(rdp["epsilon"]))
        third.metric("RDP overstates ε by", f"{100 * (rdp['epsilon'] / pld['epsilon'] - 1):.1f} %")
        st.caption(pld.statement)
        if pld["fallback_reason"]:
            st.warning(pld["fallback_reason"])
        points = pld_curve_points(request) if show_curve else [(request.steps, pld["epsilon"])]
        st.altair_chart(epsilon_chart(request, points), width="stretch")


@st.cache_data(show_spinner=False, max_entries=32)
def uploaded_segments(filename: str, content: bytes) -> tuple:
    return tuple(segments_from_upload(filename, content))


def schedule_file_page() -> None:
    left, right = st.columns([1, 2])
    with left:
        form = Form(Epsilon)
        upload = st.file_uploader("Schedule: CSV or JSON of segments (sample_rate, noise_multiplier, steps)",
                                  type=["csv", "json"])
        form.field("delta", "δ", default="1e-5", key="schedule_delta")
    if upload is None:
        form.error("upload a schedule file: one segment per row (CSV) or a JSON list of segments")
        return
    try:
        segments = uploaded_segments(upload.name, upload.getvalue())
    except ValueError as error:
        form.error(str(error))
        return
    request = form.build(segments=segments, time_budget=TIME_BUDGET)
    with right, st.spinner("Accounting the schedule (PLD and RDP)…"):
        results = {name: form.answer(request and replace(request, accountant=name)) for name in ("pld", "rdp")}
    if None in results.values():
        return
    with right:
        first, second = st.columns(2)
        first.metric(f"ε ({results['pld']['accountant'].upper()}, tight)", epsilon_text(results["pld"]["epsilon"]))
        second.metric("ε (RDP)", epsilon_text(results["rdp"]["epsilon"]))
        st.caption(results["pld"].statement)


def calibration_page() -> None:
    left, right = st.columns([1, 2])
    with left:
        parameter = st.radio("Solve for", list(CALIBRATIONS), horizontal=True)
        form = Form(CALIBRATIONS[parameter])
        form.field("target_epsilon", "Target ε", default="2")
        form.field("target_delta", "Target δ", default="1e-5")
        for name, label, default in SCHEDULE_FIELDS:
            if name != parameter:
                form.field(name, label, default=default)
        request = form.build(time_budget=TIME_BUDGET)
    with right, st.spinner("Calibrating (RDP bracket, then PLD)…"):
        answer = form.answer(request)
    if answer is None:
        return
    with right:
        first, second = st.columns(2)
        first.metric(f"{parameter} ({answer['accountant'].upper()})", f"{answer['value']:.6g}",
                     help=f"ε = {epsilon_text(answer['epsilon'], 6)}")
        second.metric(f"{parameter} (RDP)", f"{answer['rdp_value']:.6g}")
        st.caption(answer.statement)
        if answer["fallback_reason"]:
            st.warning(answer["fallback_reason"])


def main() -> None:
    st.title("Privacy accountant")
    st.write(ASSUMPTIONS)
    task = st.radio("Task", ["ε of a schedule", "ε of a schedule file", "Calibrate a parameter"], horizontal=True)
    if task == "ε of a schedule":
        epsilon_page()
    elif task == "ε of a schedule file":
        schedule_file_page()
    else:
        calibration_page()


main()
