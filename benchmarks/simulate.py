"""Benchmark: FedBuff client-update throughput of planner.simulate, against a straightforward prototype.

Setting (the issue's): synthetic logistic regression, 60 000 examples, 100 features, 100 clients, Poisson
local sampling q = 0.01, per-example clipping (C = 1) and client noise (σ = 1), buffer 10, polynomial
staleness weights (1+s)^-1/2, exponential compute times (mean 1) and latencies (mean 10).

(a) Throughput: client updates per second of ``run_fedbuff`` and of the anchor, a straightforward numpy
    prototype (one heap event per update; per update a Bernoulli mask over the client's examples,
    materialised per-example gradients, clipping, noise; the same buffer and weights), measured in the
    same run; their ratio.
(b) Engine vs arithmetic: the run's total time divided by the time of replaying its bare gradient
    arithmetic (the same batches of sampled rows at the same model versions: clipped gradient sums,
    noise and server steps), without events, sampling or bookkeeping.

    python benchmarks/simulate.py                      # 5 000 server rounds (50 000 client updates)
    python benchmarks/simulate.py --rounds 200 --json result.json
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fedplan.planner.simulate import fedbuff  # noqa: E402
from fedplan.planner.simulate.data import load_dataset  # noqa: E402
from fedplan.planner.simulate.problem import make_problem  # noqa: E402

SAMPLES, FEATURES, CLIENTS, RATE, BUFFER, CLIP, SIGMA, LR = 60_000, 100, 100, 0.01, 10, 1.0, 1.0, 0.5


def problem():
    data = load_dataset("synthetic", n_samples=SAMPLES, n_features=FEATURES, seed=0, test_fraction=0.0)
    return make_problem(dataset=data, clients=CLIENTS, seed=0, with_optimum=False)


def prototype(setting, rounds: int, seed: int = 0) -> tuple[int, float]:
    """The anchor: a plain event loop computing each client update on its own. Returns (updates, seconds)."""
    rng = np.random.default_rng(seed)
    model = setting.model
    clients = setting.clients
    start = time.perf_counter()
    w = np.zeros(model.dim)
    heap = []
    for c in range(len(clients)):
        heapq.heappush(heap, (rng.exponential(21.0), c, c, w.copy(), 0))
    buffer, weights, version, updates, sequence = [], [], 0, 0, len(clients)
    while version < rounds:
        now, _, c, w_read, read_version = heapq.heappop(heap)
        data = clients[c]
        mask = rng.random(data.size) < RATE
        X, y = data.X[mask], data.y[mask]
        residual = 1.0 / (1.0 + np.exp(-(X @ w_read))) - y
        grads = residual[:, None] * X + model.rho * w_read
        norms = np.linalg.norm(grads, axis=1)
        grads *= np.minimum(1.0, CLIP / np.maximum(norms, 1e-300))[:, None]
        update = (grads.sum(axis=0) + SIGMA * CLIP * rng.standard_normal(model.dim)) / (RATE * data.size)
        buffer.append(update)
        weights.append((1.0 + version - read_version) ** -0.5)
        updates += 1
        if len(buffer) == BUFFER:
            w = w - LR / BUFFER * (np.asarray(weights) @ np.asarray(buffer))
            buffer, weights, version = [], [], version + 1
        sequence += 1
        heapq.heappush(heap, (now + rng.exponential(21.0), sequence, c, w, version))
    return updates, time.perf_counter() - start


def engine(setting, rounds: int, seed: int = 0):
    """run_fedbuff with its batch trace on. Returns (updates, seconds, trace, run result)."""
    trace: list = []
    start = time.perf_counter()
    result = fedbuff.run_fedbuff(problem=setting, rounds=rounds, sample_rate=RATE, buffer_size=BUFFER, server_lr=LR,
                                 clipping_norm=CLIP, noise_multiplier=SIGMA, staleness="polynomial",
                                 staleness_exponent=0.5, seed=seed, eval_every=rounds, accountant="rdp", trace=trace)
    return result.config["client_updates"], time.perf_counter() - start, trace, result


def bare_arithmetic(setting, trace) -> float:
    """Seconds to replay the run's gradient batches and server steps with nothing else around them."""
    model = setting.model
    X = np.concatenate([client.X for client in setting.clients])
    y = np.concatenate([client.y for client in setting.clients])
    sq = np.concatenate([client.row_sq_norms for client in setting.clients])
    noise = np.random.default_rng(1)
    updates = np.zeros((CLIENTS + BUFFER + 1, model.dim))
    w = np.zeros(model.dim)
    start = time.perf_counter()
    for entry in trace:
        if entry[0] == "batch":
            _, rows, starts, models, batch_model, sizes, _ = entry
            sums = model.clipped_gradient_sums(X[rows], y[rows], models, starts, clip=CLIP, row_sq_norms=sq[rows],
                                               batch_model=batch_model)
            sums += SIGMA * CLIP * noise.standard_normal(sums.shape)
            updates[: len(sizes)] = sums * (1.0 / (RATE * sizes))[:, None]
        else:
            _, slots, weights = entry
            w -= (LR / BUFFER) * (np.asarray(weights) @ updates[np.arange(len(slots))])
    return time.perf_counter() - start


def measure(rounds: int, repeats: int) -> dict:
    setting = problem()
    rows = []
    for repeat in range(repeats):
        proto_updates, proto_seconds = prototype(setting, rounds, seed=repeat)
        updates, seconds, trace, result = engine(setting, rounds, seed=repeat)
        bare = bare_arithmetic(setting, trace)
        rows.append({"prototype_updates_per_s": proto_updates / proto_seconds, "updates_per_s": updates / seconds,
                     "speed_ratio": (updates / seconds) / (proto_updates / proto_seconds),
                     "engine_seconds": seconds, "bare_seconds": bare, "engine_to_arithmetic": seconds / bare,
                     "client_updates": updates, "final_accuracy": result.final["accuracy"],
                     "epsilon": result.epsilon})
    return {"rows": rows, "summary": {
        "median_updates_per_s": statistics.median(r["updates_per_s"] for r in rows),
        "median_prototype_updates_per_s": statistics.median(r["prototype_updates_per_s"] for r in rows),
        "median_speed_ratio": statistics.median(r["speed_ratio"] for r in rows),
        "median_engine_to_arithmetic": statistics.median(r["engine_to_arithmetic"] for r in rows)}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5000, help="server rounds per run (10 client updates each)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (the median is reported)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows and summary as JSON")
    args = parser.parse_args(argv)
    result = measure(args.rounds, args.repeats)
    for row in result["rows"]:
        print(f"prototype {row['prototype_updates_per_s']:>9.0f} updates/s | engine {row['updates_per_s']:>9.0f} "
              f"updates/s | ratio {row['speed_ratio']:5.2f}x | engine {row['engine_seconds']:.3f}s vs bare "
              f"arithmetic {row['bare_seconds']:.3f}s = {row['engine_to_arithmetic']:.2f}x", flush=True)
    summary = result["summary"]
    print()
    print(f"median client updates/s: engine {summary['median_updates_per_s']:.0f}, "
          f"prototype (anchor) {summary['median_prototype_updates_per_s']:.0f}")
    print(f"median speed ratio (engine / prototype): {summary['median_speed_ratio']:.2f}x")
    print(f"median engine time / bare gradient arithmetic: {summary['median_engine_to_arithmetic']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
