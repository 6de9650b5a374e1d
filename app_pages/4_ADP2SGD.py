"""Xu et al. A(DP)²SGD: ε against Xu's z (noise_to_sensitivity) with Theorem 2's feasibility band, and the noise
for a target ε.

The page builds the :class:`~fedplan.planner.tasks.adp2sgd.MinEpsilon` request of ``fedplan adp2sgd min-epsilon``
and the :class:`~fedplan.planner.tasks.adp2sgd.Sigma` request of ``fedplan adp2sgd sigma`` from its widgets
(:mod:`fedplan.app_pages.widgets`) and shows their reports; the chart is
:func:`fedplan.planner.adp2sgd.epsilon_against_noise` of the same setting. Downloads: the target's schedule (JSON,
CSV) and the chart's points (CSV).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import re

import pandas as pd
import streamlit as st

from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.markdown_elements import show_formula
from fedplan.app_pages.widgets import Form, report, theorem_metric
from fedplan.bounds import adp2sgd as xu
from fedplan.planner.adp2sgd import epsilon_against_noise
from fedplan.planner.display import NO_GUARANTEE, accountant_label, epsilon_text
from fedplan.planner.export import render
from fedplan.planner.tasks.adp2sgd import MinEpsilon, Sigma

st.set_page_config(page_title="fedplan: A(DP)²SGD", layout="wide")

CURVE_POINTS = 24
TARGET_KEY, BATCH_KEY = "adp2sgd-target-epsilon", "adp2sgd-batch-size"
#: The tight accountant of the same model is an RDP bound (never called "tight" on a page).
RDP_LABEL = accountant_label("rdp", "upper bound")
CERTIFIED = "Theorem 2 at z (certified: inside the band)"
UNCERTIFIED = f"Theorem 2's formula at z ({NO_GUARANTEE}: outside the band)"
TIGHT = f"{RDP_LABEL} (WBK'19 Thm 27), same sampling, replace-one"
Z_TITLE = "Xu's z = noise std / (2G/B)"
#: The column of z in the chart's data: a plain name, as Vega reads ``'``, ``.`` and ``[`` in a field name as a path
#: into the row (with the title as the field, Chromium's Vega stopped at "Access path missing closing quote" and the
#: chart was left empty).
Z_FIELD = "z"
SETTING_FIELDS = ("workers", "examples_per_worker", "batch_size", "steps")
#: The largest z :func:`fedplan.bounds.adp2sgd.tight_noise_to_sensitivity` searches.
MAX_SEARCHED_NOISE = 1e4
#: A checked condition ``value relation bound`` (:func:`fedplan.bounds.theorem.hypothesis`'s detail), and what a
#: failed one's numbers give instead.
CHECKED = re.compile(r"^(\S+) (<=|>=|<|>) (\S+)$")
NEGATED = {">=": "<", "<=": ">", "<": "≥", ">": "≤"}


def setting_inputs() -> tuple[Form, MinEpsilon | None, Form, Sigma | None]:
    """The setting's widgets (MinEpsilon) and, under them, the target ε's (Sigma of the same setting)."""
    form = Form(MinEpsilon)
    form.field("workers", "Workers K", default="16")
    form.field("examples_per_worker", "Examples per worker n", default="3125")
    form.field("batch_size", "Batch size B", default="256", key=BATCH_KEY)
    form.field("steps", "Iterations T", default="58594")
    form.field("delta", "δ", default="1e-5")
    request = form.build()
    target_form = Form(Sigma)
    target_form.field("target_epsilon", "Target ε (the noise it needs is shown on the right)", default="10",
                      key=TARGET_KEY)
    target = None if request is None else target_form.build(
        **{name: getattr(request, name) for name in SETTING_FIELDS}, target_delta=request.delta)
    return form, request, target_form, target


@st.cache_data(show_spinner="Theorem 2 and the RDP bound along the curve", max_entries=16)
def epsilon_curve(fields: tuple, _request: MinEpsilon) -> pd.DataFrame:
    """The chart's points (cached on the setting): one row per (z, answer); ``part`` splits Theorem 2's uncertified
    points into the stretch below the band and the one above it (two lines, none drawn across the band)."""
    setting = _request.setting()
    low, _ = xu.noise_band(setting=setting)

    def paper(row: dict) -> dict:
        if row["paper_guarantee"] != NO_GUARANTEE:
            return {"answer": CERTIFIED, "part": ""}
        return {"answer": UNCERTIFIED, "part": "below" if row["noise_to_sensitivity"] < low else "above"}

    rows = epsilon_against_noise(setting=setting, points=CURVE_POINTS)
    return pd.DataFrame(
        [{Z_FIELD: row["noise_to_sensitivity"], "ε": row["paper_epsilon"], **paper(row)} for row in rows]
        + [{Z_FIELD: row["noise_to_sensitivity"], "ε": row["tight_epsilon"], "answer": TIGHT, "part": ""}
           for row in rows])


def band_chart(band: tuple[float, float], floor: float, target_z: float | None, frame: pd.DataFrame) -> dict:
    """The chart's Vega-Lite spec: the band shaded, Theorem 2's and the RDP bound's lines, Theorem 2's least ε
    (dashed) and the target's z (grey). Written as a plain dict with named data sets (Streamlit sends them as
    Arrow): Altair took 0.1–0.35 s per setting to build the same layered spec, this takes under a millisecond."""
    z_axis = {"field": Z_FIELD, "type": "quantitative", "title": Z_TITLE, "scale": {"type": "log"}}
    order = [CERTIFIED, UNCERTIFIED, TIGHT]
    layers = [
        {"data": {"name": "band"}, "mark": {"type": "rect", "opacity": 0.12},
         "encoding": {"x": {"field": "low", "type": "quantitative", "title": Z_TITLE}, "x2": {"field": "high"}}},
        {"data": {"name": "curves"}, "mark": {"type": "line", "point": True},
         "encoding": {
             "x": z_axis,
             "y": {"field": "ε", "type": "quantitative", "title": "ε at δ (log)", "scale": {"type": "log"}},
             "color": {"field": "answer", "type": "nominal", "sort": order,
                       "legend": {"orient": "bottom", "direction": "vertical", "title": None, "labelLimit": 0}},
             "strokeDash": {"field": "answer", "type": "nominal", "sort": order, "legend": None},
             "detail": {"field": "part", "type": "nominal"},
             "tooltip": [{"field": Z_FIELD, "type": "quantitative", "title": Z_TITLE},
                         {"field": "ε", "type": "quantitative"}, {"field": "answer", "type": "nominal"}]}},
        {"data": {"name": "floor"}, "mark": {"type": "rule", "strokeDash": [4, 4]},
         "encoding": {"y": {"field": "ε", "type": "quantitative"}}},
    ]
    datasets = {"band": pd.DataFrame({"low": [band[0]], "high": [band[1]]}), "curves": frame,
                "floor": pd.DataFrame({"ε": [floor]})}
    if target_z is not None:
        layers.append({"data": {"name": "target"}, "mark": {"type": "rule", "color": "gray"},
                       "encoding": {"x": z_axis}})
        datasets["target"] = pd.DataFrame({Z_FIELD: [target_z]})
    return {"height": 380, "datasets": datasets, "layer": layers,
            "title": {"text": "Theorem 2 certifies only inside the shaded band",
                      "subtitle": "dashed line: its smallest ε; grey rule: the noise chosen for the target ε"}}


@st.cache_data(show_spinner=False, max_entries=16)
def curve_csv(fields: tuple, _frame: pd.DataFrame) -> str:
    """The chart's points, one row per z: Theorem 2's ε at z with its verdict, and the RDP bound (cached on the
    setting)."""
    by_z: dict[float, dict] = {}
    for z, epsilon, answer in _frame[[Z_FIELD, "ε", "answer"]].itertuples(index=False):
        row = by_z.setdefault(z, {"noise_to_sensitivity": z, "theorem2_epsilon": "", "theorem2_guarantee": "",
                                  "rdp_upper_bound_epsilon": ""})
        if answer == TIGHT:
            row["rdp_upper_bound_epsilon"] = epsilon
        else:
            row["theorem2_epsilon"], row["theorem2_guarantee"] = epsilon, \
                "guarantee" if answer == CERTIFIED else NO_GUARANTEE
    buffer = io.StringIO()
    buffer.write(f"# A(DP)2SGD, epsilon against Xu's z; RDP bound: {xu.PAPER_SAMPLING}; replace-one neighbours\n")
    writer = csv.DictWriter(buffer, fieldnames=list(next(iter(by_z.values()))), lineterminator="\n")
    writer.writeheader()
    writer.writerows(by_z[z] for z in sorted(by_z))
    return buffer.getvalue()


@st.cache_data(show_spinner=False, max_entries=16)
def schedule_texts(fields: tuple, _request: Sigma) -> tuple[str, str]:
    """The target plan's schedule as JSON and CSV (cached on the request: its privacy block runs an accountant)."""
    schedule = report(_request).result.schedule()
    return render(schedule, "json"), render(schedule, "csv")


def zero_epsilon_note(epsilon: float, setting: xu.Setting) -> None:
    """Plain words under an ε of 0 (the RDP bound proves (0, δ)-DP)."""
    if epsilon == 0:
        st.caption(f"ε = 0: the {RDP_LABEL} proves (0, δ = {setting.delta:g})-DP here. Each record is sampled at "
                   f"rate γ = B/(K n) = {setting.gamma:.3g} per iteration, so δ alone covers the whole run; a smaller "
                   "δ gives a positive ε.")


def floor_metrics(floor: dict, setting: xu.Setting) -> None:
    band = tuple(floor["noise_band"])
    columns = st.columns(3)
    theorem_metric(columns[0], "Least ε, Theorem 2", epsilon_text(floor["floor_epsilon"]), floor["hypotheses"],
                   help=f"the smallest ε Theorem 2 certifies here, at z = {floor['floor_noise_to_sensitivity']:.5g}")
    columns[1].metric("Noise band (z)", f"[{band[0]:.4g}, {band[1]:.4g})",
                      help="Theorem 2 certifies a noise level z only inside [√1.5, √(1/(eγ) − 1)), γ = B/(K n)")
    columns[2].metric(f"ε ({RDP_LABEL})", epsilon_text(floor["tight_epsilon"]),
                      help=f"at the same z = {floor['floor_noise_to_sensitivity']:.5g}; {floor['tight_sampling']}")
    zero_epsilon_note(floor["tight_epsilon"], setting)


def failed_conditions(hypotheses) -> str:
    """The conditions of Theorem 2 (xu L171-175, Lemma 2) that fail, each with the numbers that break it: "target
    epsilon >= the smallest epsilon Theorem 2 certifies (floor) fails: 10 < 16.3518" (the check's own detail,
    "10 >= 16.3518", read as if it held; a detail that says what failed, "undefined: C1 <= 0", as it is)."""
    failed = []
    for item in hypotheses:
        if item.holds:
            continue
        checked = CHECKED.match(item.detail)
        numbers = f"{checked.group(1)} {NEGATED[checked.group(2)]} {checked.group(3)}" if checked else item.detail
        failed.append(f"{item.name} fails: {numbers}")
    return "; ".join(failed)


def target_section(answer, floor: dict | None) -> float | None:
    """The noise for the target ε: Theorem 2's and the RDP bound's, with plain words where Theorem 2 cannot; returns
    the chosen z (for the chart)."""
    plan = answer.result
    target = answer["target_epsilon"]
    st.subheader(f"Noise for a target ε = {target:g} at δ = {plan.setting.delta:g}")
    paper = plan.paper_noise
    columns = st.columns(3)
    columns[0].metric("z, Theorem 2",
                      epsilon_text(paper.noise_to_sensitivity) if paper.feasible else "none certified",
                      help="the least z (noise_to_sensitivity) over μ, rounded up (more noise never costs privacy)")
    columns[1].metric(f"z, {RDP_LABEL}", epsilon_text(answer["tight_noise_to_sensitivity"]),
                      help=f"least z with ε ≤ target: {answer['tight_accountant']}; {answer['tight_sampling']}")
    columns[2].metric(f"ε at z ({RDP_LABEL})", epsilon_text(answer["tight_epsilon"]),
                      help=f"at the chosen z: {answer['noise_source']}")
    zero_epsilon_note(answer["tight_epsilon"], plan.setting)
    if not paper.feasible:
        st.warning(f"Theorem 2 certifies no noise for ε = {target:g}: {failed_conditions(paper.hypotheses)}. The "
                   f"noise shown is the {RDP_LABEL}'s.")
        if floor is not None:
            nearest = epsilon_text(floor["floor_epsilon"])
            st.button(f"Set the target ε to {nearest}, the smallest Theorem 2 certifies",
                      on_click=st.session_state.__setitem__, args=(TARGET_KEY, nearest))
    elif paper.noise_to_sensitivity**2 <= xu.MIN_NOISE_SQUARED * (1 + xu.RELATIVE_SLACK):
        st.info(f"Theorem 2's least noise is the band's bottom z = √1.5 (Lemma 2's z² ≥ 1.5 binds): at that noise it "
                f"certifies ε = {epsilon_text(answer['epsilon'])}, less than the target {target:g}; the "
                f"{RDP_LABEL} needs only z = {epsilon_text(answer['tight_noise_to_sensitivity'])}.")
    return plan.noise_to_sensitivity


def largest_certified_batch(request: MinEpsilon) -> None:
    """Where Theorem 2 certifies no noise level (γ = B/(K n) ≥ 1/(2.5e), xu L173, L508), the largest batch size that
    opens its band, one click away."""
    largest = math.ceil(request.workers * request.examples_per_worker / (2.5 * math.e)) - 1
    while largest >= 1:
        try:
            xu.noise_band(setting=dataclasses.replace(request, batch_size=largest).setting())
        except ValueError:  # at the rounding edge: one less
            largest -= 1
            continue
        st.button(f"Set batch size B to {largest}, the largest Theorem 2 certifies any noise for",
                  on_click=st.session_state.__setitem__, args=(BATCH_KEY, str(largest)))
        return


def reachable_target(target: Sigma) -> None:
    """Under a target no noise reaches (the RDP search stops at z = 1e4), the smallest target it reaches, one click
    away."""
    reach = xu.tight_epsilon(setting=target.setting(), noise_to_sensitivity=MAX_SEARCHED_NOISE).epsilon
    if target.target_epsilon >= reach:
        return
    nearest = epsilon_text(reach)
    st.button(f"Set the target ε to {nearest}, the smallest the {RDP_LABEL} reaches with z ≤ {MAX_SEARCHED_NOISE:g}",
              on_click=st.session_state.__setitem__, args=(TARGET_KEY, nearest))


def main() -> None:
    st.title("A(DP)²SGD (Xu et al.): closed-form privacy and its feasibility band")
    show_formula("σ² = 20·G²·T·α / (K²·n₍₁₎²·μ·ε),  α = log(1/δ) / ((1−μ)·ε) + 1", "Theorem 2, xu L171-175")
    left, right = st.columns([1, 2])
    with left:
        form, request, target_form, target = setting_inputs()
    with right:
        floor = form.answer(request)
        if floor is not None:
            floor_metrics(floor, request.setting())
        elif request is not None:
            largest_certified_batch(request)
        answer = target_form.answer(target)
        target_z = None if answer is None else target_section(answer, floor)
        if answer is None and target is not None:
            reachable_target(target)
        if floor is not None:
            fields = tuple(request.inputs().items())
            frame = epsilon_curve(fields, request)
            show_chart(band_chart(tuple(floor["noise_band"]), floor["floor_epsilon"], target_z, frame))
        columns = st.columns(3)
        if answer is not None:  # written when clicked: the schedule's privacy block runs an accountant
            key = tuple(target.inputs().items())
            for column, (index, name) in zip(columns, ((0, "JSON"), (1, "CSV")), strict=False):
                column.download_button(f"Schedule {name} (target ε)", lambda i=index: schedule_texts(key, target)[i],
                                       file_name=f"adp2sgd_schedule.{name.lower()}", on_click="ignore")
        if floor is not None:
            columns[2].download_button("Chart points CSV", curve_csv(fields, frame),
                                       file_name="adp2sgd_epsilon_vs_z.csv")
        st.caption("Noise on each worker's averaged minibatch gradient, std 2Gz/B; replace-one neighbours; "
                   "worker choice plus minibatch modelled as one sampling without replacement at rate "
                   "B/(K n₍₁₎), as the paper does (xu L520). The schedule exports one worker's updates "
                   "(its records' exposure) with the PLD upper bound of that per-worker schedule.")
        for shown in (floor, answer):
            if shown is not None:
                st.caption(shown.statement)


main()
