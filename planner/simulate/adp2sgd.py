"""A(DP)²SGD (Xu, Zhang, Wang, Algorithm 1, xu L102-113): decentralised asynchronous SGD with per-worker noise.

K workers sit on a graph (:mod:`planner.simulate.graphs`); worker k keeps its own model w_k (rows of W,
all starting at w⁰ = 0). Each global iteration t = 0..T−1 (xu L106-112):

1. one worker k^t becomes active and reads a possibly stale copy ŵ of its model (L88, L141);
2. it averages B of its records' gradients, each clipped to G (Theorem 2's "f_i is G-Lipschitz", L171),
   drawn without replacement (L108), and adds Gaussian noise of std 2Gz/B (z = ``noise_to_sensitivity``: noise
   std / replace-one sensitivity; noise on the *mean* gradient, the convention of the privacy proof L518, erratum XU-1);
3. it averages its model with one neighbour j drawn uniformly from N(k): W ← W A_t (L111, App. A L309);
4. w_k ← w_k − η̄ (g + n) (L112; η̄ is the step on the mean gradient, η = η̄/B in the sum convention).

Because A_t is doubly stochastic, the average model moves by θ^{t+1} = θ^t − (η̄/K)(g + n) (xu L363);
the run records the largest relative residual of that identity (``mean_identity_residual``).

Staleness (``staleness``): ``"event"`` (implementation view, spec §7.4): every worker computes for a
random time (:class:`~planner.simulate.engine.Durations`, one mean per worker for heterogeneous speeds),
reads its model when it starts and applies when it finishes; τ_t = t − (iteration at the read), measured,
and k^t is whoever finishes first (so p_k follows the speeds). ``"fixed"`` and ``"uniform"`` (logical
view, spec §2.1): k^t uniform (or round robin, below), ŵ = column k of W^{t−τ_t} with τ_t = min(t, τ) or
uniform on {0..min(t, τ)}.

Worker order (``worker_order``): ``"random"`` is the paper's k^t, "randomly sample[d]" (xu L107) and
independent of everything else (Assumption 2.2, L139): uniform in the logical view, whoever finishes first in
the event view, so the busiest worker usually makes more than ⌈T/K⌉ updates. ``"round_robin"`` (logical view
only: in the event view the timing decides who is active) sets k^t = t mod K, so every worker makes ⌊T/K⌋ or
⌈T/K⌉ updates: the count of equal-speed workers under App. A's global counter (L309) that a plan's per-worker
accountant assumes (``xu.Setting.worker_steps``). It runs exactly a plan's schedule
(:mod:`planner.plan_validation`); k^t is then neither random nor independent of t, as Theorem 1 assumes
(L125, L139).

Records: one row per iteration with ``grad_norm_sq`` = ‖∇F(θ^t)‖² at the average model *before* update t
(Theorem 1's θ^t, t = 0..T−1; F = (1/K) Σ_k F_k, clients of equal size make it the mean loss; a full pass over
the data, so ``gradient_every`` = k computes it at t = 0, k, 2k, … only and records None elsewhere), ``worker``,
``partner`` and the staleness τ_t.

Privacy (:func:`adp2sgd_ledger`): replace-one neighbours (xu Definition 1, L56). Headline: the tight
accountant per worker (sampling B of n₍₁₎ without replacement, the most updates one worker actually made;
no amplification by worker selection), next to the paper's model (rate γ = B/(K n₍₁₎) over T, valid only
if workers are chosen uniformly, L520), Theorem 2's certificate and the Poisson add/remove reference.
"""

from __future__ import annotations

import dataclasses
import heapq
import time as wallclock
from collections import deque

import numpy as np

from fedplan.bounds import adp2sgd as xu
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.simulate.data import Dataset
from fedplan.planner.simulate.engine import DEFAULT_COMPUTE, Durations, spawn_generators
from fedplan.planner.simulate.graphs import Graph, spectral_gap
from fedplan.planner.simulate.models import is_finite
from fedplan.planner.simulate.problem import Problem, make_problem
from fedplan.planner.simulate.records import Diverged, RoundRecorder, SimulationResult

__all__ = ["STALENESS", "WORKER_ORDERS", "adp2sgd_ledger", "Objective", "run_adp2sgd", "unit_norm_problem"]

STALENESS = ("event", "fixed", "uniform")
#: Who is active at iteration t (module docstring): the paper's random k^t, or k^t = t mod K (logical view only).
WORKER_ORDERS = ("random", "round_robin")
SOURCE = "Xu, Zhang, Wang, A(DP)2SGD, Algorithm 1 (xu L102-113), App. A (L305-311)"


def unit_norm_problem(*, dataset: Dataset, clients: int, seed: int = 0, regularization: float = 0.0) -> Problem:
    """``dataset`` with every row scaled to ‖x‖ = 1, split into clients of equal size, no regularisation.

    Unregularised logistic loss on unit rows has per-example gradient norm ≤ 1 (so clipping at G ≥ 1 never
    binds), smoothness 1/4 and F ≥ 0, the constants the bounds need (spec xu §7.4 test problem 2).
    """
    def unit(X: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        return np.ascontiguousarray(X / np.where(norms > 0, norms, 1.0))

    scaled = dataclasses.replace(dataset, X_train=unit(dataset.X_train), X_test=unit(dataset.X_test))
    clients = check_int("clients", clients, low=1, high=scaled.X_train.shape[0])
    size = scaled.X_train.shape[0] // clients
    return make_problem(dataset=scaled, clients=clients, seed=seed, scheme="sizes", sizes=[size] * clients,
                        regularization=regularization, with_optimum=False)


class Objective:
    """F = (1/K) Σ_k F_k with F_k the mean loss of client k (xu L36, p_k = 1/K; li L64 with f the mean loss).

    Clients of equal size make F the mean loss over their samples (one pass); otherwise F_k are averaged.
    """

    def __init__(self, problem: Problem):
        self.model = problem.model
        equal = len(set(problem.client_sizes)) == 1
        stacked = problem.stacked
        self.parts = ([(stacked.X, stacked.y)] if equal else [(client.X, client.y) for client in problem.clients])

    def value(self, w: np.ndarray) -> float:
        """F(w)."""
        return float(np.mean([self.model.loss(X, y, w) for X, y in self.parts]))

    def gradient(self, w: np.ndarray) -> np.ndarray:
        """∇F(w)."""
        return np.mean([self.model.gradient(X, y, w) for X, y in self.parts], axis=0)


class _Reads:
    """Who is active next and which (stale) model it read: event-driven or the logical view."""

    def __init__(self, mode: str, order: str, workers: int, tau: int, compute: Durations, rngs):
        self.mode, self.order, self.workers, self.tau = mode, order, workers, tau
        self.pick_rng = rngs[0]
        self.history: deque = deque(maxlen=tau + 1)
        if mode == "event":
            self.stream, self.means = compute.stream(rngs[1]), compute.means(workers)
            self.queue: list[tuple[float, int]] = []
            self.snapshots: list[tuple[int, np.ndarray]] = [(0, None)] * workers
            self.now = 0.0

    def start(self, W: np.ndarray) -> None:
        if self.mode == "event":
            for k in range(self.workers):
                self.begin(k, 0, W)
        else:
            self.history.append(W.copy())

    def begin(self, k: int, t: int, W: np.ndarray) -> None:
        self.snapshots[k] = (t, W[k].copy())
        heapq.heappush(self.queue, (self.now + self.means[k] * self.stream.draw(), k))

    def next(self, t: int) -> tuple[int, np.ndarray, int]:
        """(k^t, ŵ, τ_t)."""
        if self.mode == "event":
            self.now, k = heapq.heappop(self.queue)
            read_at, model = self.snapshots[k]
            return k, model, t - read_at
        k = t % self.workers if self.order == "round_robin" else int(self.pick_rng.integers(self.workers))
        limit = min(t, self.tau)
        tau = limit if self.mode == "fixed" else int(self.pick_rng.integers(limit + 1))
        return k, self.history[-1 - tau][k], tau

    def finish(self, k: int, t: int, W: np.ndarray) -> float:
        """Bookkeeping after iteration t; returns the virtual time."""
        if self.mode == "event":
            self.begin(k, t + 1, W)
            return self.now
        self.history.append(W.copy())
        return float(t + 1)


def run_adp2sgd(*, problem: Problem, graph: Graph, steps: int, batch_size: int, learning_rate: float,
                noise_to_sensitivity: float, clipping_norm: float, staleness: str = "event", max_staleness: int = 0,
                worker_order: str = "random", compute: Durations = DEFAULT_COMPUTE, seed: int = 0, delta: float = 1e-5,
                eval_every: int = 1, gradient_every: int = 1, progress=None) -> SimulationResult:
    """Simulate T iterations of A(DP)²SGD (module docstring).

    Parameters
    ----------
    problem : Problem
        One client per worker (``problem.n_clients == graph.workers``).
    steps, batch_size : int
        T ≥ 1 and B in [1, smallest client].
    learning_rate : float
        η̄ > 0, the step on the mean gradient.
    noise_to_sensitivity : float
        Xu's z ≥ 0 (noise std / replace-one sensitivity 2G/B): noise std 2Gz/B on the mean gradient; 0 means no
        noise (not private). ``config["noise_multiplier"]`` is fedplan's σ of the same noise, 2z (noise std /
        clipping norm on the sum of the B clipped gradients).
    clipping_norm : float
        G > 0, per-example ℓ2 clipping.
    staleness : {"event", "fixed", "uniform"}
        Event-driven timing with ``compute`` durations, or the logical view with bound ``max_staleness`` τ.
    worker_order : {"random", "round_robin"}
        The paper's random k^t (xu L107), or k^t = t mod K (⌊T/K⌋ or ⌈T/K⌉ updates per worker), with a logical
        ``staleness`` only (module docstring).
    eval_every, gradient_every : int
        Evaluate loss and accuracy every ``eval_every`` iterations, ‖∇F(θ^t)‖² (a full pass) every ``gradient_every``.
    """
    start = wallclock.perf_counter()
    workers = graph.workers
    if problem.n_clients != workers:
        raise ValueError(f"the problem has {problem.n_clients} clients but the graph has {workers} workers")
    steps = check_int("steps", steps, low=1)
    batch = check_int("batch_size", batch_size, low=1, high=min(problem.client_sizes))
    eta = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    z = check_real("noise_to_sensitivity", noise_to_sensitivity, low=0.0)
    clip = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    mode = check_choice("staleness", staleness, STALENESS)
    order = check_choice("worker_order", worker_order, WORKER_ORDERS)
    if order == "round_robin" and mode == "event":
        raise ValueError("worker_order='round_robin' needs the logical view, staleness 'fixed' or 'uniform' (with "
                         "staleness='event' whoever finishes first is active); got staleness='event'")
    tau = check_int("max_staleness", max_staleness, low=0)
    seed = check_int("seed", seed, low=0)
    every = check_int("gradient_every", gradient_every, low=1)
    std = xu.noise_std(noise_to_sensitivity=z, clipping_norm=clip, batch_size=batch) if z > 0 else 0.0
    rngs = spawn_generators(seed, 5)
    batch_rng, noise_rng, partner_rng = rngs[2:]
    reads = _Reads(mode, order, workers, tau, compute, rngs[:2])
    model = problem.model
    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    objective = Objective(problem)
    W = np.zeros((workers, model.dim))
    theta = W.mean(axis=0)
    reads.start(W)
    updates = np.zeros(workers, dtype=np.int64)
    residual = 0.0
    diverged, message = False, None
    try:
        with np.errstate(all="ignore"):  # divergence is detected and reported, not warned about
            for t in range(steps):
                grad_norm_sq = float(np.sum(objective.gradient(theta) ** 2)) if t % every == 0 else None
                k, read, delay = reads.next(t)
                client = problem.clients[k]
                rows = batch_rng.choice(client.size, batch, replace=False)
                g = model.clipped_gradient_sum(client.X[rows], client.y[rows], read, clip=clip,
                                               row_sq_norms=client.row_sq_norms[rows]) / batch
                noise = std * noise_rng.standard_normal(model.dim)
                j = graph.neighbors[k][int(partner_rng.integers(len(graph.neighbors[k])))]
                W[k] = W[j] = 0.5 * (W[k] + W[j])
                step = eta * (g + noise)
                W[k] -= step
                expected = theta - step / workers
                theta = W.mean(axis=0)
                scale = max(float(np.linalg.norm(expected)), float(np.linalg.norm(step)) / workers, 1e-300)
                residual = max(residual, float(np.linalg.norm(theta - expected)) / scale)
                if not is_finite(theta):
                    raise Diverged(f"the average model stopped being finite at iteration {t}")
                updates[k] += 1
                clock = reads.finish(k, t, W)
                recorder.record(round=t, time=clock, w=theta, staleness=delay, noise=float(np.linalg.norm(noise)),
                                force=t == steps - 1)
                recorder.rows[-1].update(grad_norm_sq=grad_norm_sq, worker=k, partner=j)
            final = recorder.finish(theta)
    except Diverged as error:
        diverged, message = True, str(error)
        final = {"loss": None, "accuracy": None, "dist_sq": None}
    privacy = adp2sgd_ledger(sizes=problem.client_sizes, batch_size=batch, steps=steps,
                             worker_updates=updates.tolist(), noise_to_sensitivity=z, delta=delta)
    delays = [row["staleness"] for row in recorder.rows]
    config = {"source": SOURCE, **problem.describe(), "topology": graph.topology, "workers": workers,
              "rho": spectral_gap(graph), "steps": steps, "batch_size": batch, "learning_rate": eta,
              "noise_to_sensitivity": z, "noise_multiplier": 2 * z, "noise_std": std, "clipping_norm": clip,
              "staleness": mode, "worker_order": order,
              "max_staleness": tau if mode != "event" else None, "seed": seed, "eval_every": recorder.eval_every,
              "gradient_every": every,
              "worker_updates": updates.tolist(), "mean_identity_residual": residual}
    return SimulationResult(algorithm="adp2sgd", rows=tuple(recorder.rows), final=final, privacy=privacy,
                            virtual_time=recorder.rows[-1]["time"] if recorder.rows else 0.0,
                            wall_time_s=wallclock.perf_counter() - start, diverged=diverged, divergence=message,
                            delays={"max_delay": max(delays, default=None),
                                    "mean_delay": float(np.mean(delays)) if delays else None},
                            config=config)


def adp2sgd_ledger(*, sizes, batch_size: int, steps: int, worker_updates, noise_to_sensitivity: float,
                   delta: float) -> dict:
    """ε of an executed run (replace-one neighbours), by four accountings (module docstring).

    ``epsilon`` (the headline) is the tight per-worker ε: sampling B of n₍₁₎ records without replacement
    over the most updates one worker made (WBK'19 Thm 27, no amplification by worker selection).
    """
    updates = [check_int(f"worker_updates[{k}]", n, low=0) for k, n in enumerate(worker_updates)]
    busiest = max(updates)
    result = {"mechanism": "gaussian", "delta": float(delta), "neighboring_relation": xu.NEIGHBORING_RELATION,
              "noise_on": xu.NOISE_ON_MEAN, "worker_updates": updates, "busiest_worker_share": busiest / steps,
              "uniform_share": 1.0 / len(updates)}
    if noise_to_sensitivity == 0:
        return result | {"epsilon": None, "statement": "No noise: the run is not differentially private."}
    setting = xu.Setting(workers=len(updates), examples_per_worker=tuple(sizes), batch_size=batch_size, steps=steps,
                         delta=delta, worker_steps=max(busiest, 1))
    per_worker = xu.tight_epsilon(setting=setting, noise_to_sensitivity=noise_to_sensitivity, sampling="per_worker")
    paper_model = xu.tight_epsilon(setting=setting, noise_to_sensitivity=noise_to_sensitivity, sampling="paper")
    certificate = xu.paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=noise_to_sensitivity)
    reference = xu.poisson_reference(setting=setting, noise_to_sensitivity=noise_to_sensitivity)
    result.update(
        epsilon=per_worker.epsilon, accountant=per_worker.accountant, sampling=per_worker.sampling,
        per_worker=per_worker.to_dict(), paper_model=paper_model.to_dict(),
        theorem2_certificate=certificate.epsilon, theorem2_guarantee=certificate.guarantee,
        poisson_reference={"epsilon": reference.epsilon, "sampling": xu.POISSON_REFERENCE,
                           "neighboring_relation": "add_or_remove_one"},
        statement=(f"Per record, replace-one neighbours: epsilon <= {per_worker.epsilon:.6g} at delta = {delta:g} "
                   f"(tight RDP, {per_worker.sampling}; the busiest worker made {busiest} of {steps} updates). "
                   f"The paper's model (rate gamma = {setting.gamma:.4g} over all {steps} iterations, uniform worker "
                   f"choice, xu L520) gives {paper_model.epsilon:.6g}; Theorem 2 "
                   + (f"certifies {certificate.epsilon:.6g}" if certificate.valid else
                      f"gives {certificate.epsilon:.6g} with no guarantee (failing: "
                      + ", ".join(h.name for h in certificate.hypotheses if not h.holds) + ")")
                   + f"; Poisson add/remove reference {reference.epsilon:.6g}."))
    return result


#: Named runs that take seconds: synthetic logistic data (unit rows), Xu's setting in miniature.
PRESETS = {
    "adp2sgd-ring": {"workers": 8, "topology": "ring", "steps": 3000, "batch_size": 16, "learning_rate": 0.5,
                     "noise_to_sensitivity": 2.0, "clipping_norm": 1.0, "staleness": "event", "n_samples": 4000,
                     "n_features": 20},
    "adp2sgd-case2": {"workers": 9, "topology": "torus", "steps": 3000, "batch_size": 16, "learning_rate": 0.5,
                      "noise_to_sensitivity": 2.0, "clipping_norm": 1.0, "staleness": "event", "n_samples": 4000,
                      "n_features": 20, "compute_means": (10.0,) + (1.0,) * 8},
}


def run_preset(name: str, *, seed: int = 0, delta: float = 1e-5, progress=None) -> SimulationResult:
    """Run preset ``name`` (:data:`PRESETS`): ``adp2sgd-ring`` (K = 8 on a ring, exponential compute times of
    equal mean) or ``adp2sgd-case2`` (K = 9 on a 3 x 3 torus, worker 0 ten times slower: xu Case II, L233)."""
    from fedplan.planner.simulate.data import load_dataset
    from fedplan.planner.simulate.graphs import make_graph

    options = dict(PRESETS[check_choice("preset", name, tuple(PRESETS))])
    data = load_dataset("synthetic", seed=seed, n_samples=options.pop("n_samples"),
                        n_features=options.pop("n_features"))
    means = options.pop("compute_means", 1.0)
    workers, topology = options.pop("workers"), options.pop("topology")
    problem = unit_norm_problem(dataset=data, clients=workers, seed=seed)
    graph = make_graph(topology=topology, workers=workers, seed=seed)
    result = run_adp2sgd(problem=problem, graph=graph, compute=Durations("exponential", means), seed=seed,
                         delta=delta, eval_every=max(1, options["steps"] // 50), progress=progress, **options)
    result.config["preset"] = name
    return result
