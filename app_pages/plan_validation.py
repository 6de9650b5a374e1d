"""Run a validation on the app's executor, poll it, and show its result against the bound: shared by the Validate
page (the paper's parameters) and the Planner's "Validate this plan" section (exactly the plan shown).

:func:`validation_section` draws the time estimate (:func:`~fedplan.planner.tasks.simulate.estimated_seconds`, before
the run starts), where runs go, the Run button, a progress bar with the time left and a Cancel button; it submits
the request to the app's one :class:`~fedplan.planner.simulate.executor.Executor`
(:func:`~fedplan.planner.simulate.executor.shared`) and polls its job. A Cancel click (or any other widget) reruns
the script and a closed tab stops it: either way the poll loop's ``finally`` cancels the job. The last result stays
on screen under the key of the inputs that produced it, marked out of date (never shown as current) when the inputs
have changed since. A result is the claims (PASS / FAIL / NO GUARANTEE / NOT ACCOUNTED) in a table that wraps its
numbers, the ε spent with its accountant and sampling, each simulated curve against the bound its theorem gives
(or why there is none), and JSON and CSV downloads.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable

import altair as alt
import pandas as pd
import streamlit as st

from fedplan.app_pages.charts import show_chart
from fedplan.app_pages.markdown_elements import show_table
from fedplan.planner.display import accountant_label, epsilon_text
from fedplan.planner.simulate.executor import Cancelled, Executor, shared
from fedplan.planner.tasks.simulate import estimated_seconds, simulated_updates

#: A bound this many times the simulated value is called far above the run, in words next to the chart.
FAR_ABOVE = 10.0
#: What each curve is, as its axis says it (accuracy: on the test part, or on the training data without one).
TITLES = {"dist_sq": "‖θ_t − θ*‖²", "accuracy": "test accuracy", "loss": "training loss"}
#: Seconds between two looks at a running job (each look is also where a Cancel click or a closed tab stops it).
POLL_SECONDS = 0.25
#: The first words of the warning over a result whose inputs changed since it ran.
OUT_OF_DATE = "Out of date (inputs changed)"


def where_runs_go(runner: Executor) -> None:
    """Where this page's runs go, in a caption; a warning when that is the server process itself."""
    if runner.fallback is None:
        st.caption(f"Runs go outside the app's server process, to {runner.backend}: runs of several sessions go at "
                   "once, one per worker, and the app stays responsive meanwhile.")
    else:
        st.warning(f"Runs go to a thread of the app's server process ({runner.fallback}): concurrent runs share its "
                   "one core and slow the app down. Install Dask (pip install 'fedplan[dask]') to run them on a "
                   "cluster of one worker per core.")


def seconds_text(seconds: float) -> str:
    """A duration for people: "under 2 s", "11 s", "1.5 min"."""
    if seconds >= 90:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s" if seconds >= 1.5 else "under 2 s"


def time_estimate(request) -> str:
    """The run's size and the time estimated before it starts (the estimate behind the time limit)."""
    updates, because = simulated_updates(request)
    return (f"This run: about {updates:,} client updates ({because}), estimated at up to "
            f"{seconds_text(estimated_seconds(request))} before it starts (a pessimistic cost per update and the most "
            "rounds it may run; a busy machine takes longer).")


def progress_text(state: str, done: int, total: int, elapsed: float, estimate: float, workers: int,
                  unit: str = "seeds") -> str:
    """What a job is doing and the time left: queued behind other runs, or the ``unit`` (rounds over all seeds, or
    seeds) done, the seconds it has run and the seconds left (the up-front estimate until some are done, then
    their pace)."""
    if state == "queued":
        return (f"Waiting for a free worker: all {workers} are busy with other runs ({elapsed:.0f} s so far); this "
                f"run starts when one is free and is estimated at up to {estimate:.0f} s")
    if done and total:
        left = elapsed / done * (total - done)
        return f"{done:,} of {total:,} {unit} done, {elapsed:.0f} s so far, about {left:.0f} s left"
    left = max(estimate - elapsed, 0.0)
    return (f"running, {elapsed:.0f} s so far, up to about {left:.0f} s left (estimated before it started)" if left
            else f"running, {elapsed:.0f} s so far, longer than estimated (a busy machine takes longer)")


def run_elsewhere(on_error: Callable[[str], None], request, bar):
    """The :class:`~fedplan.planner.simulate.executor.Outcome` of ``request`` run by the app's executor, drawing its
    progress on ``bar``; None after showing why not (a refused value by ``on_error``, a cluster that cannot be
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
                         text=progress_text(state, done, total, time.perf_counter() - started, estimate, workers,
                                            request.progress_unit))
            time.sleep(POLL_SECONDS)
        return job.result()
    except ValueError as error:
        on_error(str(error))
    except Cancelled:
        st.info("Simulation cancelled.")
    finally:
        job.cancel()  # nothing once it finished; a Cancel click, another widget or a closed tab land here
    return None


def rounds_axis() -> alt.X:
    return alt.X("rounds:Q", title="rounds completed",
                 axis=alt.Axis(format="d", tickMinStep=1), scale=alt.Scale(zero=False))


def band_chart(frame: pd.DataFrame, title: str, *, log: bool, bound_label: str | None) -> alt.Chart:
    """The simulated mean and 10-90 % band over the seeds against the rounds completed, with the bound dashed."""
    y_scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
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


#: The delay chart's series, in the legend's order.
DELAY_SERIES = {"tau_hat_q100": "largest delay", "tau_hat_q90": "90th percentile", "tau_hat_q50": "median",
                "envelope": "Lemma 3 envelope"}


def decades(values) -> list[float]:
    """The powers of ten from the one at or below the smallest positive value to the one at or above the largest:
    the labels of a log axis (Vega labels 2, 3, …, 9 between them too, which overlap on a short axis)."""
    positive = [value for value in values if value > 0]
    low, high = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    return [10.0**power for power in range(low, max(high, low + 1) + 1)]


def delay_chart(rows: list[dict]) -> alt.Chart:
    """The delays τ̂(t) against Lemma 3's envelope on a log axis labelled at powers of ten only, its four series in a
    one-row legend above the plot with short names (the envelope's formula is in the caption). A delay of 0 has no
    place on a log axis and is left out (it had collapsed the axis to one line: the median delay is 0 early on)."""
    frame = pd.DataFrame([row for row in rows if row["quantity"] == "delay"])
    long = frame.melt(id_vars="t", value_vars=list(DELAY_SERIES), var_name="series", value_name="delay").dropna()
    long = long[long["delay"] > 0]
    long["series"] = long["series"].map(DELAY_SERIES)
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("t:Q", title="gradient computations t", axis=alt.Axis(format="~s")),
        y=alt.Y("delay:Q", title="delay τ̂(t) (log scale)", scale=alt.Scale(type="log"),
                axis=alt.Axis(values=decades(long["delay"]), format="~s", labelOverlap="greedy")),
        color=alt.Color("series:N", title=None, sort=list(DELAY_SERIES.values()),
                        legend=alt.Legend(orient="top", direction="horizontal", labelLimit=200))).properties(
        height=380, title="empirical delays τ̂(t) against Lemma 3's envelope")


def privacy_text(run) -> str:
    """Which accountant and sampling produced a run's ε."""
    privacy = run.privacy
    accountant = privacy.get("accountant", "")
    how = accountant_label(accountant, privacy.get("bound", "")) if accountant else "no accountant"
    return f"{how}, sampling: {privacy.get('sampling', 'not stated')}"


#: The columns of an executed schedule that hold its noise (Gaussian multiplier σ, Laplace scale).
NOISE_COLUMNS = ("noise_multiplier", "noise_scale")


def executed_noise(run) -> dict[str, list[float]]:
    """The distinct noise values a run executed, by column of its executed schedule; an engine that keeps no
    executed schedule (DP-SCD: one σ for every iteration) by its configuration."""
    if run.executed is None:
        return {key: [run.config[key]] for key in NOISE_COLUMNS if run.config.get(key) is not None}
    rows = run.executed.rows()
    return {key: sorted({row[key] for row in rows}) for key in NOISE_COLUMNS if rows and key in rows[0]}


def export_json(request, report) -> str:
    """The inputs (and, for a plan, its rounds and privacy block), claims, hypotheses, notes and each run's ε."""
    runs = [{"seed": seed, "epsilon": run.epsilon, "delta": run.privacy.get("delta"),
             "accountant": run.privacy.get("accountant"), "sampling": run.privacy.get("sampling"),
             "final_loss": run.final.get("loss"), "final_accuracy": run.final.get("accuracy"),
             "final_dist_sq": run.final.get("dist_sq"), "noise": executed_noise(run),
             "wall_time_s": round(run.wall_time_s, 3)}
            for seed, run in zip(report.seeds, report.runs, strict=True)]
    plan = getattr(request, "plan_schedule", None)
    extra = {} if plan is None else {"plan": {"rounds": plan.rounds, "privacy": plan.privacy}}
    return json.dumps({"inputs": request.inputs(), **extra, "algorithm": report.algorithm, "passed": report.passed,
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


def title_of(report, quantity: str) -> str:
    """The axis title of a curve: accuracy is on the training data when the run held no test part out."""
    if quantity == "accuracy" and not report.runs[0].config.get("n_test", 1):
        return "training accuracy"
    return TITLES.get(quantity, quantity)


def charts(report) -> list[tuple[str, alt.Chart]]:
    """(quantity, chart) of each simulated curve, with the bound a theorem gives for it (Zhou's U(t, b) on the
    distance; none on van Dijk's accuracy and loss, see :func:`curve_caption`)."""
    quantities = {row["quantity"] for row in report.table}
    drawn = []
    if "dist_sq" in quantities:
        label = "bound U(t, b)" + (" — no guarantee" if report.claims[0].failing_hypotheses else "")
        drawn.append(("dist_sq", band_chart(curve_frame(report, "dist_sq"), title_of(report, "dist_sq"), log=True,
                                            bound_label=label)))
    drawn += [(quantity, band_chart(curve_frame(report, quantity), title_of(report, quantity), log=False,
                                    bound_label=None))
              for quantity in ("accuracy", "loss") if quantity in quantities]
    if "delay" in quantities:
        drawn.append(("delay", delay_chart(list(report.table))))
    return drawn


@st.cache_data(show_spinner=False, max_entries=8)
def rendered(key: tuple, _request, _report) -> tuple[list[tuple[str, dict]], str, str]:
    """The Vega-Lite specs of the charts and the JSON and CSV exports of a result, computed once per result
    (``key``: the result's inputs and run time; Altair's spec validation alone takes about 150 ms a chart)."""
    specs = [(quantity, chart.to_dict()) for quantity, chart in charts(_report)]
    return specs, export_json(_request, _report), export_csv(_report)


def curve_caption(report, quantity: str, points: int) -> str | None:
    """What the bound line of a chart is, or why there is none; degenerate and far-above cases in plain words."""
    if quantity == "dist_sq":
        claim = report.claims[0]
        words = ["Dashed red: Zhou et al.'s U(t, b) (Theorems 3-4, L298, L314) with the constants estimated on "
                 "the data and the noise of the horizon T."]
        if points == 1:
            words.append("One round (T = 1): each curve is a single point.")
        if claim.simulated and claim.predicted and claim.predicted >= FAR_ABOVE * claim.simulated:
            words.append(f"The bound U(T, b) = {claim.predicted:.3g} is {claim.predicted / claim.simulated:.0f} "
                         f"times the simulated mean {claim.simulated:.3g} after the last round: it holds, but it is "
                         "a worst case far above this run and says little about it (hence the log scale).")
        return " ".join(words)
    if quantity == "loss" and report.algorithm == "dpscd-plan":
        return ("No bound line on the loss: the DP-SCD plan's guarantee is its privacy, and Theorem 7's recursion "
                "(Damaskinos L1498) bounds the ridge loss's dual suboptimality, not this logistic run.")
    if quantity == "loss" and report.algorithm == "adp2sgd-plan":
        return ("No bound line on accuracy or loss: the A(DP)²SGD plan's guarantee is its privacy, and Theorem 1 "
                "(Xu L147) bounds the average squared gradient norm, not accuracy or loss, and only for workers drawn "
                "at random (the NO GUARANTEE claim above: this run takes them in turn, to keep the plan's updates "
                "per worker).")
    if quantity == "loss" and report.algorithm == "mapa-plan":
        return ("No bound line on accuracy or loss: the MAPA plan's guarantee is its privacy, and Theorem 4 (Li Eq. "
                "(14), L293) bounds each stage's average squared gradient norm, not accuracy or loss (the stage claims "
                "above).")
    if quantity == "loss":
        return ("No bound line on accuracy or loss: the plan's theorems (van Dijk Theorems 3, 4/6) bound privacy "
                "only, and the paper's convergence rate (Lemma 3, L725) bounds ‖w_t − w*‖², not accuracy or loss, "
                "and only under hypotheses this run violates (the NO GUARANTEE claim above names them).")
    if quantity == "delay":
        return ("Lemma 3 needs every delay below the envelope √(t/ln t·(1 − 1/ln t)) (L725, (14) L707); delays of 0 "
                "are not drawn (log axis); a delay is the number of "
                "gradient computations made by all clients between reading the model and updating it.")
    return None


def show_curves(report, specs) -> None:
    """Each chart with its caption."""
    for quantity, spec in specs:
        show_chart(spec)
        points = len([row for row in report.table if row["quantity"] == quantity])
        caption = curve_caption(report, quantity, points)
        if caption:
            st.caption(caption)


VERDICT_WORDS = {"FAIL": "the run breaks it", "NO GUARANTEE": "a hypothesis of its theorem fails, so the bound "
                 "promises nothing", "NOT ACCOUNTED": "the accountant could not account the executed sampling"}


def verdict_text(report) -> str:
    """Whether the run meets the claims, in plain words: PASS when every claim passes, else FAIL (a claim broken)
    or NO GUARANTEE, with how many pass and what each other one means."""
    if report.passed:
        return f"PASS: the run meets every claim ({len(report.claims)})."
    passed = sum(claim.verdict == "PASS" for claim in report.claims)
    others = [f"'{claim.name}' is {claim.verdict}: {VERDICT_WORDS[claim.verdict]}" for claim in report.claims
              if claim.verdict != "PASS"]
    head = "FAIL" if "FAIL" in report.verdicts else "NO GUARANTEE"
    return f"{head}: {passed} of {len(report.claims)} claims pass; " + "; ".join(others) + "."


def show(report, current: bool, request, *, key: tuple, button: str, file_stem: str) -> None:
    """A result: marked out of date unless ``current``; the verdict, the claims (a table that wraps its numbers),
    the ε spent with its accountant, the curves and the downloads (``file_stem``.json and .csv)."""
    verdicts = ", ".join(f"{count} {verdict}" for verdict, count in report.verdicts.items())
    if not current:
        st.warning(f"{OUT_OF_DATE}: this result is for the inputs of the last run. Press {button} to update it.")
    st.subheader(f"{report.algorithm}: {len(report.seeds)} seed(s), {verdicts}"
                 + ("" if current else " — out of date (inputs changed)"))
    (st.success if report.passed else st.error if "FAIL" in report.verdicts else st.info)(verdict_text(report))
    show_table(pd.DataFrame([{"result": c.verdict, "claim": c.name, "numbers": c.detail, "source": c.source}
                             for c in report.claims]))
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
    specs, json_text, csv_text = rendered(key, request, report)
    show_curves(report, specs)
    json_column, csv_column = st.columns(2)
    json_column.download_button("Download JSON (inputs, claims, runs)", json_text, file_name=f"{file_stem}.json",
                                mime="application/json", key=f"{file_stem}_json")
    csv_column.download_button("Download CSV (curves and bounds)", csv_text, file_name=f"{file_stem}.csv",
                               mime="text/csv", key=f"{file_stem}_csv")


def validation_section(request, key: tuple, *, state_key: str, controls, output, on_error: Callable[[str], None],
                       button: str = "Run simulation", file_stem: str | None = None,
                       after_refusal: Callable[[], None] | None = None) -> None:
    """The run controls of ``request`` in ``controls`` (its time estimate, where runs go, the ``button``), the
    progress bar, a Cancel button and the last result in ``output``. ``request`` None (a refused input) draws no
    Run or Cancel button (any widget cancels a run); the last result stays, out of date. ``key`` identifies the
    inputs (a result whose key differs is out of date); ``after_refusal`` runs when a run was refused (e.g. to offer
    the nearest feasible value)."""
    outcome = None
    # A Cancel click reaches the rerun it starts, where Cancel is drawn greyed out again (nothing runs): Streamlit
    # drops a disabled widget's value when it is drawn, so the click is read before.
    cancel = request is not None and st.session_state.get(f"{state_key}_cancel", False)
    if request is not None:
        with output:
            bar = st.progress(0.0, text=f"Press {button}")
            cancel_slot = st.empty()  # emptied when the run is over: a finished run has nothing to cancel
            # greyed out until the run button is pressed: before that there is nothing to cancel
            cancel_slot.button("Cancel", key=f"{state_key}_cancel",
                               disabled=not st.session_state.get(f"{state_key}_run", False))
        with controls:
            st.caption(time_estimate(request))
            where_runs_go(shared())
            if st.button(button, type="primary", key=f"{state_key}_run"):
                outcome = run_elsewhere(on_error, request, bar)
                cancel_slot.empty()
                if outcome is not None:
                    bar.progress(1.0, text=f"done in {outcome.seconds:.1f} s")
                elif after_refusal is not None:
                    after_refusal()
    with output:
        if cancel:
            st.info("Simulation cancelled.")
        if outcome is not None:
            place = "in this process" if outcome.where == "this process" else f"on the Dask worker {outcome.where}"
            st.session_state[state_key] = (key, request, outcome.report.result, outcome.seconds, place,
                                           estimated_seconds(request))
        if state_key in st.session_state:
            shown_key, shown_request, shown, took, place, estimate = st.session_state[state_key]
            show(shown, shown_key == key, shown_request, key=(shown_key, took), button=button,
                 file_stem=file_stem or f"validate-{shown.algorithm}")
            st.caption(f"This result took {took:.1f} s to compute {place} (estimated {estimate:.1f} s before it "
                       "started).")
