"""Accountant page: ε of a schedule (PLD and RDP), calibration of σ, T or q, and ε against steps.

Thin over :mod:`fedplan.planner.tasks.accounting`: each task builds the request of ``fedplan epsilon`` or ``fedplan
calibrate …`` from its widgets (:mod:`fedplan.app_pages.widgets`) and shows its report (cached), the assumptions behind
it, ε against steps (cached on the request), and JSON and CSV downloads of what it computed. Each task is a
fragment: a box changed in it reruns the task alone (Streamlit's browser side redraws every element of a whole-page
run, about 1-2 ms each on two cores).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pandas as pd
import streamlit as st

from fedplan.app_pages.accountant_curves import accountant_name, epsilon_curve
from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.widgets import Form, answer_in_background, box_name, earlier_answer, kept_answer, literal
from fedplan.bounds import sampling
from fedplan.planner.display import epsilon_text
from fedplan.planner.tasks.accounting import CalibrateNoise, CalibrateSampleRate, CalibrateSteps, Epsilon
from fedplan.planner.tasks.base import Report
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
#: A schedule field as the page names it ("Solve for", messages) and its symbol (a metric's label, short enough for
#: its column).
NAMES = {name: box_name(label) for name, label, _ in SCHEDULE_FIELDS}
SYMBOLS = {"sample_rate": "q", "noise_multiplier": "σ", "steps": "T"}
#: The session-state key of the calibration's target ε box (the one-click fix of an unreachable target sets it).
TARGET_KEY = "calibration_target_epsilon"
#: A calibration's refusal when the target is out of reach at the end of the parameter's range
#: (``bounds.accounting._infeasible_message``): the parameter, its end value and the ε there.
UNREACHABLE = re.compile(r"^target_epsilon=\S+ cannot be met: even (\w+)=(\S+) .* gives ε=([0-9.e+-]+) ")
#: The columns of the CSV export, in order (a row leaves blank what its answer does not have).
CSV_COLUMNS = ("role", "accountant", "steps", "epsilon", "delta", "parameter", "value", "target_epsilon",
               "sample_rate", "noise_multiplier", "sampling", "neighboring_relation", "dataset_size",
               "client_sample_rate")


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


def model_fields(values) -> dict:
    """The sampling model an answer was accounted for."""
    return {name: values.get(name) for name in ("sampling", "neighboring_relation", "dataset_size",
                                                 "client_sample_rate")}


def answer_row(role: str, answer: Report) -> dict:
    """One CSV row of an ε answer or a calibration."""
    values = answer.values
    row = {"role": role, "accountant": accountant_name(answer), "epsilon": values["epsilon"], **model_fields(values)}
    if "parameter" in values:
        fixed = values["fixed"]
        return {**row, "delta": values["target_delta"], "parameter": values["parameter"], "value": values["value"],
                "target_epsilon": values["target_epsilon"], **fixed}
    segments = values["segments"]
    one = segments[0] if len(segments) == 1 else {}
    return {**row, "delta": values["delta"], "steps": sum(item["steps"] for item in segments),
            "sample_rate": one.get("sample_rate"), "noise_multiplier": one.get("noise_multiplier")}


def downloads(stem: str, task: str, answers: dict[str, Report], curve: pd.DataFrame | None = None,
              model: dict | None = None) -> None:
    """JSON and CSV downloads of what the page computed: each answer (its accountant, guarantee, sampling,
    neighbouring relation, δ and statement) and the ε-against-steps curve drawn, if any."""
    curve_rows = [] if curve is None else curve.to_dict("records")
    document = {"task": task, **{role: answer.to_dict() for role, answer in answers.items()},
                **({"curve": curve_rows, "curve_model": model} if curve is not None else {})}
    rows = [answer_row(role, answer) for role, answer in answers.items()]
    rows += [{**(model or {}), **row} for row in curve_rows]
    left, right = st.columns(2)  # the texts are made on a click only (deferred downloads)
    left.download_button("Download JSON", lambda: json.dumps(document, indent=2, default=list),
                         file_name=f"{stem}.json", mime="application/json")
    right.download_button("Download CSV", lambda: pd.DataFrame(rows, columns=list(CSV_COLUMNS)).to_csv(index=False),
                          file_name=f"{stem}.csv", mime="text/csv")


def shown_epsilon(value: float) -> str:
    """ε rounded up (:func:`epsilon_text`) to 5 significant digits from 1 on, at most 4 decimals (5.1927, 15.783,
    15838), and to 4 significant digits below 1 (0.2668, 0.0002283: never a bare 0.0001)."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(value))
    return epsilon_text(value, max(0, 4 - magnitude) if magnitude >= 0 else 3 - magnitude)


def epsilon_answer(tight: Report, rdp: Report | None) -> dict[str, Report]:
    """Show ε of a schedule: the headline by its accountant, RDP beside a PLD answer with how far above it lies,
    and plain words for ε = 0 and for a fallback to RDP. Returns the answers shown, by role (for the exports)."""
    metrics = st.columns(3)
    metrics[0].metric(f"ε ({accountant_name(tight)})", shown_epsilon(tight["epsilon"]))
    compared = rdp if rdp is not None and tight["accountant"] == "pld" else None
    if compared is not None:
        metrics[1].metric(f"ε ({accountant_name(compared)})", shown_epsilon(compared["epsilon"]))
        if tight["epsilon"] > 0:
            gap = 100 * (compared["epsilon"] / tight["epsilon"] - 1)
            label = ("RDP below PLD by" if gap < 0 else
                     "RDP overstates ε by" if tight["bound"] == "tight" else "RDP above PLD by")
            metrics[2].metric(label, f"{abs(gap):.3g} %",
                              help=f"the RDP upper bound is {abs(gap):.3g} % {'below' if gap < 0 else 'above'} the "
                                   f"{accountant_name(tight)} ε of the same schedule")
    elif rdp is None and tight["accountant"] == "pld":
        metrics[1].caption("No RDP bound is implemented for this sampling: PLD only.")
    if tight["epsilon"] == 0:
        st.info(f"ε = 0 at δ = {tight['delta']:g}: "
                + ("a record is used at all with probability at most δ, so the run reveals nothing except with "
                   "probability δ (the participation bound)." if tight["accountant"] == "participation" else
                   f"the {accountant_name(tight)} accountant certifies (0, δ)-DP; all the privacy loss is in δ."))
    if tight["fallback_reason"]:
        st.warning(f"{tight['fallback_reason']}. The tight PLD ε was not computed: the number shown is the RDP "
                   "upper bound, at least the tight ε.")
    st.caption(literal(tight.statement))
    return {"answer": tight, **({"comparison": compared} if compared is not None else {})}


def epsilon_answers(form: Form, request: Epsilon) -> tuple[tuple[Report, Report | None] | None, bool]:
    """The request's answer and, where the run has an RDP bound, RDP's, each computed in the background (a
    progress line while they run); None after showing why not, and whether they are still being computed."""
    second = fast_accountant(request)
    tight = answer_in_background(form, request, "Accounting (PLD)", role="tight")
    rdp = answer_in_background(form, replace(request, accountant=second), "Accounting (RDP)", role="rdp") \
        if second and tight.report is not None else None
    found = tight.report is not None and (rdp is None or rdp.report is not None)
    pending = tight.pending or (rdp is not None and rdp.pending)
    return ((tight.report, None if rdp is None else rdp.report) if found else None), pending


def earlier_epsilon_answers(request: Epsilon) -> tuple[Report, Report | None]:
    second = fast_accountant(request)
    return earlier_answer(request), (earlier_answer(replace(request, accountant=second)) if second else None)


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
    found, pending = (None, False)
    if request is not None:
        with right:
            found, pending = epsilon_answers(form, request)
    found, request = kept_answer("accountant_epsilon", found, request, pending=pending, where=right,
                                 earlier=earlier_epsilon_answers)
    if found is None:
        return
    tight, rdp = found
    with right:
        answers = epsilon_answer(tight, rdp)
        curve, refused, spec = epsilon_curve(request, tight, with_points=show_curve)
        show_chart(spec)
        if refused:
            st.caption("No tight ε at " + "; ".join(refused))
        downloads("epsilon", "epsilon", answers, curve,
                  {"delta": request.delta, "sample_rate": request.sample_rate,
                   "noise_multiplier": request.noise_multiplier, **model_fields(tight.values)})


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
    second = request and fast_accountant(request)
    with right, st.spinner("Accounting the schedule…"):
        tight = form.answer(request)
        rdp = form.answer(replace(request, accountant=second)) if second else None
    if tight is None or (second and rdp is None):
        return
    with right:
        downloads("schedule_epsilon", "epsilon of a schedule file", epsilon_answer(tight, rdp))


def calibrated_text(parameter: str, value: float) -> str:
    """A calibrated value as the page shows it: steps whole and in full (never 1.23457e+06), σ and q with the 6
    significant digits the calibration rounded them to (σ up, q down: the value shown meets the target)."""
    return str(int(value)) if parameter == "steps" else f"{value:.6g}"


def reachable_target(message: str) -> tuple[str, str] | None:
    """For a refusal of an unreachable target ε: the nearest target that can be met, the ε reached at the end of
    the parameter's range rounded up to 3 significant digits (as the target box shows it), and why; else None."""
    found = UNREACHABLE.match(message)
    if found is None:
        return None
    parameter, end, reached = found.group(1), found.group(2), float(found.group(3))
    digits = 2 - math.floor(math.log10(reached)) if reached > 0 else 0
    target = math.ceil(reached * 10**digits * (1 + 1e-9)) / 10**digits
    return f"{target:.{max(digits, 0)}f}", f"{NAMES[parameter]} = {end}, the end of its range, reaches ε = {reached:g}"


def calibration_page() -> None:
    left, right = st.columns([1, 2])
    with left:
        parameter = st.radio("Solve for", list(CALIBRATIONS), horizontal=True, format_func=NAMES.get)
        form = Form(CALIBRATIONS[parameter], labels={parameter: NAMES[parameter]})
        form.field("target_epsilon", "Target ε", default="2", key=TARGET_KEY)
        form.field("target_delta", "Target δ", default="1e-5")
        for name, label, default in SCHEDULE_FIELDS:
            if name != parameter:
                form.field(name, label, default=default)
        sampling_fields(form)
        request = form.build(time_budget=TIME_BUDGET)
    with right:
        computed = answer_in_background(form, request, "Calibrating (RDP bracket, then PLD)")
    failure = computed.failure
    if failure is not None:
        nearest = reachable_target(failure)
        if nearest is not None:
            right.write(f"No {NAMES[parameter]} meets this target. The nearest target that can be met: "
                        f"ε = {nearest[0]} ({nearest[1]}).")
            right.button(f"Set target ε to {nearest[0]}", on_click=st.session_state.__setitem__,
                         args=(TARGET_KEY, nearest[0]))
    answer, request = kept_answer(f"accountant_calibrate_{parameter}", computed.report, request,
                                  pending=computed.pending, where=right)
    if answer is None:
        return
    with right:
        first, second, third = st.columns(3)
        symbol = SYMBOLS[parameter]
        first.metric(f"{symbol} ({accountant_name(answer)})", calibrated_text(parameter, answer["value"]),
                     help=f"{NAMES[parameter]}, calibrated by the {accountant_name(answer)} accountant")
        second.metric(f"ε reached ({accountant_name(answer)})", shown_epsilon(answer["epsilon"]),
                      help=f"target ε = {answer['target_epsilon']:g} at δ = {answer['target_delta']:g}")
        if answer["rdp_value"] is not None and answer["accountant"] == "pld":
            third.metric(f"{symbol} (RDP upper bound)", calibrated_text(parameter, answer["rdp_value"]),
                         help=f"{NAMES[parameter]} the RDP upper bound calibrates (a more cautious value)")
        st.caption(literal(answer.statement))
        if answer["fallback_reason"]:
            st.warning(answer["fallback_reason"])
        if answer["range_note"]:
            st.info(answer["range_note"])
        elif parameter == "steps" and answer["value"] == 1:
            st.info(f"Only 1 step meets the target: a second step would spend more than ε = "
                    f"{answer['target_epsilon']:g}. Raise the target ε or the noise multiplier σ, or lower the sample "
                    "rate q, to train for more steps.")
        elif answer["epsilon"] < answer["target_epsilon"] / 2:
            st.info(f"The ε reached ({shown_epsilon(answer['epsilon'])}) is far below the target "
                    f"{answer['target_epsilon']:g}: by the {accountant_name(answer)} accountant, ε jumps past the "
                    f"target just beyond {symbol} = {calibrated_text(parameter, answer['value'])}, so this is the "
                    "best value it certifies.")
        downloads(f"calibrate_{parameter}", f"calibrate {parameter}", {"answer": answer})


def main() -> None:
    st.title("Privacy accountant")
    st.write(ASSUMPTIONS)
    tasks = {"ε of a schedule": epsilon_page, "ε of a schedule file": schedule_file_page,
             "Calibrate a parameter": calibration_page}
    task = st.radio("Task", list(tasks), horizontal=True)
    st.fragment(tasks[task])()  # a fragment: a box of the task reruns the task alone, not the title and assumptions


main()
