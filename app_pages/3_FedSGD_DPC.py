"""Zhou et al. (FedSGD-DPC): T* and b* for the Laplace mechanism, with U(T, b) and the optimum.

The page builds the :class:`~fedplan.planner.tasks.fedsgd_dpc.FedsgdDpcOptimum` request of ``fedplan fedsgd-dpc
optimum`` (Laplace, raw constants) from its widgets (:mod:`fedplan.app_pages.widgets`) and shows its report; the heat
map is :func:`fedplan.planner.fedsgd_dpc.laplace_landscape` of the same problem.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.markdown_elements import show_formula, show_table
from fedplan.app_pages.widgets import Form, form_page, literal, theorem_metric
from fedplan.planner.display import number_text
from fedplan.planner.export import render
from fedplan.planner.fedsgd_dpc import (
    LARGEST_USEFUL_EPSILON,
    landscape_clients,
    laplace_landscape,
    smallest_epsilon_to_train,
)
from fedplan.planner.tasks.fedsgd_dpc import FedsgdDpcOptimum

st.set_page_config(page_title="fedplan: FedSGD-DPC", layout="wide")

#: Raw constants with the defaults of the CLI example (README): (request field, label, default).
FIELDS = (
    ("clients", "Clients N (up to 10 000 here)", "10"),
    ("client_size", "Records per client d_i (one for all, or one per client: 6000, 3000, …)", "6000"),
    ("model_dim", "Model dimension p", "7850"), ("strong_convexity", "Strong convexity μ", "10"),
    ("smoothness", "Smoothness λ", "20"), ("gradient_bound", "Gradient bound G", "1"),
    ("heterogeneity", "Non-iid degree Γ", "0"), ("initial_distance", "‖θ₀ − θ*‖² (Y₀)", "1"),
    ("target_epsilon", "ε of every client (Laplace, pure)", "0.05"), ("clipping_norm", "L1 clipping norm ξ₁", "1"),
)
LABELS = {name: label for name, label, _ in FIELDS}
#: The session-state key of the ε box (the "raise ε" button sets it).
EPSILON_KEY = "fedsgd_target_epsilon"
#: The page's own cap on N: the exact optimum searches every b = 1..N (1 s at N = 10⁴, 40 s at 10⁵); the CLI and the
#: API take up to 10⁷.
MAX_PAGE_CLIENTS = 10_000
#: Rounds and clients per round drawn in the heat map (at most), and the labels on each of its axes (at most).
MAP_ROUNDS, MAP_CLIENTS, MAP_TICKS = 60, 40, 7


def inputs() -> tuple[Form, FedsgdDpcOptimum | None]:
    form = Form(FedsgdDpcOptimum)
    for name, label, default in FIELDS:
        form.field(name, label, default=default, key=EPSILON_KEY if name == "target_epsilon" else None,
                   limit=(2, MAX_PAGE_CLIENTS) if name == "clients" else None)
    form.field("variant", "Variant")
    form.field("fixed_clients_per_round", "Fixed clients per round b (optional: optimise T only)")
    form.field("fixed_rounds", "Fixed rounds T (optional: optimise b only)")
    return form, form.build(mechanism="laplace")


@st.cache_data(show_spinner=False, max_entries=32)
def landscape(fields: tuple, optimal_rounds: int, clients_per_round: int, _request: FedsgdDpcOptimum) -> dict:
    """The Vega-Lite spec of the heat map of U(T, b) on T in [0, max(3T*, 10)] in round steps (and T*) and on
    b = 1..N (a geometric spread with b* and the powers of ten when N > 40), with a few round labels per axis: built
    and validated once per request, not on every rerun."""
    top = max(3 * optimal_rounds, 10)
    step = nice_step(top, MAP_ROUNDS - 1)
    rounds = np.unique(np.append(np.arange(0, top + 1, step), optimal_rounds))
    clients = landscape_clients(num_clients=_request.clients, marked=clients_per_round, points=MAP_CLIENTS)
    if _request.clients <= MAP_CLIENTS:
        client_ticks = linear_ticks(clients, 1)
    else:  # a geometric spread (1, 2, 3, 5, … N): labelled at the powers of ten, drawn as cells too, and N
        client_ticks = [10**power for power in range(math.ceil(math.log10(_request.clients)))] + [_request.clients]
        clients = sorted({*clients, *client_ticks})
    cells = laplace_landscape(problem=_request.raw_problem(), epsilon=_request.target_epsilon,
                              clipping_norm=_request.clipping_norm, rounds=rounds, clients_per_round=clients,
                              variant=_request.variant)
    ticks = (linear_ticks(rounds, step), client_ticks)
    return landscape_chart(cells, optimal_rounds, clients_per_round, ticks)


@st.cache_data(show_spinner=False, max_entries=32)
def epsilon_to_train(fields: tuple, _request: FedsgdDpcOptimum) -> float | None:
    """The smallest ε (3 digits, rounded up) with T* ≥ 1 for this problem, or None if no ε gives a round."""
    return smallest_epsilon_to_train(problem=_request.raw_problem(), clipping_norm=_request.clipping_norm,
                                     epsilon=_request.target_epsilon, fix_b=_request.fixed_clients_per_round,
                                     variant=_request.variant)


@st.cache_data(show_spinner=False, max_entries=32)
def exports(fields: tuple, _plan) -> dict[str, str]:
    """The schedule (T* rounds of b* clients, one change-point) as JSON and CSV."""
    schedule = _plan.schedule()
    return {fmt: render(schedule, fmt) for fmt in ("json", "csv")}


def nice_step(span: float, count: int) -> int:
    """The smallest whole 1, 2 or 5 × 10^k at least ``span / count``: a grid or tick step people read."""
    raw = max(span / count, 1)
    power = 10 ** math.floor(math.log10(raw))
    return int(next(factor * power for factor in (1, 2, 5, 10) if factor * power >= raw))


def linear_ticks(values, step: int, most: int = MAP_TICKS) -> list[int]:
    """The labelled cells of an evenly spaced axis (multiples of ``step``): the first value and the multiples of a
    round tick (a multiple of ``step``), at most about ``most``: a label on each of 61 cells was unreadable."""
    ordered = sorted({int(value) for value in values})
    tick = math.lcm(nice_step(ordered[-1] - ordered[0], most - 1), step)
    return [value for value in ordered if value == ordered[0] or value % tick == 0]


def landscape_chart(cells: list[dict], rounds: int, clients_per_round: int,
                    ticks: tuple[list[int], list[int]]) -> dict:
    """The heat map of U(T, b), log colour scale, with the answer in red; ``ticks``: the T and the b labelled. A plain
    Vega-Lite dict with its data sets as frames: Altair's build, validation and rows-to-records took 50 ms of each
    new answer (profiled), and :func:`~fedplan.app_pages.charts.main_data` reads a frame without converting it."""
    heat = {"data": {"name": "cells"}, "mark": {"type": "rect"}, "encoding": {
        "x": {"field": "T", "type": "ordinal", "title": "rounds T",
              "axis": {"values": ticks[0], "labelAngle": 0, "labelOverlap": False}},
        "y": {"field": "b", "type": "ordinal", "title": "clients per round b", "sort": "descending",
              "axis": {"values": ticks[1], "labelOverlap": False}},  # few labels: none dropped (b = 10 was)
        "color": {"field": "log10_U", "type": "quantitative", "title": "log₁₀ U", "scale": {"scheme": "viridis"}},
        "tooltip": [{"field": "T", "type": "quantitative"}, {"field": "b", "type": "quantitative"},
                    {"field": "U", "type": "quantitative", "format": ".5g"}]}}
    star = {"data": {"name": "answer"}, "mark": {"type": "point", "shape": "diamond", "size": 200, "filled": True,
                                                  "color": "red"},
            "encoding": {"x": {"field": "T", "type": "ordinal"}, "y": {"field": "b", "type": "ordinal"}}}
    frame = pd.DataFrame(cells)
    datasets = {"cells": frame.assign(log10_U=np.log10(frame["U"])),
                "answer": pd.DataFrame([{"T": rounds, "b": clients_per_round}])}
    return {"height": 300, "title": "U(T, b) with the answer (T*, b*) in red", "datasets": datasets,
            "layer": [heat, star]}


def explain_no_training(request: FedsgdDpcOptimum, bound: float) -> None:
    """T* = 0 in plain words, and the smallest ε that trains, one click away."""
    fixed = ("" if request.fixed_clients_per_round is None
             else f" with b fixed at {request.fixed_clients_per_round} clients per round")
    with st.spinner("Searching the smallest ε that trains…"):
        smallest = epsilon_to_train(tuple(request.inputs().items()), request)
    head = (f"**T\\* = 0: do not train.** At ε = {request.target_epsilon:g} per client{fixed}, the Laplace noise of "
            f"a single reply already makes Zhou et al.'s bound worse than that of the initial model "
            f"(U = {number_text(bound)}), so the best plan runs no round and there is no schedule to export.")
    if smallest is None:
        st.warning(f"{head} No ε up to {LARGEST_USEFUL_EPSILON:g} gives a round: the initial model is already at "
                   f"the bound's minimum. Change **{LABELS['initial_distance']}** or "
                   f"**{LABELS['heterogeneity']}** if they are not what you meant.")
        return
    st.warning(f"{head} Raise **{LABELS['target_epsilon']}** to at least {smallest:g} for one round or more "
               "(a larger ε gives more rounds).")
    st.button(f"Set ε = {smallest:g}", on_click=st.session_state.__setitem__, args=(EPSILON_KEY, f"{smallest:g}"))


def regime_text(regime: dict) -> str:
    """The regime of the continuous optimum in words (zhou L358-367, erratum Z-4), its markdown escaped."""
    critical = regime["critical_epsilon"]
    where = {"b*=1": ("one client per round", "above"), "b*=N": ("every client in every round", "below")}
    if regime["regime"] not in where:
        return f"Regime: **knife-edge** (ε is the critical ε = {critical:.4g}: every b along bT = √(C₁/C₂) is optimal)."
    words, side = where[regime["regime"]]
    return (f"Regime: **{literal(regime['regime'])}**, {words}: ε is {side} the critical ε = {critical:.4g} "
            "(zhou L364, erratum Z-4).")


def main() -> None:
    st.title("Optimal rounds and replies (Zhou et al., FedSGD-DPC)")
    show_formula("U(T, b) = (C₁/b + C₂·b·T² + C₃) / (T + γ)", "zhou L354")
    show_formula("T*(b) = √(γ² + (A₁ + γ·Y₀)/A₂) − γ,  b*(T) = √(C₁/C₂) / T", "Eq. 6, L322; L336")
    report, right, request = form_page(inputs, spinner="Searching the integer optimum…", keep="fedsgd_last_valid")
    if report is None:
        return
    plan, summary = report.result, report.values
    rounds, clients_per_round = int(plan.choice.rounds), plan.choice.clients_per_round
    fields = tuple(request.inputs().items())
    with right:
        columns = st.columns(4)
        columns[0].metric("T* (rounds)", number_text(rounds, 12))
        columns[1].metric("b* (clients/round)", f"{summary['b_star']}")
        theorem_metric(columns[2], "Bound U(T*, b*)", number_text(summary["bound"], up=True), summary["hypotheses"])
        label, beside = (("Exact optimum", summary["exact_optimum"]) if summary["variant"] == "paper"
                         else ("Paper rule", summary["paper_rule"]))
        columns[3].metric(label, f"({number_text(beside['T'], 12)}, {beside['b']})",
                          help=f"(T, b) of the {label.lower()}, U = {number_text(beside['bound'], up=True)}")
        if rounds == 0:
            explain_no_training(request, summary["bound"])
        else:
            st.caption(f"Privacy: every client's records are protected with pure ε ≤ "
                       f"{number_text(max(plan.noise['epsilon_guaranteed']), up=True)} (Laplace, basic composition "
                       f"over at most {max(plan.noise['max_replies'])} replies; no sampling: each reply uses the "
                       "client's full local data; neighbouring: replace, add or remove one record).")
        if rounds == 1:
            st.info(f"**One round only.** At ε = {request.target_epsilon:g} per client the noise allows a single round "
                    f"of {clients_per_round} clients before the bound gets worse; a larger "
                    f"**{LABELS['target_epsilon']}** gives more rounds.")
        st.markdown(regime_text(summary["regime"]))
        st.caption(literal(report.statement))
        show_chart(landscape(fields, rounds, clients_per_round, request))
        show_table(pd.DataFrame(summary["hypotheses"]))
        if rounds > 0:
            files = exports(fields, plan)
            json_column, csv_column = st.columns(2)
            json_column.download_button("Schedule JSON", files["json"], file_name="fedsgd_dpc.json")
            csv_column.download_button("Schedule CSV", files["csv"], file_name="fedsgd_dpc.csv")


main()
