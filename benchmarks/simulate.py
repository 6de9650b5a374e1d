"""Benchmark: FedBuff client updates per CPU-second of planner.simulate, against bare numpy, over N and d.

What is measured: the CPU time (``time.process_time``) of a whole ``run_fedbuff`` call (events, arithmetic,
per-round records, the final evaluation and the privacy ledger) for clients N ∈ {10, 100, 1 000, 10 000,
100 000} at d = 100 features and for d ∈ {10, 100, 1 000, 10 000} at N = 100; printed as client updates per
CPU-second and as the ratio of its CPU time to the anchor's (issue 18 asks for every ratio ≤ 1.3).

Setting: fedplan's synthetic logistic regression with n = max(60 000, 6 N) examples, at most 60 M numbers
(n ≤ 6·10⁷/d, so every client holds data and no cell needs more than 480 MB), all of them training data, split
iid over the N clients; Poisson local sampling q = 0.01, per-example clipping C = 1, client noise σ = 1,
buffer K = 10, server learning rate 0.5, polynomial staleness weights (1+s)^-1/2, exponential compute times
(mean 1) and latencies (mean 10). Rounds per cell (:data:`ROUNDS`) are chosen so that one engine run takes
about 2 CPU seconds here; ``--scale`` multiplies them.

Anchor, measured in the same run and alternating with the engine: bare numpy written below, independent of
fedplan's models and engines: a synchronous buffered loop that, every server round, draws K clients
uniformly, takes each one's Poisson batch as a Bernoulli mask over its examples, materialises the
per-example logistic gradients, clips them to C, sums them per client (one-hot product), adds N(0, σ²C²)
noise, divides by q·n_c and averages the K updates into the model (synchronous: no staleness, every weight
1); vectorised over the K updates of a round.
It does the same number of client updates (rounds × K) with the same q, K, data and client sizes. The ratio
is the median engine CPU time over the median anchor CPU time of ``--repeats`` alternating runs.

CPU time counts every thread of the process, so BLAS is limited to one thread (set before numpy loads):
idle helper threads spinning would otherwise count as work.

    python benchmarks/simulate.py                      # the whole grid, about 3 minutes on 2 cores
    python benchmarks/simulate.py --clients 10 100 --dims 10 --scale 0.05 --repeats 1 --json result.json
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fedplan.planner.simulate.data import load_dataset  # noqa: E402
from fedplan.planner.simulate.fedbuff import run_fedbuff  # noqa: E402
from fedplan.planner.simulate.problem import make_problem  # noqa: E402

RATE, BUFFER, CLIP, SIGMA, LR = 0.01, 10, 1.0, 1.0, 0.5
TARGET = 1.3
CLIENTS, DIMS = (10, 100, 1_000, 10_000, 100_000), (10, 100, 1_000, 10_000)
#: The N sweep is at this d, the d sweep at this N.
BASE_CLIENTS, BASE_DIM = 100, 100
MIN_EXAMPLES, EXAMPLES_PER_CLIENT, MAX_NUMBERS = 60_000, 6, 60_000_000
#: Server rounds of one run per cell (N, d): about 2 CPU seconds of the engine here.
ROUNDS = {(10, 100): 3_000, (100, 100): 10_000, (1_000, 100): 16_000, (10_000, 100): 25_000,
          (100_000, 100): 25_000, (100, 10): 10_000, (100, 1_000): 3_000, (100, 10_000): 800}


def examples(clients: int, dim: int) -> int:
    return min(max(MIN_EXAMPLES, EXAMPLES_PER_CLIENT * clients), MAX_NUMBERS // dim)


@functools.lru_cache(maxsize=1)
def dataset(n: int, dim: int):
    """The synthetic set of a cell (the N sweep's first cells share one)."""
    return load_dataset("synthetic", n_samples=n, n_features=dim, seed=0, test_fraction=0.0)


def engine(problem, rounds: int) -> tuple[int, float]:
    """(client updates, CPU seconds) of one ``run_fedbuff`` run."""
    start = time.process_time()
    result = run_fedbuff(problem=problem, rounds=rounds, sample_rate=RATE, buffer_size=BUFFER, server_lr=LR,
                         clipping_norm=CLIP, noise_multiplier=SIGMA, staleness="polynomial", staleness_exponent=0.5,
                         seed=0, eval_every=rounds, accountant="rdp")
    return result.config["client_updates"], time.process_time() - start


@np.errstate(over="ignore")
def anchor(X: np.ndarray, y: np.ndarray, clients: int, rounds: int, seed: int = 0) -> tuple[int, float]:
    """(client updates, CPU seconds) of the bare-numpy loop (module docstring) on the same data and sizes.

    exp(−score) may overflow for very negative scores: 1/(1 + inf) = 0 is then the right sigmoid.
    """
    rng = np.random.default_rng(seed)
    n, dim = X.shape
    bounds = np.linspace(0, n, clients + 1).astype(np.int64)  # iid data: consecutive blocks are an iid split
    offsets, sizes = bounds[:-1], np.diff(bounds)
    width, labels, rho = np.arange(sizes.max()), np.arange(BUFFER)[:, None], 1.0 / n
    start = time.process_time()
    w = np.zeros(dim)
    for _ in range(rounds):
        chosen = rng.integers(clients, size=BUFFER)
        own = sizes[chosen]
        owner, local = np.nonzero((rng.random((BUFFER, width.size)) < RATE) & (width < own[:, None]))
        rows = offsets[chosen][owner] + local
        Xb = X[rows]
        grads = (1.0 / (1.0 + np.exp(-(Xb @ w))) - y[rows])[:, None] * Xb + rho * w
        grads *= np.minimum(1.0, CLIP / np.maximum(np.sqrt(np.einsum("ij,ij->i", grads, grads)), 1e-300))[:, None]
        sums = (owner == labels).astype(float) @ grads
        updates = (sums + SIGMA * CLIP * rng.standard_normal((BUFFER, dim))) / (RATE * own)[:, None]
        w -= LR / BUFFER * updates.sum(axis=0)
    return rounds * BUFFER, time.process_time() - start


def cells(clients, dims) -> list[tuple[int, int]]:
    grid = [(n, BASE_DIM) for n in clients] + [(BASE_CLIENTS, d) for d in dims]
    return sorted(set(grid), key=grid.index)


def measure(clients: int, dim: int, *, scale: float, repeats: int) -> dict:
    n = examples(clients, dim)
    data = dataset(n, dim)
    problem = make_problem(dataset=data, clients=clients, seed=0, with_optimum=False)
    rounds = max(1, round(scale * ROUNDS.get((clients, dim), 2_000)))
    engine_s, anchor_s = [], []
    for _ in range(repeats):
        updates, seconds = engine(problem, rounds)
        engine_s.append(seconds)
        anchor_updates, seconds = anchor(data.X_train, data.y_train, clients, rounds)
        anchor_s.append(seconds)
    engine_time, anchor_time = statistics.median(engine_s), statistics.median(anchor_s)
    return {"clients": clients, "dim": dim, "examples": n, "rounds": rounds, "client_updates": updates,
            "anchor_updates": anchor_updates, "engine_cpu_s": engine_time, "anchor_cpu_s": anchor_time,
            "updates_per_cpu_s": updates / engine_time, "anchor_updates_per_cpu_s": anchor_updates / anchor_time,
            "ratio": engine_time / anchor_time}


def table(key: str, rows: list[dict]) -> list[str]:
    """Markdown table of the sweep over ``key`` ("clients" or "dim"), the other one at its base value."""
    fixed, value = ("dim", BASE_DIM) if key == "clients" else ("clients", BASE_CLIENTS)
    name = {"clients": "N", "dim": "d"}
    lines = [f"{name[key]} sweep ({name[fixed]} = {value})", f"| {name[key]:>7} | examples | client updates | "
             "engine updates/CPU-s | anchor updates/CPU-s | ratio |", "|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        if row[fixed] == value:
            lines.append(f"| {row[key]:>7} | {row['examples']:>8} | {row['client_updates']:>14} | "
                         f"{row['updates_per_cpu_s']:>20.0f} | {row['anchor_updates_per_cpu_s']:>20.0f} | "
                         f"{row['ratio']:5.2f} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=CLIENTS, help=f"N of the sweep at d = {BASE_DIM}")
    parser.add_argument("--dims", type=int, nargs="+", default=DIMS, help=f"d of the sweep at N = {BASE_CLIENTS}")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every cell's server rounds")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs of each (medians are compared)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = []
    for clients, dim in cells(args.clients, args.dims):
        rows.append(measure(clients, dim, scale=args.scale, repeats=args.repeats))
        row = rows[-1]
        print(f"N={clients} d={dim}: {row['updates_per_cpu_s']:.0f} updates/CPU-s, ratio {row['ratio']:.2f} "
              f"({row['engine_cpu_s']:.2f} s vs {row['anchor_cpu_s']:.2f} s)", flush=True)
    for key in ("clients", "dim"):
        print()
        print("\n".join(table(key, rows)))
    worst = max(rows, key=lambda row: row["ratio"])
    print(f"\nworst ratio (engine CPU time / bare numpy): {worst['ratio']:.2f} at N={worst['clients']}, "
          f"d={worst['dim']} (issue 18's target: every ratio <= {TARGET})")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
