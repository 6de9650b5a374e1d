"""Benchmark: two validations launched at once from the app take about as long as one (issue 20, item 5).

The page ``app_pages/7_Validate.py`` submits its request to the process's executor
(:func:`fedplan.planner.simulate.executor.shared`: a Dask LocalCluster of one single-threaded worker per core, or the
scheduler ``FEDPLAN_SCHEDULER`` names) and polls the job; this benchmark does the same without a browser, with the
page's default van Dijk validation (62 500 synthetic examples over 5 clients, 2 seeds; ``--seeds`` changes it).

Anchor: one validation alone through the executor, measured in the same run. Then two submitted at once, timed from
submission to result as a session sees it (the slower of the two); the ratio is that over the anchor (target: 1.3 or
less with two cores). ``--threads`` also times the old path for comparison: the same two runs in threads of this
process (what the page did before: the server process ran every validation, about one core for all). Each is timed
``--repeat`` times after one warm-up of two concurrent runs (each worker builds its first data set); the medians
are reported with their ranges, with the CPU seconds of the runs (the same alone and together when each has a core:
a ratio above 1 with a CPU share below 1 is other programs taking the cores), the CPU seconds this process spent
while the runs went (its polling; the work itself when the runs are its threads) and the load average before and
after (other programs on the machine slow both sides of the ratio).

With ``--interactions PAGE`` (a page file, e.g. ``1_Accountant.py``) it also drives that page in Chromium (a
``streamlit run app.py`` of its own, the browser benchmark's scripted interactions and timing,
:mod:`benchmarks.app`): the interactions' times idle, then while two validations of ``--busy-seeds`` seeds run on
the cluster (only interactions that finished while both were still running count), with their p95 against the
300 ms target (issue 20: "interactions on other pages staying under the p95 target meanwhile").

    python benchmarks/app_load.py
    python benchmarks/app_load.py --repeat 5 --threads --json result.json
    python benchmarks/app_load.py --repeat 1 --interactions 1_Accountant.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedplan.planner.simulate.executor import Executor, shared  # noqa: E402
from fedplan.planner.tasks.validate import ValidateVandijk  # noqa: E402

ANCHOR = "1 validation alone (anchor)"


def page_request(seeds: int) -> ValidateVandijk:
    """The page's default van Dijk validation (its widgets' defaults and VANDIJK_PLAN; 10 000 training examples a
    client: 62 500 × 0.8 / 5)."""
    return ValidateVandijk(dataset="synthetic", n_samples=62500, clients=5, seeds=tuple(range(seeds)),
                           target_epsilon=1.0, target_delta=1e-6, epochs=2.5, learning_rate=0.15, clipping_norm=0.1,
                           test_fraction=0.2, client_size=10000, initial_size=16, noise_multiplier_range=(1.2, 200.0),
                           r0="1/e", no_pld=True)


def timed(runner: Executor, request, count: int) -> dict:
    """``count`` copies of ``request`` submitted at once: the slowest's wall seconds (submission to result, as the
    page polls), each run's own compute seconds, where they ran, and this process's CPU seconds meanwhile."""
    cpu, start = time.process_time(), time.perf_counter()
    jobs = [runner.submit(request) for _ in range(count)]
    while not all(job.done() for job in jobs):
        for job in jobs:
            job.progress()  # as the page does between its looks
        time.sleep(0.2)
    outcomes = [job.result() for job in jobs]
    return {"seconds": time.perf_counter() - start, "run_seconds": [o.seconds for o in outcomes],
            "run_cpu_seconds": [o.cpu_seconds for o in outcomes],
            "where": sorted({o.where for o in outcomes}), "caller_cpu_seconds": time.process_time() - cpu}


def worker_memory(runner: Executor) -> int:
    """Resident bytes of all the cluster's worker processes now."""
    return sum(runner.client.run(lambda dask_worker: dask_worker.monitor.proc.memory_info().rss).values())


def summary(times: list[dict], anchor: float | None) -> dict:
    seconds = [item["seconds"] for item in times]
    median = statistics.median(seconds)
    return {"median_s": median, "min_s": min(seconds), "max_s": max(seconds),
            "ratio": None if anchor is None else median / anchor,
            "caller_cpu_s": statistics.median(item["caller_cpu_seconds"] for item in times),
            "run_cpu_s": statistics.median(max(item["run_cpu_seconds"]) for item in times),
            "cpu_share": statistics.median(sum(item["run_cpu_seconds"]) / sum(item["run_seconds"]) for item in times),
            "where": sorted({where for item in times for where in item["where"]})}


def _app_benchmark():
    """``benchmarks/app.py`` by its path (an installed ``benchmarks`` package shadows this folder)."""
    spec = importlib.util.spec_from_file_location("fedplan_benchmark_app", Path(__file__).with_name("app.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while the module executes
    spec.loader.exec_module(module)
    return module


def interactions_meanwhile(runner: Executor, request, page_file: str, *, rounds: int, timeout_s: float = 120.0) -> dict:
    """The page's scripted interactions (ms, each from its input event until the rerun is painted), ``rounds``
    times idle, then repeatedly while two copies of ``request`` run on ``runner``; each round on a new session."""
    from playwright.sync_api import sync_playwright

    bench = _app_benchmark()
    scenario = bench.SCENARIOS[page_file]
    with (bench.browser.streamlit_server([sys.executable, "-m", "streamlit", "run", "app.py"]) as url,
          sync_playwright() as playwright):
        chromium = bench.browser.launch(playwright)

        def context_of():
            context = chromium.new_context(viewport=bench.VIEWPORT)
            context.add_init_script(bench.INIT_SCRIPT)
            return context

        def session(keep: Callable[[], bool]) -> list[float]:
            seconds, page, _ = bench.first_load(context_of, url, scenario, timeout_s)
            timed = []
            for step in scenario.steps if seconds is not None else ():
                row = bench.interaction(page, step, timeout_s)
                if row["ms"] is not None and keep():
                    timed.append(row["ms"])
            page.context.close()
            return timed

        try:
            session(lambda: True)  # warm-up: the page's modules and caches
            idle = [ms for _ in range(rounds) for ms in session(lambda: True)]
            jobs = [runner.submit(request) for _ in range(2)]
            busy: list[float] = []
            while not any(job.done() for job in jobs):
                busy += session(lambda: not any(job.done() for job in jobs))
            for job in jobs:
                job.result()
        finally:
            chromium.close()
    return {"page": page_file, "idle_ms": idle, "busy_ms": busy,
            "idle_p95_ms": bench.nearest_rank(idle, 0.95), "busy_p95_ms": bench.nearest_rank(busy, 0.95),
            "target_ms": bench.INTERACTION_TARGET_MS}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="seeds of the validation (the page's default: 2)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per case (median reported)")
    parser.add_argument("--threads", action="store_true",
                        help="also time 2 concurrent runs in threads of this process (the old in-server path)")
    parser.add_argument("--interactions", metavar="PAGE",
                        help="also time this page's interactions in Chromium, idle and during 2 validations")
    parser.add_argument("--busy-seeds", type=int, default=5,
                        help="seeds of the validations run during the interactions (longer than the page default)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    request = page_request(args.seeds)
    load_before = os.getloadavg()
    started = time.perf_counter()
    runner = shared()
    runner.wait_ready()
    print(f"executor: {runner.backend} ({runner.workers()} workers), ready in {time.perf_counter() - started:.1f} s; "
          f"{os.cpu_count()} cores; load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    timed(runner, request, 2)  # warm-up: each worker builds its first data set
    memory_before = worker_memory(runner)
    cases = {ANCHOR: (runner, 1), "2 concurrent validations (executor)": (runner, 2)}
    if args.threads:
        cases["2 concurrent validations (threads of this process, old path)"] = (Executor(scheduler="process"), 2)
    times: dict[str, list[dict]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, (where, count) in cases.items():  # alternated, so a change of load hits every case
            times[name].append(timed(where, request, count))
    anchor = statistics.median(item["seconds"] for item in times[ANCHOR])
    results = {name: summary(items, anchor) for name, items in times.items()}
    load_after, memory_after = os.getloadavg(), worker_memory(runner)
    runs = sum(count for where, count in cases.values() if where is runner) * args.repeat
    print(f"van Dijk validation, page defaults, {args.seeds} seed(s); {args.repeat} timings each")
    print(f"{'case':<64} {'median s':>9} {'range s':>13} {'ratio':>6} {'run CPU s':>10} {'CPU share':>10} "
          f"{'caller CPU s':>13}")
    for name, row in results.items():
        print(f"{name:<64} {row['median_s']:>9.2f} {row['min_s']:>6.2f}-{row['max_s']:<6.2f} {row['ratio']:>6.2f} "
              f"{row['run_cpu_s']:>10.2f} {row['cpu_share']:>10.2f} {row['caller_cpu_s']:>13.2f}")
    print("run CPU s: CPU seconds of the slowest run's thread; CPU share: the runs' CPU seconds over their wall "
          "seconds (1: each run had a core to itself; lower: it waited for one)")
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} "
          "(other programs on these cores slow the concurrent runs more than the anchor)")
    print(f"workers' resident memory: {memory_before / 2**20:.0f} MiB after the warm-up, {memory_after / 2**20:.0f} "
          f"MiB after {runs} more runs")
    meanwhile = None
    if args.interactions:
        meanwhile = interactions_meanwhile(runner, page_request(args.busy_seeds), args.interactions,
                                           rounds=args.repeat)
        print(f"{args.interactions} interactions in Chromium: p95 {meanwhile['idle_p95_ms']:.0f} ms idle "
              f"({len(meanwhile['idle_ms'])} timed), {meanwhile['busy_p95_ms'] or float('nan'):.0f} ms while 2 "
              f"validations of {args.busy_seeds} seeds ran ({len(meanwhile['busy_ms'])} timed); target "
              f"{meanwhile['target_ms']:.0f} ms")
    report = {"backend": runner.backend, "worker_memory_before": memory_before, "worker_memory_after": memory_after,
              "interactions": meanwhile,
              "cores": os.cpu_count(), "seeds": args.seeds, "repeat": args.repeat,
              "load_before": load_before, "load_after": load_after, "results": results,
              "timings": {name: items for name, items in times.items()}}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    runner.close()
    return report


if __name__ == "__main__":
    main()
