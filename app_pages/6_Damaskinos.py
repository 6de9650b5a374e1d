"""Damaskinos thesis: DP-SCD σ against batch size (MA128 vs RDP), staleness dampening, Byzantine n vs f.

Each tab builds the request of its command from its widgets (:mod:`fedplan.app_pages.widgets`): ``fedplan dpscd
calibrate`` (:class:`~fedplan.planner.tasks.damaskinos.DpscdCalibrate`, one per batch size of the chart),
``fedplan staleness beta`` (:class:`~fedplan.planner.tasks.damaskinos.StalenessBeta`) and ``fedplan byzantine
max-f`` (:class:`~fedplan.planner.tasks.damaskinos.ByzantineMaxF`, one per rule). Each tab downloads what it shows
as JSON and CSV (DP-SCD: its schedule, one row per phase), written when the button is clicked. Each tab is a
fragment: a box changed in one tab reruns that tab alone (the browser redraws a third of the page).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.markdown_elements import show_formula, show_table
from fedplan.app_pages.widgets import Form, as_text, labelled, report
from fedplan.bounds import byzantine, dpscd
from fedplan.planner import damaskinos
from fedplan.planner.display import accountant_label
from fedplan.planner.export import render
from fedplan.planner.tasks.damaskinos import ByzantineMaxF, DpscdCalibrate, StalenessBeta

st.set_page_config(page_title="fedplan: Damaskinos", layout="wide")

BATCH_GRID = (100, 200, 500, 1000, 2000, 5000, 10_000)
#: The accountant of the DP-SCD requests: RDP (an upper bound), with the authors' MA128 as its comparison.
DPSCD_ACCOUNTANT = "rdp"
EPSILON_KEY, EPOCHS_KEY, BATCH_KEY, THRESHOLD_KEY = "dpscd-epsilon", "dpscd-epochs", "dpscd-batch", "tau-thres"
MAX_STALENESS = damaskinos.MAX_STALENESS
SAMPLING = "Poisson sampling at rate q = L/N, add/remove-one neighbours"


def rounded_up(value: float) -> str:
    """``value`` with as few significant digits (2 to 6) as keep it at or above ``value``: a one-click value."""
    for digits in range(2, 7):
        text = f"{value:.{digits}g}"
        if float(text) >= value:
            return text
    return repr(value)


def accountant_name(accountant: str) -> str:
    """The chart's and the CSV's name of an accountant: "MA128 (the thesis)", "RDP upper bound", "PLD, tight"."""
    return "MA128 (the thesis)" if accountant == "ma128" else accountant_label(accountant, "upper bound")


def noise_text(value: float) -> str:
    """σ at 6 significant digits, rounded up (a shown noise is never below the calibrated one)."""
    unit = 10.0 ** (math.floor(math.log10(value)) - 5)
    return f"{math.ceil(value / unit) * unit:.6g}"


@st.cache_data(show_spinner="Calibrating σ per batch size", max_entries=16)
def sigma_by_batch(fields: tuple, _request: DpscdCalibrate) -> tuple[pd.DataFrame, tuple[int, ...]]:
    """σ of the request at every batch size of the grid (and its own) under RDP and the authors' MA128 (None where
    MA128 certifies nothing), cached on the request; and the batch sizes left out because they give no iteration
    (T = ⌊E·N/L⌋ = 0)."""
    batches = sorted({batch for batch in BATCH_GRID if batch <= _request.examples} | {_request.batch_size})
    rows, empty = [], []
    for batch in batches:
        try:
            answer = report(replace(_request, batch_size=batch))
        except ValueError:  # T = 0 at this batch size (the request's own batch has T >= 1)
            empty.append(batch)
            continue
        for accountant, sigma in ((answer["accountant"], answer["noise_multiplier"]),
                                  (answer["comparison"]["accountant"], answer["comparison"]["noise_multiplier"])):
            rows.append({"batch size L": batch, "iterations T": answer["steps"],
                         "accountant": accountant_name(accountant), "σ": sigma})
    return pd.DataFrame(rows), tuple(empty)


def sigma_chart(batch_size: int, frame: pd.DataFrame) -> dict:
    """The σ-vs-batch chart's Vega-Lite spec: a plain dict with named data sets (Streamlit sends them as Arrow;
    Altair took about 0.1 s to build it)."""
    x = {"field": "batch size L", "type": "quantitative", "title": "batch size L (log)", "scale": {"type": "log"}}
    drawn = frame.dropna(subset=["σ"])
    lines = {"data": {"name": "sigma"}, "mark": {"type": "line", "point": True},
             "encoding": {"x": x, "y": {"field": "σ", "type": "quantitative", "title": "noise multiplier σ"},
                          "color": {"field": "accountant", "type": "nominal",
                                    "legend": {"orient": "bottom", "title": None, "labelLimit": 0}},
                          "tooltip": [{"field": name, "type": "nominal" if name == "accountant" else "quantitative"}
                                      for name in drawn]}}
    rule = {"data": {"name": "batch"}, "mark": {"type": "rule", "strokeDash": [4, 4]}, "encoding": {"x": x}}
    return {"height": 300, "title": "σ for the same (ε, δ): the authors' MA128 vs RDP", "layer": [lines, rule],
            "datasets": {"sigma": drawn, "batch": pd.DataFrame({"batch size L": [batch_size]})}}


@st.cache_data(show_spinner=False, max_entries=16)
def schedule_texts(fields: tuple, _request: DpscdCalibrate) -> tuple[str, str]:
    """The plan's schedule as JSON and CSV (one row per phase), cached: its privacy block runs the PLD accountant."""
    schedule = report(_request).result.schedule()
    return render(schedule, "json"), render(schedule, "csv")


def ma128_metric(column, answer) -> None:
    """The authors' σ, or why MA128 has none (the target is at or below its floor ln(1/δ)/128), with the nearest
    target it answers one click away."""
    sigma = answer["comparison"]["noise_multiplier"]
    if sigma is not None:
        column.metric("σ (MA128, the thesis)", noise_text(sigma), help="MA128: moments accountant, orders 1..128 "
                      "(an upper bound), the thesis's calibration")
        return
    floor = dpscd.epsilon_floor(delta=answer["target_delta"])
    nearest = rounded_up(floor * (1 + 1e-9))
    column.metric("σ (MA128, the thesis)", "none")
    column.caption(f"MA128, the thesis's accountant, certifies no ε at or below ln(1/δ)/128 = {floor:.4g} at "
                   f"δ = {answer['target_delta']:g}, whatever the noise. Raise ε above it (or raise δ); the RDP σ "
                   f"beside it holds for ε = {answer['target_epsilon']:g}.")
    column.button(f"Set ε to {nearest}", on_click=st.session_state.__setitem__, args=(EPSILON_KEY, nearest),
                  key="dpscd-nearest-epsilon")


def dpscd_fixes(form: Form) -> None:
    """Under a refused plan, the nearest one one click away: L down to N when L > N (a batch of more examples than
    there are), E up to L/N when T = ⌊E·N/L⌋ = 0 (no iteration)."""
    batch, examples, epochs = (form.values.get(name) for name in ("batch_size", "examples", "epochs"))
    if None in (batch, examples, epochs) or examples < 1 or batch < 1 or epochs <= 0:
        return
    if batch > examples:
        st.button(f"Set batch size L to N = {examples}", on_click=st.session_state.__setitem__,
                  args=(BATCH_KEY, str(examples)),
                  key="dpscd-nearest-batch")
    elif epochs < batch / examples:
        nearest = rounded_up(batch / examples * (1 + 1e-9))
        st.button(f"Set epochs to {nearest} (one iteration: E·N/L = 1)", on_click=st.session_state.__setitem__,
                  args=(EPOCHS_KEY, nearest),
                  key="dpscd-nearest-epochs")


def dpscd_tab() -> None:
    show_formula("σ = min{σ : MA(δ, σ, L/N, T) ≤ ε},  T = ⌊E·N/L⌋", "thesis Eq. 6.2, L1336-1340")
    left, right = st.columns([1, 2])
    with left:
        form = Form(DpscdCalibrate)
        form.field("target_epsilon", "ε", default="0.1", key=EPSILON_KEY)
        form.field("target_delta", "δ", default="1e-3")
        form.field("examples", "Examples N", default="347786")
        form.field("epochs", "Epochs E", default="50", key=EPOCHS_KEY)
        form.field("batch_size", "Batch size L (marked on the chart)", default="1000", key=BATCH_KEY)
        request = form.build(accountant=DPSCD_ACCOUNTANT)
    # computed in the script run (0.1-0.3 s), not in app_pages/background.py: a progress fragment inside a tab,
    # rerunning the page when done, left the tabs' keyed boxes empty in the browser on a fresh server's first visit
    answer = form.answer(request)
    if answer is None:
        with left:
            dpscd_fixes(form)
        with right:
            st.info("The σ chart and the downloads need a plan: change the input marked in red on the left.")
        return
    with right:
        columns = st.columns(3)
        ma128_metric(columns[0], answer)
        rdp_label = accountant_label(answer["accountant"], "upper bound")
        columns[1].metric(f"σ ({rdp_label})", noise_text(answer["noise_multiplier"]),
                          help=f"least σ with ε ≤ {answer['target_epsilon']:g} under the {rdp_label}; {SAMPLING}")
        columns[2].metric("Iterations T", f"{answer['steps']}",
                          help=f"T = ⌊E·N/L⌋; sample rate q = L/N = {answer['sample_rate']:.4g}")
        if answer["steps"] == 1:
            st.caption(f"One iteration: E·N/L = {answer['epochs'] * answer['examples'] / answer['batch_size']:.3g} "
                       "rounds down to T = 1, one noisy batch over the data.")
        fields = tuple(request.inputs().items())
        frame, empty = sigma_by_batch(fields, request)
        show_chart(sigma_chart(request.batch_size, frame))
        if empty:
            st.caption(f"Not drawn: L = {', '.join(f'{batch:,}' for batch in empty)} give no iteration at "
                       f"E = {request.epochs:g} (T = ⌊E·N/L⌋ = 0).")
        st.caption(f"{SAMPLING}; MA128 is the classic moments accountant (orders 1..128) the thesis used, RDP an "
                   "upper bound on the same mechanism.")
        st.caption(answer.statement)
        downloads = st.columns(3)
        for column, (index, name) in zip(downloads, ((0, "JSON"), (1, "CSV")), strict=False):
            column.download_button(f"Schedule {name}", lambda i=index: schedule_texts(fields, request)[i],
                                   file_name=f"dpscd_schedule.{name.lower()}", on_click="ignore")
        downloads[2].download_button("σ by batch size CSV", lambda: frame.to_csv(index=False),
                                     file_name="dpscd_sigma.csv", on_click="ignore")


def dampening_chart(frame: pd.DataFrame) -> dict:
    """The dampening curves' Vega-Lite spec, a plain dict with a named data set (as :func:`sigma_chart`)."""
    long = frame.melt("staleness τ", var_name="dampening", value_name="Λ(τ)")
    return {"height": 300, "datasets": {"dampening": long}, "data": {"name": "dampening"}, "mark": {"type": "line"},
            "encoding": {"x": {"field": "staleness τ", "type": "quantitative", "title": "staleness τ"},
                         "y": {"field": "Λ(τ)", "type": "quantitative", "title": "Λ(τ)"},
                         "color": {"field": "dampening", "type": "nominal",
                                   "legend": {"orient": "bottom", "title": None}}}}


def dampening_tab() -> None:
    show_formula("Λ(τ) = e^(−β·τ),  β = 2·ln(1 + τ_thres/2) / τ_thres", "AdaSGD, L612")
    form = Form(StalenessBeta)
    threshold = form.field("staleness_threshold", "τ_thres", default="12", key=THRESHOLD_KEY)
    if form.show_problems():
        return
    try:
        request = StalenessBeta(staleness_threshold=threshold,
                                staleness_values=tuple(np.linspace(0.0, 2.0 * threshold, 97)))
    except ValueError as error:  # on this page the staleness law follows τ_thres: its refusal goes under that box
        form.error(str(error), field="staleness_threshold")
        if threshold > MAX_STALENESS:  # the law's largest staleness, mean + 3 std, is τ_thres itself
            largest = as_text(MAX_STALENESS)
            st.button(f"Set τ_thres to {largest}", on_click=st.session_state.__setitem__, args=(THRESHOLD_KEY, largest))
        return
    answer = form.answer(request)
    if answer is None:
        return
    frame = pd.DataFrame({"staleness τ": [float(tau) for tau in answer["dampening"]],
                          "AdaSGD e^(−βτ)": list(answer["dampening"].values()),
                          "DynSGD 1/(1+τ)": list(answer["inverse_dampening"].values())})
    st.metric("β", f"{answer['beta']:.6f}",
              help=f"Λ(τ_thres/2) = {answer['dampening_at_crossing']:.4f} = 1/(1 + τ_thres/2)")
    show_chart(dampening_chart(frame))
    st.caption(answer.statement)
    left, right = st.columns(2)
    left.download_button("Dampening JSON", lambda: json.dumps(answer.to_dict(), indent=2), file_name="dampening.json",
                         on_click="ignore")
    right.download_button("Dampening curves CSV", lambda: frame.to_csv(index=False), file_name="dampening.csv",
                          on_click="ignore")


def byzantine_tab() -> None:
    form = Form(ByzantineMaxF)
    form.field("workers", "Workers n", default="19")
    rows = []
    for rule in byzantine.RULES:
        request = form.build(rule=rule)
        if request is None:  # the number of workers is refused (shown under its box)
            return
        try:
            answer = report(request)
            rows.append({"rule": rule, "requirement": answer["requirement"], "max f": answer["max_f"],
                         "source": answer["source"]})
        except ValueError as error:  # too few workers for this rule: said in its row
            rows.append({"rule": rule, "requirement": byzantine.requirement_text(rule=rule), "max f": None,
                         "source": labelled(str(error), form.labels)})
    table = pd.DataFrame(rows)
    show_table(table)
    left, right = st.columns(2)
    left.download_button("Table JSON", lambda: json.dumps({"workers": request.workers, "rules": rows}, indent=2),
                         file_name="byzantine.json", on_click="ignore")
    right.download_button("Table CSV", lambda: table.to_csv(index=False), file_name="byzantine.csv", on_click="ignore")


def main() -> None:
    st.title("Damaskinos: DP-SCD, staleness dampening, Byzantine tolerance")
    tabs = st.tabs(["DP-SCD σ vs batch size", "Dampening curves", "Byzantine n vs f"])
    for tab, content in zip(tabs, (dpscd_tab, dampening_tab, byzantine_tab), strict=True):
        with tab:  # a fragment: a box changed in one tab reruns that tab only
            st.fragment(content)()


main()
