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

from fedplan.bounds import accounting, sampling
from fedplan.pages.widgets import Form, report
from fedplan.planner.display import accountant_label, epsilon_text
from fedplan.planner.tasks.accounting import CalibrateNoise, CalibrateSampleRate, CalibrateSteps, Epsilon
from fedplan.planner.uploads import segments_from_upload

st.set_page_config(page_title="fedplan: privacy accountant", layout="wide")

ASSUMPTIONS = ("Every number assumes the sampling and neighbouring relation chosen below and Gaussian noise with "
               "noise multiplier σ = noise standard deviation / clipping norm on a sum of contributions clipped to "
               "norm C. Derivations: docs/SAMPLING.md.")
#: Seconds the PLD accountant may take in the app before the RDP answer is reported instead.
TIME_BUDGET = 10.0
CALIBRATIONS = {"noise_multiplier": CalibrateNoise, "steps": CalibrateSteps, "sample_rate": CalibrateSampleRate}
#: The schedule's fields as the page labels them, with the page's defaults.
SCHEDULE_FIELDS = (("sample_rate", "Sample rate q (share of the data per step)", "0.01"),
                   ("noise_multiplier", "Noise multiplier σ", "1.1"), ("steps", "Steps T", "10000"))


def sampling_fields(form: Form) -> None:
    """The run's sampling model: sampling, neighbouring relation and, where it matters, N."""
    form.field("sampling", "Sampling", widget="selectbox",
               format_func=lambda name: f"{name}: {sampling.SAMPLING_HELP[name]}")
    form.field("neighboring_relation", "Neighbouring relation", widget="selectbox",
               format_func=lambda name: f"{name}: {sampling.RELATION_HELP[name]}")
    form.field("dataset_size", "Data set size N (records or clients; needed for with_replacement)", default="")
    form.field("client_sample_rate", "Client sample rate (two-stage: clients per round, then records; blank = one "
               "stage)", default="")


def fast_accountant(request) -> str | None:
    """The second accountant shown next to the tight one: rdp where the run has an RDP bound, else none."""
    found = sampling.MECHANISMS.get((request.sampling, request.neighboring_relation))
    return "rdp" if found is not None and found.rdp_method else None


def epsilon_chart(request: Epsilon, pld_points: list[tuple[int, float]]):
    steps = request.steps
    grid = np.unique(np.geomspace(1, max(2 * steps, 10), 120).astype(int))
    frames = [pd.DataFrame(pld_points, columns=["steps", "epsilon"]).assign(accountant="PLD")]
    found = sampling.MECHANISMS[(request.sampling, request.neighboring_relation)]
    curve_name = "exact" if found.exact_method else "RDP"
    if found.rdp_method or found.exact_method:
        curve = accounting.epsilon_curve(sample_rate=request.sample_rate, noise_multiplier=request.noise_multiplier,
                                         steps=grid, delta=request.delta, sampling=request.sampling,
                                         neighboring_relation=request.neighboring_relation,
                                         dataset_size=request.dataset_size)
        frames = [pd.DataFrame({"steps": grid, "epsilon": curve, "accountant": curve_name})]
        if not found.exact_method:
            frames.append(pd.DataFrame(pld_points, columns=["steps", "epsilon"]).assign(accountant="PLD"))
    frame, pld_frame = frames[0], frames[-1]
    colour = alt.Color("accountant", scale=alt.Scale(domain=["PLD", "RDP", "exact"],
                                                     range=["#d62728", "#1f77b4", "#2ca02c"]))
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
        sampling_fields(form)
        show_curve = st.checkbox("Add PLD points to the curve (slower)", value=False)
        request = form.build(time_budget=TIME_BUDGET)
        pld = form.answer(request)
        second = request and fast_accountant(request)
        rdp = form.answer(replace(request, accountant=second)) if second else None
    if pld is None or (second and rdp is None):
        return
    with right:
        first, middle, third = st.columns(3)
        first.metric(f"ε ({accountant_label(pld['accountant'], pld['bound'])})", epsilon_text(pld["epsilon"]))
        if rdp is not None and pld["accountant"] != "rdp":
            middle.metric("ε (RDP)", epsilon_text(rdp["epsilon"]))
            third.metric("RDP overstates ε by", f"{100 * (rdp['epsilon'] / pld['epsilon'] - 1):.1f} %")
        elif rdp is None and pld["accountant"] == "pld":
            middle.caption("No RDP bound is implemented for this sampling: PLD only.")
        st.caption(pld.statement)
        if pld["fallback_reason"]:
            st.warning(pld["fallback_reason"])
        points = pld_curve_points(request) if show_curve or not second else [(request.steps, pld["epsilon"])]
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
        sampling_fields(form)
    if upload is None:
        form.error("upload a schedule file: one segment per row (CSV) or a JSON list of segments")
        return
    try:
        segments = uploaded_segments(upload.name, upload.getvalue())
    except ValueError as error:
        form.error(str(error))
        return
    request = form.build(segments=segments, time_budget=TIME_BUDGET)
    names = ("pld", "rdp") if request and fast_accountant(request) else ("pld",)
    with right, st.spinner("Accounting the schedule…"):
        results = {name: form.answer(request and replace(request, accountant=name)) for name in names}
    if None in results.values():
        return
    with right:
        first, second = st.columns(2)
        tight = results["pld"]
        first.metric(f"ε ({accountant_label(tight['accountant'], tight['bound'])})", epsilon_text(tight["epsilon"]))
        if "rdp" in results and tight["accountant"] != "rdp":
            second.metric("ε (RDP)", epsilon_text(results["rdp"]["epsilon"]))
        st.caption(tight.statement)


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
        sampling_fields(form)
        request = form.build(time_budget=TIME_BUDGET)
    with right, st.spinner("Calibrating (RDP bracket, then PLD)…"):
        answer = form.answer(request)
    if answer is None:
        return
    with right:
        first, second = st.columns(2)
        label = accountant_label(answer["accountant"], answer["bound"])
        first.metric(f"{parameter} ({label})", f"{answer['value']:.6g}",
                     help=f"ε = {epsilon_text(answer['epsilon'], 6)}")
        if answer["rdp_value"] is not None and answer["accountant"] == "pld":
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
