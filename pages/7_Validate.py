"""Validate a plan by simulation: run the backing simulation on a few seeds and plot it against the bound.

The page builds the request of ``fedplan validate vandijk`` or ``fedplan validate fedsgd-dpc``
(:mod:`fedplan.planner.tasks.validate`) from its widgets (:mod:`fedplan.pages.widgets`) and runs it when asked.
Runs are capped (seeds, examples, clients); the time of a run is estimated before it starts
(:func:`~fedplan.planner.tasks.simulate.estimated_seconds`) and shown next to the Run button. The last result stays
on screen, marked out of date when the inputs have changed since it ran.

Runs go outside the server process (issue 20): the request is submitted to the app's one
:class:`~fedplan.planner.simulate.executor.Executor` (:func:`~fedplan.planner.simulate.executor.shared`, made on
the first visit and used by every session: a Dask LocalCluster of one worker per core, or the scheduler
``FEDPLAN_SCHEDULER`` names), and the script polls its job while drawing the progress and the
time left. A Cancel click (or any other widget) reruns the script and a closed tab stops it: either way the poll
loop's ``finally`` cancels the job, whose worker stops the run within a fraction of a second. Without Dask the runs
go to a thread of the server, and the page says so.
"""

from __future__ import annotations

import json
import time

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.pages.widgets import Form
from fedplan.planner.display import accountant_label, epsilon_text
from fedplan.planner.simulate.data import SKLEARN_SETS
from fedplan.planner.simulate.executor import Cancelled, Executor, shared
from fedplan.planner.tasks.simulate import estimated_seconds, simulated_updates
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
#: A bound this many times the simulated value is called far above the run, in words next to the chart.
FAR_ABOVE = 10.0
#: What each curve is, as its axis says it.
TITLES = {"dist_sq": "‖θ_t − θ*‖²", "accuracy": "test accuracy", "loss": "training loss"}
#: Seconds between two looks at a running job (each look is also where a Cancel click or a closed tab stops it).
POLL_SECONDS = 0.25


def where_runs_go(runner: Executor) -> None:
    """Where this page's runs go, in a caption; a warning when that is the server process itself."""
    if runner.fallback is None:
        st.caption(f"Runs go outside the app's server process, to {runner.backend}: runs of several sessions go at "
                   "once, one per worker, and the app stays responsive meanwhile.")
    else:
        st.warning(f"Runs go to a thread of the app's server process ({runner.fallback}): concurrent runs share its "
                   "one core and slow the app down. Install Dask (pip install 'fedplan[dask]') to run them on a "
                   "cluster of one worker per core.")


@st.cache_data(show_spinner=False, max_entries=8)
def training_examples(source: str, examples: int) -> int:
    """Examples in the training part of the page's data (the van Dijk plan splits them over the clients)."""
    from fedplan.planner.simulate.data import load_dataset

    return load_dataset(source, n_samples=examples, test_fraction=TEST_FRACTION).X_train.shape[0]


def common_inputs(form: Form) -> int | None:
    """Data, clients, seeds, ε and δ; returns the number of seeds (None if refused)."""
    form.field("dataset", "Data", choices=["synthetic", *SKLEARN_SETS], widget="selectbox")
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
    client_size = training_examples(values["dataset"], values["n_samples"]) // clients
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


def time_estimate(request) -> str:
    """The run's size and the time estimated before it starts (the estimate behind the time limit)."""
    updates, because = simulated_updates(request)
    seconds = estimated_seconds(request)
    shown = f"{seconds:.0f} s" if seconds >= 1.5 else "under 2 s"
    if seconds >= 90:
        shown = f"{seconds / 60:.1f} min"
    return (f"This run: about {updates:,} client updates ({because}), estimated at up to {shown} before it "
            "starts (a pessimistic cost per update and the most rounds it may run; a busy machine takes longer).")


def progress_text(state: str, done: int, total: int, elapsed: float, estimate: float, workers: int) -> str:
    """What a job is doing and the time left: queued behind other runs, or seeds done, the seconds it has run and
    the seconds left (the up-front estimate until a seed is done, then the pace of the seeds done)."""
    if state == "queued":
        return (f"Waiting for a free worker: all {workers} are busy with other runs ({elapsed:.0f} s so far); this "
                f"run starts when one is free and is estimated at up to {estimate:.0f} s")
    if done and total:
        left = elapsed / done * (total - done)
        return f"seed {done} of {total} done, {elapsed:.0f} s so far, about {left:.0f} s left"
    left = max(estimate - elapsed, 0.0)
    return (f"running, {elapsed:.0f} s so far, up to about {left:.0f} s left (estimated before it started)" if left
            else f"running, {elapsed:.0f} s so far, longer than estimated (a busy machine takes longer)")


def run_elsewhere(form: Form, request, bar):
    """The :class:`~fedplan.planner.simulate.executor.Outcome` of ``request`` run by the app's executor, drawing its
    progress on ``bar``; None after showing why not (a refused value under its box, a cluster that cannot be
    reached) or when the run was cancelled. Leaving this function early (a rerun, a closed tab) cancels the run."""
    runner, estimate = shared(), estimated_seconds(request)
    try:
        job = runner.submit(request)
    except (ValueError, TimeoutError) as error:
        st.error(f"The simulation could not start: {error}")
        return None
    started, workers = time.perf_counter(), runner.workers()
    try:
        while not job.done():
            state, (done, total) = job.state(), job.progress()
            bar.progress(done / total if total else 0.0,
                         text=progress_text(state, done, total, time.perf_counter() - started, estimate, workers))
            time.sleep(POLL_SECONDS)
        return job.result()
    except ValueError as error:
        form.error(str(error))
    except Cancelled:
        st.info("Simulation cancelled.")
    finally:
        job.cancel()  # nothing once it finished; a Cancel click, another widget or a closed tab land here
    return None


def rounds_axis() -> alt.X:
    return alt.X("rounds:Q", title="rounds completed",
                 axis=alt.Axis(format="d", tickMinStep=1), scale=alt.Scale(zero=False))


def band_chart(frame: pd.DataFrame, quantity: str, *, log: bool, bound_label: str | None) -> alt.Chart:
    """The simulated mean and 10-90 % band over the seeds against the rounds completed, with the bound dashed."""
    y_scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    title = TITLES.get(quantity, quantity)
    band = alt.Chart(frame).mark_area(opacity=0.25).encode(x=rounds_axis(),
                                                           y=alt.Y("q10:Q", title=title, scale=y_scale), y2="q90")
    long = frame.melt(id_vars="rounds", value_vars=["mean"] + (["predicted"] if bound_label else []),
                      var_name="series", value_name="value").dropna()
    names = {"mean": "simulated mean", "predicted": bound_label}
    long["series"] = long["series"].map(names)
    lines = alt.Chart(long).mark_line(point=len(frame) < 3).encode(
        x=rounds_axis(), y=alt.Y("value:Q", scale=y_scale),
        color=alt.Color("series:N", title=None, scale=alt.Scale(domain=[n for n in names.values() if n],
                                                                   range=["#1f77b4", "#d62728"]),
                        legend=alt.Legend(orient="bottom", labelLimit=400)),
        strokeDash=alt.StrokeDash("series:N", legend=None, scale=alt.Scale(
            domain=[n for n in names.values() if n], range=[[1, 0], [6, 4]])))
    return (band + lines).properties(height=260, title=f"simulated {title} (mean over the seeds, 10-90 % band)")


def delay_chart(rows: list[dict]) -> alt.Chart:
    frame = pd.DataFrame([row for row in rows if row["quantity"] == "delay"])
    names = {"tau_hat_q100": "largest delay", "tau_hat_q90": "90 % of delays below",
             "tau_hat_q50": "median delay", "envelope": "Lemma 3 envelope √(t/ln t·(1 − 1/ln t))"}
    long = frame.melt(id_vars="t", value_vars=list(names), var_name="series", value_name="delay").dropna()
    long["series"] = long["series"].map(names)
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("t:Q", title="gradient computations t", axis=alt.Axis(format="~s")),
        y=alt.Y("delay:Q", title="delay τ̂(t) (computations, log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title=None, sort=list(names.values()),
                        legend=alt.Legend(orient="bottom", labelLimit=400, columns=2))).properties(
        height=260, title="empirical delays τ̂(t) against Lemma 3's envelope")


def privacy_text(run) -> str:
    """Which accountant and sampling produced a run's ε."""
    privacy = run.privacy
    accountant = privacy.get("accountant", "")
    how = accountant_label(accountant, privacy.get("bound", "")) if accountant else "no accountant"
    return f"{how}, sampling: {privacy.get('sampling', 'not stated')}"


def export_json(request, report) -> str:
    runs = [{"seed": seed, "epsilon": run.epsilon, "delta": run.privacy.get("delta"),
             "accountant": run.privacy.get("accountant"), "sampling": run.privacy.get("sampling"),
             "final_loss": run.final.get("loss"), "final_accuracy": run.final.get("accuracy"),
             "final_dist_sq": run.final.get("dist_sq"), "wall_time_s": round(run.wall_time_s, 3)}
            for seed, run in zip(report.seeds, report.runs, strict=True)]
    return json.dumps({"inputs": request.inputs(), "algorithm": report.algorithm, "passed": report.passed,
                       "verdicts": report.verdicts, "claims": [claim.to_dict() for claim in report.claims],
                       "hypotheses": [h.to_dict() for h in report.hypotheses], "notes": list(report.notes),
                       "runs": runs}, indent=1, allow_nan=False)


def export_csv(report) -> str:
    columns = ["quantity", "round", "t", "mean", "q10", "q50", "q90", "predicted", "tau_hat_q50", "tau_hat_q90",
               "tau_hat_q100", "envelope"]
    frame = pd.DataFrame(list(report.table))
    return frame[[c for c in columns if c in frame]].rename(columns={"predicted": "bound"}).to_csv(index=False)


def curve_frame(report, quantity: str) -> pd.DataFrame:
    frame = pd.DataFrame([row for row in report.table if row["quantity"] == quantity])
    frame["rounds"] = frame["round"] + 1
    return frame


def charts(report) -> list[tuple[str, alt.Chart]]:
    """(quantity, chart) of each simulated curve, with the bound a theorem gives for it (Zhou's U(t, b) on the
    distance; none on van Dijk's accuracy and loss, see :func:`show_curves`)."""
    quantities = {row["quantity"] for row in report.table}
    drawn = []
    if "dist_sq" in quantities:
        label = "bound U(t, b)" + (" — no guarantee" if report.claims[0].failing_hypotheses else "")
        drawn.append(("dist_sq", band_chart(curve_frame(report, "dist_sq"), "dist_sq", log=True, bound_label=label)))
    drawn += [(quantity, band_chart(curve_frame(report, quantity), quantity, log=False, bound_label=None))
              for quantity in ("accuracy", "loss") if quantity in quantities]
    if "delay" in quantities:
        drawn.append(("delay", delay_chart(list(report.table))))
    return drawn


@st.cache_data(show_spinner=False, max_entries=8)
def rendered(key: tuple, _request, _report) -> tuple[list[tuple[str, dict]], str, str]:
    """The Vega-Lite specs of the charts and the JSON and CSV exports of a result, computed once per result
    (``key``: the request's type and inputs; Altair's spec validation alone takes about 150 ms a chart)."""
    specs = [(quantity, chart.to_dict()) for quantity, chart in charts(_report)]
    return specs, export_json(_request, _report), export_csv(_report)


def curve_caption(report, quantity: str, points: int) -> str | None:
    """What the bound line of a chart is, or why there is none; degenerate and far-above cases in plain words."""
    if quantity == "dist_sq":
        claim = report.claims[0]
        words = ["Dashed red: Zhou et al.'s U(t, b) (Theorems 3-4, L298, L314) with the constants estimated on "
                 "this split and the noise of the horizon T."]
        if points == 1:
            words.append("One round (T = 1): each curve is a single point.")
        if claim.simulated and claim.predicted and claim.predicted >= FAR_ABOVE * claim.simulated:
            words.append(f"The bound U(T, b) = {claim.predicted:.3g} is {claim.predicted / claim.simulated:.0f} "
                         f"times the simulated mean {claim.simulated:.3g} after the last round: it holds, but it is "
                         "a worst case far above this run and says little about it (hence the log scale).")
        return " ".join(words)
    if quantity == "loss":
        return ("No bound line on accuracy or loss: the plan's theorems (van Dijk Theorems 3, 4/6) bound privacy "
                "only, and the paper's convergence rate (Lemma 3, L725) bounds ‖w_t − w*‖², not accuracy or loss, "
                "and only under hypotheses this run violates (the NO GUARANTEE claim above names them).")
    if quantity == "delay":
        return ("Lemma 3 needs every delay below the envelope (L725, (14) L707); a delay is the number of "
                "gradient computations made by all clients between reading the model and updating it.")
    return None


def show_curves(report, specs) -> None:
    """Each chart with its caption."""
    for quantity, spec in specs:
        st.vega_lite_chart(spec, width="stretch")
        points = len([row for row in report.table if row["quantity"] == quantity])
        caption = curve_caption(report, quantity, points)
        if caption:
            st.caption(caption)


def show(report, current: bool, request) -> None:
    verdicts = ", ".join(f"{count} {verdict}" for verdict, count in report.verdicts.items())
    if not current:
        st.warning("Out of date (inputs changed): this result is for the inputs of the last run. Press Run "
                   "simulation to update it.")
    st.subheader(f"{report.algorithm}: {len(report.seeds)} seed(s), {verdicts}"
                 + ("" if current else " — out of date (inputs changed)"))
    claims = pd.DataFrame([{"result": c.verdict, "claim": c.name, "numbers": c.detail,
                            "source": c.source} for c in report.claims])
    st.dataframe(claims, hide_index=True)
    spent = [run.epsilon for run in report.runs]
    if all(value is not None for value in spent):
        worst = max(range(len(spent)), key=spent.__getitem__)
        st.metric("ε spent (worst client, executed schedule)", epsilon_text(spent[worst]),
                  help="rounded up: never below the accountant's value")
        st.caption(f"ε spent by the executed schedule at δ = {report.runs[worst].privacy.get('delta'):.3g}, "
                   f"{privacy_text(report.runs[worst])}.")
    else:
        st.caption("ε spent: " + next(run.privacy.get("statement", "") for run, value in zip(report.runs, spent,
                                                                                            strict=True)
                                      if value is None))
    for note in report.notes:
        st.caption(note)
    specs, json_text, csv_text = rendered((type(request).__name__, tuple(request.inputs().items())), request, report)
    show_curves(report, specs)
    json_column, csv_column = st.columns(2)
    json_column.download_button("Download JSON (inputs, claims, runs)", json_text,
                                file_name=f"validate-{report.algorithm}.json", mime="application/json")
    csv_column.download_button("Download CSV (curves and bounds)", csv_text,
                               file_name=f"validate-{report.algorithm}.csv", mime="text/csv")


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
    with right:
        progress = st.progress(0.0, text="Press Run simulation")
        cancel = st.button("Cancel")
    report = None
    if request is not None:
        with left:
            st.caption(time_estimate(request))
            where_runs_go(shared())
            if st.button("Run simulation", type="primary"):
                outcome = run_elsewhere(form, request, progress)
                if outcome is not None:
                    progress.progress(1.0, text=f"done in {outcome.seconds:.1f} s")
                    report = outcome.report
                elif isinstance(request, ValidateFedsgdDpc) and request.rounds is None:
                    st.button("Set rounds T = 1 (the smallest run)", on_click=st.session_state.__setitem__,
                              args=(ROUNDS_KEY, "1"))
    with right:
        if cancel:
            st.info("Simulation cancelled.")
        if report is not None:
            place = "in this process" if outcome.where == "this process" else f"on the Dask worker {outcome.where}"
            st.session_state["validation"] = (request, report.result, outcome.seconds, place)
        if "validation" in st.session_state:
            shown_request, shown, took, place = st.session_state["validation"]
            show(shown, shown_request == request, shown_request)
            st.caption(f"This result took {took:.1f} s to compute {place} (estimated "
                       f"{estimated_seconds(shown_request):.1f} s before it started).")


main()
