"""The benchmark script runs (one cheap grid point); it checks answers here, never timings."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_benchmark(name: str = "accounting"):
    """``benchmarks/<name>.py`` by its path (an installed ``benchmarks`` package would shadow the folder)."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while the module executes
    spec.loader.exec_module(module)
    return module


def test_accounting_benchmark_runs_and_agrees_with_dp_accounting(tmp_path, capsys):
    benchmark = load_benchmark()
    assert len(benchmark.GRID) == 27
    assert benchmark.random_grid(3, 7) == benchmark.random_grid(3, 7) != benchmark.random_grid(3, 8)  # seeded
    output = tmp_path / "result.json"
    assert benchmark.main(["--only", "1,0.01,10000", "--json", str(output)]) == 0
    (row,) = json.loads(output.read_text())["rows"]
    assert row["within_target"] and row["accountants"] == ["pld"] * 4
    assert row["not_looser_epsilon"] and row["not_looser_sigma"] and row["within_tight_claim"]
    assert abs(row["sigma_excess"]) < 1e-4  # dp-accounting's own calibration: σ ≈ 3.8137 (anchors.md §2.3)
    assert row["steps_calibrated"] >= 10_000 and row["sample_rate_calibrated"] >= 0.01 * (1 - 1e-4)
    out = capsys.readouterr().out
    assert "speed ratio against dp-accounting's PLD σ calibration" in out and "answers looser" in out


def test_sampling_benchmark_references_are_dp_accountings_own_numbers():
    from dp_accounting.rdp import rdp_privacy_accountant
    from scipy import stats

    benchmark = load_benchmark("sampling")
    for draws, steps in ((10, 100), (100, 10_000), (1000, 100)):
        sensitivities, probs = benchmark.binomial_mixture(draws, 10_000, steps)
        law, tail, top = stats.binom(draws, 1e-4), 1e-24 / steps, len(sensitivities) - 1
        assert sensitivities == [2.0 * k for k in range(top + 1)]
        assert law.sf(top) <= tail < law.sf(top - 1)  # the first k_max with P(K > k_max) ≤ 1e-24 / T
        assert abs(sum(probs) - 1) < 1e-12
    # The cached RDP reference is what dp-accounting's RdpAccountant says at the same orders (a few, for time).
    benchmark.FINE_RDP_ORDERS = benchmark.np.array([2.0, 3.0, 16.0, 64.0, 128.0])
    (case,) = [case for case in benchmark.CASES if case.anchor == "rdp"]
    accountant = rdp_privacy_accountant.RdpAccountant(orders=list(benchmark.FINE_RDP_ORDERS),
                                                      neighboring_relation=case.anchor_relation)
    expected = accountant.compose(case.event(0.001, 8.0, 100, benchmark.DATASET_SIZE)).get_epsilon(benchmark.DELTA)
    assert benchmark.fine_rdp_epsilon(0.001, 8.0, 100) == expected


def test_sampling_benchmark_runs_every_sampling_and_agrees_with_dp_accounting(tmp_path, capsys):
    benchmark = load_benchmark("sampling")
    assert len(benchmark.CASES) == 7
    output = tmp_path / "epsilon.json"
    assert benchmark.main(["--epsilon-point", "0.001,8,100", "--no-calibration", "--json", str(output)]) == 0
    rows = json.loads(output.read_text())["rows"]
    assert len(rows) == 7 and not any("refused" in row for row in rows)
    for row in rows:  # never below dp-accounting on a grid at least as fine, and close to it
        assert 1 - 1e-9 <= row["epsilon_ratio"] < 1.01, row
    by_name = {(row["sampling"], row["neighboring_relation"]): row for row in rows}
    assert by_name["shuffle", "replace_one"]["accountant_ours"] == "exact"
    fixed_replace = by_name["fixed_size", "replace_one"]
    assert fixed_replace["accountant_ours"] == "rdp"
    assert fixed_replace["epsilon_pld_ours"] < fixed_replace["epsilon_ours"]  # the tighter PLD, no event
    assert "| sampling / relation |" in capsys.readouterr().out

    output = tmp_path / "calibration.json"
    assert benchmark.main(["--sampling", "poisson/add_or_remove_one", "--sampling", "fixed_size/replace_one",
                           "--sampling", "shuffle/replace_one", "--no-epsilon", "--calibration-point", "1,0.1,10000",
                           "--json", str(output)]) == 0
    result = json.loads(output.read_text())
    assert len(result["rows"]) == 3
    for row in result["rows"]:
        assert 1 - 1e-9 <= row["epsilon_ratio"] < 1.01 and row["reference_within_target"], row
        assert abs(row["sigma_ratio"] - 1) < 5e-3, row
    assert set(result["summary"]) == {"poisson/add_or_remove_one", "fixed_size/replace_one", "shuffle/replace_one"}


def test_sweep_benchmark_runs_and_every_backend_gives_the_anchor_table(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("benchmark_sweep", ROOT / "benchmarks" / "sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    output = tmp_path / "result.json"
    assert module.main(["--repeat", "1", "--rounds", "5", "--json", str(output)]) == 0
    rows = json.loads(output.read_text())["rows"]
    assert [row["backend"] for row in rows] == ["1 process (anchor)", "2 processes"]
    assert all(row["same_table"] and row["runs"] == 60 for row in rows)
    assert "ratio" in capsys.readouterr().out


def test_app_benchmark_scripts_every_page_with_a_return_to_an_earlier_value():
    from fedplan.app import PAGES

    benchmark = load_benchmark("app")
    assert set(benchmark.SCENARIOS) == {name for name, _ in PAGES}
    for name, scenario in benchmark.SCENARIOS.items():
        timed = [step for step in scenario.steps if not isinstance(step, benchmark.Tab)]
        assert 5 <= len(timed) <= 10, name
        labels = [step.label for step in timed]
        assert len(set(labels)) < len(labels), f"{name}: no widget is changed twice (no return to a value)"
    validate = benchmark.SCENARIOS["7_Validate.py"].steps
    assert not any("Run" in getattr(step, "label", "") for step in validate)  # never starts a simulation
    assert benchmark.nearest_rank([5, 1, 4, 2, 3], 0.95) == 5 and benchmark.nearest_rank(list(range(1, 41)), 0.95) == 38
    assert benchmark.nearest_rank([], 0.95) is None
    steps = [{"step": "tab", "status": "shown", "ms": None}, {"step": "fast", "status": "ok", "ms": 100.0},
             {"step": "slow", "status": "ok", "ms": 400.0, "to_run_ms": 5.0, "run_ms": 300.0, "paint_ms": 95.0},
             {"step": "same value", "status": "no rerun", "ms": None}]
    assert benchmark.slow_steps([{"page": "p.py", "interactions": steps}]) == [
        "  p.py: same value: no rerun", "  p.py: slow: 400 ms (input to run 5, run 300, finished to painted 95)"]
    assert benchmark.select_pages("MAPA,accountant") == ["5_MAPA.py", "1_Accountant.py"]  # in the order asked
    page, anchor = {"warm_load_s": 2.5, "interaction_p95_ms": 400.0}, {"warm_load_s": 1.75, "interaction_p95_ms": None}
    assert benchmark.over_anchor(page, anchor) == {"warm_load_over_anchor_s": 0.75, "p95_over_anchor_ms": None}
    assert benchmark.over_anchor(page, None) == {"warm_load_over_anchor_s": None, "p95_over_anchor_ms": None}


def test_app_benchmark_measures_one_page_in_the_browser(tmp_path, capsys):
    """One page, one interaction, in Debian's Chromium: the table's columns and numbers (never their values)."""
    benchmark = load_benchmark("app")
    if not benchmark.browser.have_chromium():
        if os.environ.get("FEDPLAN_REQUIRE_BROWSER") == "1":
            raise RuntimeError(f"FEDPLAN_REQUIRE_BROWSER=1 but there is no Chromium at {benchmark.browser.CHROMIUM}")
        pytest.skip("no Chromium (apt-get install chromium); .ci/run installs it")
    output = tmp_path / "app.json"
    assert benchmark.main(["--pages", "MAPA", "--interactions", "1", "--json", str(output)]) == 0
    anchor, row = json.loads(output.read_text())["rows"]  # Streamlit alone first, in the same run
    assert anchor["page"] == benchmark.ANCHOR_ROW and anchor["count"] == 1 and anchor["missing"] == 0
    (anchor_step,) = anchor["interactions"]
    assert anchor_step["status"] == "ok" and anchor_step["step"] == "Value = 2 [Enter]" and anchor_step["ms"] > 0
    assert anchor["warm_load_s"] > 0
    assert row["page"] == "5_MAPA.py" and row["count"] == 1 and row["missing"] == row["timeouts"] == 0
    assert row["warm_load_over_anchor_s"] == pytest.approx(row["warm_load_s"] - anchor["warm_load_s"], abs=1e-3)
    assert row["p95_over_anchor_ms"] == pytest.approx(row["interaction_p95_ms"] - anchor["interaction_p95_ms"],
                                                      abs=0.1)
    (step,) = row["interactions"]
    assert step["status"] == "ok" and step["step"] == "Iterations T = 50000 [Enter]" and step["ms"] > 0
    assert row["cold_load_s"] > 0 and row["warm_load_s"] > 0
    assert row["interaction_median_ms"] == row["interaction_p95_ms"] == step["ms"]
    phases = row["warm_phases"][0]
    assert 0 < phases["app_mounted_ms"] < phases["run_started_ms"] < phases["run_finished_ms"] <= phases["painted_ms"]
    out = capsys.readouterr().out
    header = ("| page | first load cold (s) | first load warm (s) | interaction median (ms) | p95 (ms) | count | "
              "missing/timeout | load < 1.5 s | p95 < 300 ms | returning browser load (s) | warm load − anchor (s) | "
              "p95 − anchor (ms) |")
    assert header in out
    (line,) = [line for line in out.splitlines() if line.startswith(f"| {benchmark.ANCHOR_ROW} |")]
    assert [cell.strip() for cell in line.strip("|").split("|")][10:] == ["—", "—"]
    (line,) = [line for line in out.splitlines() if line.startswith("| 5_MAPA.py |")]
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[1:5] == [f"{row['cold_load_s']:.2f}", f"{row['warm_load_s']:.2f}",
                          f"{row['interaction_median_ms']:.0f}", f"{row['interaction_p95_ms']:.0f}"]
    assert cells[5] == "1" and cells[6] == "0/0" and cells[7] in ("PASS", "FAIL") and cells[8] in ("PASS", "FAIL")
    assert row["returning_load_s"] > 0 and cells[9] == f"{row['returning_load_s']:.2f}"
    assert cells[10:] == [f"{row['warm_load_over_anchor_s']:+.2f}", f"{row['p95_over_anchor_ms']:+.0f}"]
    returning = row["returning_phases"]
    assert 0 < returning["app_mounted_ms"] < returning["run_started_ms"] < returning["run_finished_ms"]
    assert "load average" in out


def test_app_benchmark_says_when_it_runs_reniced():
    """Under ``nice -n -20`` the server outranks Chromium's renderers (which set their own niceness): not a user's
    machine, and the table says so."""
    benchmark = load_benchmark("app")
    assert benchmark.priority_warning(0) is None and benchmark.priority_warning(5) is None
    assert benchmark.priority_warning(-20) == (
        "warning: this benchmark runs at niceness -20; the app's server inherits it, Chromium's renderers do not: the "
        "times are not a user's (run it at niceness 0)")


def test_app_benchmark_times_the_run_the_input_started_whole_page_or_fragment():
    """The rule that ends an interaction (DONE_SCRIPT), on logs written by hand, in Chromium: the first run that
    started after the input event ends it, whether the whole page's (status 0) or the widget's fragment's (status 3),
    but not a run that started before the input, nor one cut short by a newer rerun (status 2); and an input is only
    made on a quiet page (wait_quiet), where no progress line's fragment run could be taken for the input's."""
    benchmark = load_benchmark("app")
    if not benchmark.browser.have_chromium():
        if os.environ.get("FEDPLAN_REQUIRE_BROWSER") == "1":
            raise RuntimeError(f"FEDPLAN_REQUIRE_BROWSER=1 but there is no Chromium at {benchmark.browser.CHROMIUM}")
        pytest.skip("no Chromium (apt-get install chromium); .ci/run installs it")
    from playwright.sync_api import sync_playwright

    fragment_then_whole = [
        ["painted", None, 50],  # before the mark
        ["started", None, 90], ["state", "running", 95],  # a whole run started before the input (at 100)
        ["started", None, 120], ["finished", 2, 130],  # the input's run, cut short by a newer rerun
        ["started", None, 140], ["finished", 3, 150], ["state", "notRunning", 151], ["painted", None, 160],
        ["started", None, 170], ["state", "running", 171], ["finished", 0, 250], ["state", "notRunning", 252],
        ["painted", None, 270], ["started", None, 300], ["finished", 3, 320]]
    with sync_playwright() as playwright:
        chromium = benchmark.browser.launch(playwright)
        page = chromium.new_page()
        page.wait_for_function("performance.now() > 500")  # the hand-written times are long past

        def done(log, event=100.0, state="notRunning", mark=1):
            page.evaluate("([log, event, state]) => { window.__fpLog = log; window.__fpEvent = event; "
                          "window.__fpState = () => state; }", [log, event, state])
            return page.evaluate(f"({benchmark.DONE_SCRIPT})({mark})")

        # the fragment run after the cut-short one; the state showed "running" only before the input
        assert done(fragment_then_whole) == {"painted": 160, "running": None, "stopped": 151}
        assert done(fragment_then_whole[:5]) is None  # only the cut-short run has ended
        # its finished message while the page still runs; once the page has been quiet 150 ms, that message
        assert done(fragment_then_whole[:7], state="running") is None
        assert done(fragment_then_whole[:7]) == {"painted": 150, "running": None, "stopped": None}
        assert done(fragment_then_whole, event=None) is None  # no input event yet
        # an input at 160: the whole-page run that started at 170, not the fragment run before it
        assert done(fragment_then_whole, event=160.0) == {"painted": 270, "running": 171, "stopped": 252}
        # quiet: not running, and no run started in the last QUIET_MS
        for since, state, quiet in ((benchmark.QUIET_MS + 300, "notRunning", True), (100, "notRunning", False),
                                    (benchmark.QUIET_MS + 300, "running", False)):
            page.evaluate("([since, state]) => { window.__fpStarted = performance.now() - since; "
                          "window.__fpState = () => state; }", [since, state])
            assert benchmark.wait_quiet(page, 0.2) is quiet, (since, state)
        # a short run that never showed "running": its finished message, once the page has been quiet 150 ms
        quiet = [["painted", None, 50], ["started", None, 110], ["finished", 0, 130]]
        assert done(quiet) == {"painted": 130, "running": None, "stopped": None}
        assert done(quiet, state="running") is None
        # the log those rules read, from Streamlit's own messages: every run's new-session message, each run's
        # finished status, nothing from the deltas between (a length-delimited field's length is skipped too)
        page.add_init_script(benchmark.INIT_SCRIPT)
        page.reload()
        page.evaluate("(messages) => { const socket = new WebSocket('ws://127.0.0.1:9');"
                      "  for (const bytes of messages) socket.dispatchEvent("
                      "    new MessageEvent('message', {data: new Uint8Array(bytes).buffer})); }",
                      [list(message) for message in _streamlit_messages()])
        log = [entry for entry in page.evaluate("window.__fpLog") if entry[0] != "state"]
        assert [entry[:2] for entry in log] == [["started", None], ["finished", 3], ["started", None], ["finished", 0]]
        assert page.evaluate("window.__fpStarted") == log[2][2]  # the last run's start: what wait_quiet reads
        chromium.close()


def _streamlit_messages() -> list[bytes]:
    """A fragment run and a whole run as Streamlit sends them: new session, a delta (a long markdown), finished."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    messages = []
    for status in (ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ForwardMsg.FINISHED_SUCCESSFULLY):
        started, delta, finished = ForwardMsg(), ForwardMsg(), ForwardMsg()
        started.hash, delta.hash, finished.hash = "a" * 32, "b" * 32, "c" * 32
        started.new_session.page_script_hash = "page"
        delta.metadata.delta_path[:] = [0, 1]
        delta.delta.new_element.markdown.body = "x" * 300  # fields 4 and 6 inside: never read as the message's own
        finished.script_finished = status
        messages += [message.SerializeToString() for message in (started, delta, finished)]
    return messages


def test_app_load_benchmark_times_one_and_two_validations_on_the_cluster(tmp_path, capsys, monkeypatch):
    """One timing of each case with one seed: the report's numbers are consistent with its own timings (never
    checked against a speed)."""
    from fedplan.planner.simulate import executor

    monkeypatch.setattr(executor, "_SHARED", None)  # the benchmark closes its executor: not this process's shared one
    benchmark = load_benchmark("app_load")
    output = tmp_path / "load.json"
    benchmark.main(["--seeds", "1", "--repeat", "1", "--json", str(output)])
    report = json.loads(output.read_text())
    assert report["seeds"] == 1 and report["interactions"] is None and report["worker_memory_before"] > 0
    timings, results = report["timings"], report["results"]
    assert set(results) == {benchmark.ANCHOR, "2 concurrent validations (executor)"}
    (anchor,), (pair,) = timings[benchmark.ANCHOR], timings["2 concurrent validations (executor)"]
    assert len(anchor["run_seconds"]) == 1 and len(pair["run_seconds"]) == 2
    assert pair["seconds"] >= max(pair["run_seconds"]) > 0  # the slower run, from submission to result
    assert results[benchmark.ANCHOR]["ratio"] == 1.0
    assert results["2 concurrent validations (executor)"]["ratio"] == pytest.approx(pair["seconds"] / anchor["seconds"])
    assert "2 concurrent validations (executor)" in capsys.readouterr().out
