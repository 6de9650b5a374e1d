"""Benchmark: PLD calibration of σ, fedplan against dp-accounting, measured in the same run.

Grid of anchors.md §2.3: ε ∈ {1, 2, 8} × q ∈ {1e-3, 1e-2, 1e-1} × T ∈ {1e3, 1e4, 1e5}, δ = 1e-5.
Anchor: dp-accounting's ``calibrate_dp_mechanism`` with ``PLDAccountant()`` defaults (spacing 1e-4,
default bracket and tolerance), the calibration users reach for today.

For each point it prints σ_ours, σ_theirs, their relative difference, both wall times and the speed
ratio; fedplan's RDP calibration time ("RDP-grade answer"); and whether our ε is ≤ target, re-checked
independently at half our PLD spacing (a tighter bound than the one we report). Then the median and
worst per-point speed ratio, the ratio of worst-case times, and the largest σ difference.

    python benchmarks/accounting.py                 # the full grid (several minutes: the anchor is slow)
    python benchmarks/accounting.py --only 1,0.01,10000 --json results.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dp_accounting import dp_event, mechanism_calibration  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402

from fedplan.bounds import accounting, pld  # noqa: E402

DELTA = 1e-5
GRID = list(itertools.product((1.0, 2.0, 8.0), (1e-3, 1e-2, 1e-1), (1_000, 10_000, 100_000)))


def dp_accounting_pld_sigma(epsilon: float, q: float, steps: int) -> float:
    """The anchor: dp-accounting's own calibration with PLDAccountant() defaults."""
    def make_event(sigma: float):
        return dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    return mechanism_calibration.calibrate_dp_mechanism(pld_privacy_accountant.PLDAccountant, make_event,
                                                        epsilon, DELTA)


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start


def measure(epsilon: float, q: float, steps: int) -> dict:
    accounting.clear_cache()
    ours, ours_seconds = timed(accounting.calibrate_noise_multiplier, target_epsilon=epsilon, target_delta=DELTA,
                               sample_rate=q, steps=steps, time_budget=None)
    accounting.clear_cache()
    rdp, rdp_seconds = timed(accounting.calibrate_noise_multiplier, target_epsilon=epsilon, target_delta=DELTA,
                             sample_rate=q, steps=steps, accountant="rdp")
    theirs, theirs_seconds = timed(dp_accounting_pld_sigma, epsilon, q, steps)
    recheck = pld.epsilon_at_spacing([(q, ours.value, steps)], DELTA, ours.pld_spacing / 2)
    return {
        "epsilon": epsilon, "sample_rate": q, "steps": steps,
        "sigma_ours": ours.value, "sigma_theirs": theirs, "sigma_rdp": rdp.value,
        "relative_difference": ours.value / theirs - 1,
        "seconds_ours": ours_seconds, "seconds_theirs": theirs_seconds, "seconds_rdp": rdp_seconds,
        "speed_ratio": theirs_seconds / ours_seconds,
        "epsilon_ours": ours.epsilon, "epsilon_recheck_half_spacing": recheck,
        "within_target": ours.epsilon <= epsilon and recheck <= epsilon,
        "accountant": ours.accountant, "spacing": ours.pld_spacing,
    }


def summarise(rows: list[dict]) -> dict:
    ratios = [row["speed_ratio"] for row in rows]
    return {
        "points": len(rows),
        "median_speed_ratio": statistics.median(ratios),
        "worst_speed_ratio": min(ratios),
        "worst_case_time_ratio": max(r["seconds_theirs"] for r in rows) / max(r["seconds_ours"] for r in rows),
        "median_seconds_ours": statistics.median(r["seconds_ours"] for r in rows),
        "max_seconds_ours": max(r["seconds_ours"] for r in rows),
        "median_seconds_theirs": statistics.median(r["seconds_theirs"] for r in rows),
        "max_seconds_theirs": max(r["seconds_theirs"] for r in rows),
        "max_abs_sigma_difference_percent": 100 * max(abs(r["relative_difference"]) for r in rows),
        "all_within_target": all(r["within_target"] for r in rows),
        "all_pld": all(r["accountant"] == "pld" for r in rows),
        "max_seconds_rdp": max(r["seconds_rdp"] for r in rows),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", metavar="EPS,Q,T", help="run one grid point instead of all 27")
    parser.add_argument("--json", metavar="FILE", help="also write the rows and summary as JSON")
    args = parser.parse_args(argv)
    points = GRID
    if args.only:
        epsilon, q, steps = args.only.split(",")
        points = [(float(epsilon), float(q), int(float(steps)))]

    header = (f"{'eps':>4} {'q':>6} {'T':>7} | {'sigma_ours':>11} {'sigma_dpacc':>11} {'diff%':>7} | "
              f"{'t_ours':>7} {'t_dpacc':>7} {'ratio':>6} | {'sigma_rdp':>9} {'t_rdp':>6} | eps<=target")
    print(header)
    print("-" * len(header))
    rows = []
    for epsilon, q, steps in points:
        row = measure(epsilon, q, steps)
        rows.append(row)
        print(f"{epsilon:>4g} {q:>6g} {steps:>7d} | {row['sigma_ours']:>11.6g} {row['sigma_theirs']:>11.6g} "
              f"{100 * row['relative_difference']:>+7.3f} | "
              f"{row['seconds_ours']:>6.2f}s {row['seconds_theirs']:>6.2f}s "
              f"{row['speed_ratio']:>6.1f} | {row['sigma_rdp']:>9.5g} {1000 * row['seconds_rdp']:>4.0f}ms | "
              f"{row['within_target']}", flush=True)
    summary = summarise(rows)
    print()
    print(f"median speed ratio (dp-accounting time / ours): {summary['median_speed_ratio']:.1f}x")
    print(f"worst per-point speed ratio:                    {summary['worst_speed_ratio']:.1f}x")
    print(f"worst-case time ratio (max theirs / max ours):  {summary['worst_case_time_ratio']:.1f}x "
          f"({summary['max_seconds_theirs']:.2f}s vs {summary['max_seconds_ours']:.2f}s)")
    print(f"median time: ours {summary['median_seconds_ours']:.2f}s, "
          f"dp-accounting {summary['median_seconds_theirs']:.2f}s")
    print(f"largest |sigma_ours / sigma_dpacc - 1|:         {summary['max_abs_sigma_difference_percent']:.3f} %")
    print(f"every epsilon <= target (re-checked at half spacing): {summary['all_within_target']}; "
          f"all answers from PLD: {summary['all_pld']}")
    print(f"slowest RDP calibration: {1000 * summary['max_seconds_rdp']:.1f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
