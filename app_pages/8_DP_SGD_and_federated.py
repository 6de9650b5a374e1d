"""DP-SGD and federated page: the two questions in practitioners' terms, answered by the tight accountant.

DP-SGD from (examples, batch size, epochs), as TF-Privacy's statement and Opacus's ``make_private`` take them, with a
per-example guarantee (and a per-user one by group privacy); client-level federated learning from (clients, clients
per round, rounds), as Flower's DP strategy takes them, with a per-client guarantee. Thin over
:mod:`fedplan.planner.tasks.practice` (``fedplan dp-sgd`` and ``fedplan federated``); the downloads are the
libraries' own configurations. Each tab is a fragment: a box changed in one tab reruns that tab alone.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fedplan.app_pages.markdown_elements import show_table
from fedplan.app_pages.widgets import Form, downloads, form_page, kept_value
from fedplan.planner.display import epsilon_text
from fedplan.planner.tasks.practice import DPSGD, Federated

st.set_page_config(page_title="fedplan: DP-SGD and federated", layout="wide")

GIVEN = ("a privacy budget ε (calibrate σ)", "a noise multiplier σ (report ε)")


def budget_fields(form: Form, key: str) -> dict:
    """Target ε or σ, and δ: the one the user has, the other left out of the request."""
    given = st.radio("I have", GIVEN, horizontal=True, key=f"{key}-given",
                     index=GIVEN.index(kept_value(f"{key}-given", GIVEN[0])))
    if given == GIVEN[0]:
        form.field("target_epsilon", "Privacy budget ε", default="3", key=f"{key}-epsilon")
        leave_out = {"noise_multiplier": None}
    else:
        form.field("noise_multiplier", "Noise multiplier σ (noise std / clipping norm)", default="1.1",
                   key=f"{key}-sigma")
        leave_out = {"target_epsilon": None}
    form.field("delta", "δ", key=f"{key}-delta")
    form.field("clipping_norm", "Clipping norm C", key=f"{key}-clip")
    return leave_out


def dp_sgd_inputs() -> tuple[Form, DPSGD | None]:
    st.subheader("DP-SGD (per example)")
    form = Form(DPSGD)
    leave_out = budget_fields(form, "dpsgd")
    form.field("dataset_size", "Training examples N", default="60000", key="dpsgd-n")
    form.field("batch_size", "Batch size B (q = B/N)", default="256", key="dpsgd-b")
    form.field("epochs", "Epochs E (T = ⌈E·N/B⌉ steps)", default="15", key="dpsgd-e")
    form.field("sampling", "Sampling", key="dpsgd-sampling")
    form.field("max_examples_per_user", "Most examples of one user (blank: a per-example target)", default="",
               key="dpsgd-user")
    return form, form.build(**leave_out)


def federated_inputs() -> tuple[Form, Federated | None]:
    st.subheader("Federated (per client)")
    form = Form(Federated)
    leave_out = budget_fields(form, "fl")
    form.field("clients", "Clients N", default="1000", key="fl-n")
    form.field("clients_per_round", "Clients per round m (q = m/N)", default="50", key="fl-m")
    form.field("rounds", "Rounds R", default="200", key="fl-r")
    form.field("sampling", "Sampling", key="fl-sampling")
    return form, form.build(**leave_out)


def show(report, library: str) -> None:
    """The plan's σ, its ε (per user where the target is per user), steps or rounds, and the unit protected; each ε
    rounded up and named by its accountant and δ."""
    values = report.values
    accountant = values["epsilon_label"]
    columns = st.columns(4)
    columns[0].metric("Noise σ", f"{values['noise_multiplier']:.6g}",
                      help=f"noise multiplier σ = noise std / clipping norm, {values['noise']} "
                           f"({values['tight_accountant']})")
    if "user_epsilon" in values:
        # a per-user target: the headline is the user's ε (group privacy of the per-example one, at the user's δ)
        columns[1].metric("ε per user", epsilon_text(values["user_epsilon"]),
                          help=f"at δ = {values['user_delta']:.3g}: {values['user_guarantee']}, of the per-example "
                               f"ε by the {accountant} accountant")
        unit = f"per user (≤ {values['max_examples_per_user']} examples)"
    else:
        columns[1].metric("ε", epsilon_text(values["epsilon"]), help=f"at δ = {values['delta']:g}, "
                          f"{values['guarantee']}; {values['tight_accountant']}")
        unit = values["guarantee"].split(" (")[0]
    steps = values.get("steps", values.get("rounds"))
    columns[2].metric("Steps" if "steps" in values else "Rounds", f"{steps:g}",
                      help=f"sample rate q = {values['sample_rate']:.6g}")
    columns[3].metric("Guarantee", unit.split(" (")[0],
                      help=f"{unit}; {values['sampling']} sampling, {values['neighboring_relation']} neighbours")
    if "user_epsilon" in values:
        st.info(f"**ε = {epsilon_text(values['user_epsilon'])} per user** at δ = {values['user_delta']:.3g}, by "
                f"group privacy over up to {values['max_examples_per_user']} examples of one user, from "
                f"ε = {epsilon_text(values['epsilon'])} per example at δ = {values['delta']:.3g} ({accountant}). "
                f"Compare the per-user ε with your budget: a user's {values['max_examples_per_user']} examples "
                "together risk up to that many times the per-example ε, so the per-example ε alone understates "
                "what one user risks.")
    else:
        st.caption(f"ε = {epsilon_text(values['epsilon'])} at δ = {values['delta']:g}, {unit}: {accountant} "
                   f"accountant, {values['sampling']} sampling.")
    st.caption(report.statement)
    show_table(pd.DataFrame([{"argument": name, "value": str(value)} for name, value in values[library].items()]))
    downloads(report.result.schedule, f"fedplan_{values['kind']}")


def tab_content(inputs, library: str) -> None:
    """One tab: the inputs (``dp_sgd_inputs`` or ``federated_inputs``) and the numbers ``library`` takes."""
    report, right, _ = form_page(inputs, spinner="Calibrating…")
    if report is not None:
        with right:
            show(report, library)


def main() -> None:
    st.title("DP-SGD and federated learning: what to run")
    st.caption("The numbers Opacus, TF-Privacy and Flower take, for a privacy budget: σ calibrated so that the tight "
               "ε of the sampling that runs is within 1 % below the budget, or the ε of a σ you have.")
    tabs = st.tabs(["DP-SGD (Opacus, TF-Privacy)", "Federated (Flower)"])
    for tab, inputs, library in zip(tabs, (dp_sgd_inputs, federated_inputs), ("opacus", "flower"), strict=True):
        with tab:  # a fragment: a box changed in one tab reruns that tab only
            st.fragment(tab_content)(inputs, library)


main()
