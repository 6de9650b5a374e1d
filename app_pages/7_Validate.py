"""Validate a plan by simulation: run the backing simulation on a few seeds and plot it against the bound.

The page builds the request of ``fedplan validate vandijk`` or ``fedplan validate fedsgd-dpc``
(:mod:`fedplan.planner.tasks.validate`) from its widgets (:mod:`fedplan.app_pages.widgets`) and runs it when asked.
Runs are capped (seeds, examples, clients); the time of a run is estimated before it starts
(:func:`~fedplan.planner.tasks.simulate.estimated_seconds`) and shown next to the Run button. The last result stays
on screen, marked out of date when the inputs have changed since it ran.

Runs go outside the server process (issue 20): the request is submitted to the app's one
:class:`~fedplan.planner.simulate.executor.Executor` (:func:`~fedplan.planner.simulate.executor.shared`, made on
the first visit and used by every session: a Dask LocalCluster of one worker per core, or the scheduler
``FEDPLAN_SCHEDULER`` names), and the script polls its job while drawing the progress and the
time left. A Cancel click (or any other widget) reruns the script and a closed tab stops it: either way the poll
loop's ``finally`` cancels the job, whose worker stops the run within a fraction of a second. Without Dask the runs
go to a thread of the server, and the page says so. The running, polling and showing are
:mod:`fedplan.app_pages.plan_validation`'s, shared with the Planner page's "Validate this plan".
"""

from __future__ import annotations

import streamlit as st

from fedplan.app_pages.plan_validation import validation_section
from fedplan.app_pages.widgets import Form
from fedplan.planner.simulate.data import SKLEARN_SETS
from fedplan.planner.tasks.validate import ValidateFedsgdDpc, ValidateVandijk

st.set_page_config(page_title="fedplan: validate by simulation", layout="wide")

ALGORITHMS = {"van Dijk: increasing sample sizes": ValidateVandijk,
              "FedSGD-DPC (Zhou): optimal T and b": ValidateFedsgdDpc}
MAX_SEEDS = 5
MAX_EXAMPLES = 200_000
MAX_CLIENTS = 1000
#: The held-out share of the data on this page (the van Dijk plan's client size is the training share / clients).
TEST_FRACTION = 0.2
#: The van Dijk plan the page validates: s₀ = 16, the smallest σ in this range whose claimed δ meets δ, r0 = 1/e.
VANDIJK_PLAN = {"initial_size": 16, "noise_multiplier_range": (1.2, 200.0), "r0": "1/e", "no_pld": True}
#: The session-state key of the FedSGD-DPC rounds box (the one-click "T = 1" sets it).
ROUNDS_KEY = "validate_rounds"


@st.cache_data(show_spinner=False, max_entries=8)
def training_examples(source: str, examples: int) -> int:
    """Examples in the training part of the page's data (the van Dijk plan splits them over the clients)."""
    from fedplan.planner.simulate.data import load_dataset

    return load_dataset(source, n_samples=examples, test_fraction=TEST_FRACTION).X_train.shape[0]


def common_inputs(form: Form) -> int | None:
    """Data, clients, seeds, ε and δ; returns the number of seeds (None if refused)."""
    dataset = form.field("dataset", "Data", choices=["synthetic", *SKLEARN_SETS], widget="selectbox")
    if dataset == "synthetic":  # a bundled set has its own size: no box for it
        form.field("n_samples", "Examples (synthetic)", default="62500", limit=(100, MAX_EXAMPLES))
    form.field("clients", "Clients", default="5", limit=(1, MAX_CLIENTS))
    seeds = form.count("seeds", "Seeds", "2", low=1, high=MAX_SEEDS,
                       help=f"how many seeds to run (0, 1, …), at most {MAX_SEEDS} on this page")
    form.field("target_epsilon", "ε", default="1")
    form.field("target_delta", "δ", default="1e-6")
    return seeds


def vandijk_request(form: Form, seeds: int | None) -> ValidateVandijk | None:
    form.field("epochs", "Passes over each client's data", default="2.5")
    form.field("learning_rate", "Learning rate η₀", default="0.15")
    form.field("clipping_norm", "Clipping norm C", default="0.1")
    values, clients = form.values, form.values.get("clients")
    if form.show_problems() or seeds is None:
        return None
    client_size = training_examples(values["dataset"], values.get("n_samples", 0)) // clients
    return form.build(seeds=tuple(range(seeds)), test_fraction=TEST_FRACTION, client_size=client_size,
                      **VANDIJK_PLAN)


def fedsgd_request(form: Form, seeds: int | None) -> ValidateFedsgdDpc | None:
    form.field("mechanism", "Mechanism", default="laplace")
    form.field("rounds", "Rounds T (empty: the planner's T*)", key=ROUNDS_KEY)
    form.field("clients_per_round", "Clients per round b (empty: the planner's b*)")
    if seeds is None:
        form.show_problems()
        return None
    return form.build(seeds=tuple(range(seeds)), test_fraction=TEST_FRACTION)


def main() -> None:
    st.title("Validate a plan by simulation")
    st.caption(f"Runs the backing simulation (event-driven engine, privacy ledger) on a few seeds and compares it "
               f"with the bound. Capped at {MAX_SEEDS} seeds, {MAX_EXAMPLES:,} examples and {MAX_CLIENTS:,} clients; "
               "the time of a run is estimated before it starts, next to the Run button.")
    left, right = st.columns([1, 2])
    with left:
        algorithm = st.radio("Algorithm", list(ALGORITHMS))
        form = Form(ALGORITHMS[algorithm])
        seeds = common_inputs(form)
        build = vandijk_request if ALGORITHMS[algorithm] is ValidateVandijk else fedsgd_request
        request = build(form, seeds)
    validation_section(request, None if request is None else (type(request).__name__, tuple(request.inputs().items())),
                       state_key="validation", controls=left, output=right, on_error=form.error,
                       after_refusal=lambda: offer_one_round(request))


def offer_one_round(request) -> None:
    """Under a FedSGD-DPC run refused for want of rounds (the planner's T* = 0): the smallest run, in one click."""
    if isinstance(request, ValidateFedsgdDpc) and request.rounds is None:
        st.button("Set rounds T = 1 (the smallest run)", on_click=st.session_state.__setitem__,
                  args=(ROUNDS_KEY, "1"))


main()
