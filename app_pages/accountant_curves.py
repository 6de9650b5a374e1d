"""The Accountant page's ε-against-steps curve, computed once per request (``st.cache_data``) in a module, not in
the page script, so that a re-render neither recomputes the curve nor re-hashes the cached functions' source.

This module is not a page (:mod:`fedplan.app` lists the pages); it holds no formula: the numbers are
:func:`fedplan.bounds.accounting.epsilon_curve` and the :class:`~fedplan.planner.tasks.accounting.Epsilon` request
at other step counts.
"""

from __future__ import annotations

from dataclasses import replace

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from fedplan.app_pages.widgets import report
from fedplan.bounds import accounting, sampling
from fedplan.planner.display import accountant_label
from fedplan.planner.tasks.accounting import Epsilon

#: A series' colour by its accountant's first word: PLD red, RDP blue, exact green, participation grey.
COLOURS = {"PLD": "#d62728", "RDP": "#1f77b4", "exact": "#2ca02c", "participation": "#7f7f7f"}
#: Step counts on the fast accountant's line (one-stage sampling; two-stage runs a request per point) and PLD points.
LINE_POINTS, TWO_STAGE_POINTS, PLD_POINTS = 120, 24, 6


def accountant_name(answer) -> str:
    """The accountant behind an answer by its guarantee (:func:`accountant_label`); the ``exact`` accountant of
    shuffling is exact for the Gaussian composition but credits no amplification by shuffling: an upper bound."""
    label = accountant_label(answer["accountant"], answer["bound"])
    return f"{label}, upper bound" if answer["accountant"] == "exact" and answer["bound"] != "tight" else label


def curve_grid(steps: int, count: int) -> list[int]:
    """``count`` step counts from 1 to 2T (at least 10), evenly on a log scale, with T itself."""
    return sorted({int(t) for t in np.geomspace(1, max(2 * steps, 10), count)} | {steps})


def has_fast_curve(request: Epsilon) -> bool:
    """Whether the run's sampling has an RDP bound or an exact profile to draw as a line."""
    found = sampling.MECHANISMS[(request.sampling, request.neighboring_relation)]
    return bool(found.rdp_method or found.exact_method)


def fast_line(request: Epsilon) -> pd.DataFrame:
    """The fast accountant's ε against steps (RDP, or exact for shuffle) of the request's run: one curve for
    one-stage sampling (:func:`accounting.epsilon_curve`); for two-stage sampling, which that curve does not know,
    the request itself with ``accountant="rdp"`` at fewer step counts. Each point named by its accountant."""
    if request.client_sample_rate is None:
        grid = curve_grid(request.steps, LINE_POINTS)
        values = accounting.epsilon_curve(sample_rate=request.sample_rate, noise_multiplier=request.noise_multiplier,
                                          steps=grid, delta=request.delta, sampling=request.sampling,
                                          neighboring_relation=request.neighboring_relation,
                                          dataset_size=request.dataset_size)
        exact = sampling.MECHANISMS[(request.sampling, request.neighboring_relation)].exact_method
        names = ["exact, upper bound" if exact else "RDP upper bound"] * len(grid)
        return pd.DataFrame({"steps": grid, "epsilon": values, "accountant": names})
    answers = [report(replace(request, accountant="rdp", steps=t)) for t in curve_grid(request.steps, TWO_STAGE_POINTS)]
    return pd.DataFrame({"steps": [sum(item["steps"] for item in answer["segments"]) for answer in answers],
                         "epsilon": [answer["epsilon"] for answer in answers],
                         "accountant": [accountant_name(answer) for answer in answers]})


def tight_points(request: Epsilon) -> tuple[pd.DataFrame, list[str]]:
    """The request's own (tight) accountant at a few step counts, each point named by the accountant that answered
    it (a PLD that fell back to RDP is an RDP point); and, for a step count with no answer, why."""
    rows, refused = [], []
    for steps in curve_grid(request.steps, PLD_POINTS):
        try:
            answer = report(replace(request, steps=steps))
        except ValueError as error:
            refused.append(f"{steps} steps: {error}")
            continue
        rows.append((steps, answer["epsilon"], accountant_name(answer)))
    return pd.DataFrame(rows, columns=["steps", "epsilon", "accountant"]), refused


def chart(request: Epsilon, curve: pd.DataFrame) -> dict:
    """The Vega-Lite spec of ε against steps: the line of the fast accountant (or of the tight points where there
    is none), the tight points, a dashed rule at the schedule's T; the legend names each accountant."""
    names = list(dict.fromkeys(curve["accountant"]))
    colour = alt.Color("accountant:N", title="accountant",
                       scale=alt.Scale(domain=names, range=[COLOURS[name.split(",")[0].split()[0]] for name in names]),
                       legend=alt.Legend(orient="bottom", labelLimit=400))
    x = alt.X("steps:Q", title="steps T (log scale)", scale=alt.Scale(type="log"))
    y = alt.Y("epsilon:Q", title=f"ε at δ = {request.delta:g}")
    line, dots = curve[curve["role"] == "line"], curve[curve["role"] == "point"]
    layers = [alt.Chart(line if len(line) else dots).mark_line().encode(x=x, y=y, color=colour)]
    if len(dots):
        layers.append(alt.Chart(dots).mark_point(filled=True, size=70).encode(x=x, y=y, color=colour))
    layers.append(alt.Chart(pd.DataFrame({"steps": [request.steps]})).mark_rule(strokeDash=[4, 4]).encode(
        x="steps:Q"))
    return alt.layer(*layers).properties(height=320).to_dict()


@st.cache_data(show_spinner="ε along the steps…", max_entries=64)
def _epsilon_curve(fields: tuple, tight_epsilon: float, tight_name: str, with_points: bool,
                   _request: Epsilon) -> tuple[pd.DataFrame, list[str], dict]:
    request = _request
    line = fast_line(request) if has_fast_curve(request) else None
    if with_points or line is None:
        dots, refused = tight_points(request)
    else:
        dots, refused = pd.DataFrame([(request.steps, tight_epsilon, tight_name)],
                                     columns=["steps", "epsilon", "accountant"]), []
    frames = ([] if line is None else [line.assign(role="line")]) + [dots.assign(role="point")]
    curve = pd.concat(frames, ignore_index=True)[["role", "steps", "epsilon", "accountant"]]
    return curve, refused, chart(request, curve)


def epsilon_curve(request: Epsilon, tight, *, with_points: bool) -> tuple[pd.DataFrame, list[str], dict]:
    """ε against steps for ``request`` whose own answer is ``tight`` (the point at T): the rows drawn (``role``
    line or point, steps, ε, accountant), why a step count has no tight point, and the chart's spec; cached on
    the request's fields, so a re-render costs a lookup. ``with_points`` adds the tight accountant at a few step
    counts (always, where the run has no fast curve)."""
    return _epsilon_curve(tuple(request.inputs().items()), tight["epsilon"], accountant_name(tight), with_points,
                          request)
