"""FedBuff-style buffered asynchronous aggregation with staleness weights, the familiar baseline.

Every client is always busy: it downloads the current model (version v), computes one local update and
uploads it. A client update is Δ = (Σ_{j∈B} clip(g_j) + σC·n)/(q N_c): the Poisson batch B (each local
example with probability q) of per-example gradients clipped to C, Gaussian noise added by the client
(local DP), divided by the expected batch size. The server keeps a buffer; an update arriving at version
v' is weighted by ω(v' − v) (staleness s = current version − the update's version) and once ``buffer_size``
updates are in, w ← w − η Σ ω_j Δ_j / K and the version increases (Nguyen et al. 2022, FedBuff; weight
families as in FLSim: constant, polynomial (1+s)^−a, threshold).

Engine tricks (the per-update arithmetic is tiny, Python overhead dominates): one heap event per
update (arrival at the server = download + compute + upload draws, from vectorised unit streams); the
gradients of all updates that read version v are computed together in one vectorised batch when the
server leaves version v (their model is fixed by then); update vectors live in a preallocated array
with a free list. Loss and accuracy are evaluated every ``eval_every`` server rounds.

Privacy: each arrival is one Poisson-subsampled Gaussian release (q, σ) of that client's data
(weights ω ≤ 1 only shrink the sensitivity); the ledger composes every client's releases.
"""

from __future__ import annotations

import heapq
import math
import time as wallclock

import numpy as np

from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.export import Schedule
from fedplan.planner.simulate.engine import DEFAULT_COMPUTE, DEFAULT_LATENCY, Durations, spawn_generators
from fedplan.planner.simulate.models import is_finite
from fedplan.planner.simulate.problem import Problem
from fedplan.planner.simulate.records import Diverged, RoundRecorder, SimulationResult, gaussian_ledger

__all__ = ["STALENESS_WEIGHTS", "run_fedbuff", "staleness_weight"]

STALENESS_WEIGHTS = ("constant", "polynomial", "threshold")
SOURCE = "FedBuff (Nguyen et al. 2022), staleness weights as in FLSim"


def staleness_weight(staleness, *, kind: str = "polynomial", exponent: float = 0.5, cutoff: int = 10,
                     value_after_cutoff: float = 0.0):
    """ω(s) ∈ [0, 1]: ``constant`` 1, ``polynomial`` (1+s)^−a, ``threshold`` 1 if s ≤ cutoff else a value."""
    kind = check_choice("staleness", kind, STALENESS_WEIGHTS)
    s = np.asarray(staleness, dtype=float)
    if kind == "constant":
        return np.ones_like(s)
    if kind == "polynomial":
        return (1.0 + s) ** -check_real("staleness_exponent", exponent, low=0.0)
    cutoff = check_int("staleness_cutoff", cutoff, low=0)
    value = check_real("value_after_cutoff", value_after_cutoff, low=0.0, high=1.0)
    return np.where(s <= cutoff, 1.0, value)


class _TripTimes:
    """Per client, download + compute + upload durations of successive updates, drawn in vectorised blocks."""

    BLOCK = 256

    def __init__(self, compute: Durations, uplink: Durations, downlink: Durations, rngs, clients: int):
        self.streams = (downlink.stream(rngs[0]), compute.stream(rngs[1]), uplink.stream(rngs[2]))
        self.means = np.array([downlink.means(clients), compute.means(clients), uplink.means(clients)])
        self.values: list[list[float]] = [[] for _ in range(clients)]

    def refill(self, client: int) -> list[float]:
        draws = np.array([stream.block(self.BLOCK) for stream in self.streams])
        values = (self.means[:, client, None] * draws).sum(axis=0).tolist()
        values.reverse()
        self.values[client] = values
        return values


class _PoissonBatches:
    """Poisson batches of successive client updates, drawn ahead in vectorised blocks of :attr:`BLOCK` updates.

    Update j's batch holds each local example independently with probability q: a Bernoulli process drawn
    by geometric gaps (positions cumsum(gaps) − 1) up to the largest client size; positions beyond the
    client's own size are dropped when the update is assigned to a client.
    """

    BLOCK = 2048

    def __init__(self, rate: float, width: int, rng: np.random.Generator):
        self.rate, self.width, self.rng = rate, width, rng
        self.base = 0
        self.positions = np.zeros(0, dtype=np.int64)
        self.starts = np.zeros(1, dtype=np.int64)

    def _draw(self) -> None:
        q, size = self.rate, self.width
        columns = int(np.ceil(q * size + 6.0 * np.sqrt(q * size) + 8))
        positions = np.cumsum(self.rng.geometric(q, size=(self.BLOCK, columns)), axis=1) - 1
        while np.any(positions[:, -1] < size - 1):
            more = np.cumsum(self.rng.geometric(q, size=(self.BLOCK, columns)), axis=1) + positions[:, -1:]
            positions = np.concatenate((positions, more), axis=1)
        inside = positions < size
        counts = inside.sum(axis=1)
        kept = self.starts[-1] - self.starts[0]
        self.positions = np.concatenate((self.positions[self.starts[0]:], positions[inside]))
        self.starts = np.concatenate((self.starts - self.starts[0], kept + np.cumsum(counts)))

    def take(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(local positions, per-update counts) of updates ``first..stop−1`` (consecutive, never re-taken)."""
        drop = first - self.base
        self.starts, self.base = self.starts[drop:], first
        while len(self.starts) - 1 < stop - first:
            self._draw()
        lo, hi = self.starts[0], self.starts[stop - first]
        counts = np.diff(self.starts[: stop - first + 1])
        return self.positions[lo:hi], counts


class _Buffered:
    """State of one FedBuff run (see :func:`run_fedbuff`)."""

    def __init__(self, problem: Problem, *, rate: float, buffer_size: int, lr: float, clip, sigma: float,
                 weights: np.ndarray, weight_of, trips: _TripTimes, rngs, recorder: RoundRecorder):
        self.problem, self.model = problem, problem.model
        self.rate, self.K, self.lr, self.clip, self.sigma = rate, buffer_size, lr, clip, sigma
        self.weights = weights.tolist()
        self.weight_of = weight_of
        self.recorder = recorder
        self.trips = trips
        n = problem.n_clients
        sizes = np.array(problem.client_sizes)
        self.sizes = sizes
        self.offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        stacked = problem.stacked
        self.X, self.y, self.sq = stacked.X, stacked.y, stacked.row_sq_norms
        self.mean_size = float(sizes.mean())
        self.noise_rng = rngs[1]
        self.batches = _PoissonBatches(rate, int(sizes.max()), rngs[0])
        self.equal_sizes = bool(np.all(sizes == sizes[0]))
        self.computed = 0  # updates (in dispatch order) whose gradients are computed
        capacity = n + buffer_size + 1
        self.updates = np.zeros((capacity, self.model.dim))
        self.free = list(range(capacity))
        self.w = np.zeros(self.model.dim)
        self.version = 0
        #: Models of the versions that pending (not yet computed) updates read, keyed by version.
        self.snapshots: dict[int, np.ndarray] = {0: self.w.copy()}
        self.pending_clients: list[int] = []
        self.pending_slots: list[int] = []
        self.pending_versions: list[int] = []
        #: With a list here, every batch of gradients and every server step is logged (benchmarks replay it).
        self.trace: list | None = None
        self.releases = [0] * n
        self.now = 0.0

    def compute_pending(self) -> None:
        """Every dispatched update not yet computed, in one vectorised batch (each at the version it read)."""
        clients = np.array(self.pending_clients)
        slots = self.pending_slots
        versions = np.array(self.pending_versions)
        sizes = self.sizes[clients]
        local, counts = self.batches.take(self.computed, self.computed + clients.size)
        self.computed += clients.size
        if not self.equal_sizes:
            owner = np.repeat(np.arange(clients.size), counts)
            inside = local < sizes[owner]
            counts = np.bincount(owner[inside], minlength=clients.size)
            local = local[inside]
        rows = np.repeat(self.offsets[clients], counts) + local
        starts = np.zeros(clients.size + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        used = np.unique(versions)
        models = np.array([self.snapshots[v] for v in used.tolist()])
        batch_model = np.searchsorted(used, versions)
        if self.trace is not None:
            self.trace.append(("batch", rows, starts, models, batch_model, sizes, list(slots)))
        sums = self.model.clipped_gradient_sums(self.X[rows], self.y[rows], models, starts, clip=self.clip,
                                                row_sq_norms=self.sq[rows], batch_model=batch_model)
        if self.sigma > 0:
            sums += (self.sigma * self.clip) * self.noise_rng.standard_normal(sums.shape)
        self.updates[slots] = sums * (1.0 / (self.rate * sizes))[:, None]
        self.pending_clients, self.pending_slots, self.pending_versions = [], [], []
        self.snapshots = {self.version: self.snapshots[self.version]}

    def aggregate(self, slots: list[int], weights: list[float], staleness: int) -> None:
        if self.trace is not None:
            self.trace.append(("step", slots, weights))
        step = np.asarray(weights) @ self.updates[slots]
        self.w -= (self.lr / self.K) * step
        self.free.extend(slots)
        if not is_finite(self.w):
            raise Diverged(f"the model stopped being finite at server round {self.version} (time {self.now:g})")
        noise = self.sigma * (self.clip or 0.0) * math.sqrt(sum(w * w for w in weights)) * self.lr / self.K
        self.recorder.record(round=self.version, time=self.now, w=self.w, staleness=staleness / self.K,
                             noise=noise / (self.rate * self.mean_size))
        self.version += 1
        self.snapshots[self.version] = self.w.copy()

    def dispatch(self, client: int, now: float, sequence: int, heap: list) -> None:
        """The client downloads the current model; its update arrives after download + compute + upload."""
        slot = self.free.pop()
        self.pending_clients.append(client)
        self.pending_slots.append(slot)
        self.pending_versions.append(self.version)
        values = self.trips.values[client] or self.trips.refill(client)
        heapq.heappush(heap, (now + values.pop(), sequence, client, slot, self.version))

    def run(self, rounds: int) -> None:
        heap: list[tuple] = []
        for client in range(self.problem.n_clients):
            self.dispatch(client, 0.0, client, heap)
        sequence = self.problem.n_clients
        computed_below = 0  # every update dispatched with a smaller sequence number has been computed
        weights_table, K, releases, dispatch = self.weights, self.K, self.releases, self.dispatch
        slots: list[int] = []
        weights: list[float] = []
        staleness_sum = newest = 0
        now = 0.0
        while self.version < rounds:
            now, number, client, slot, version = heapq.heappop(heap)
            releases[client] += 1
            staleness = self.version - version
            staleness_sum += staleness
            newest = max(newest, number)
            slots.append(slot)
            weights.append(weights_table[staleness] if staleness < len(weights_table)
                           else float(self.weight_of(staleness)))
            if len(slots) == K:
                self.now = now
                if newest >= computed_below:
                    self.compute_pending()
                    computed_below = sequence
                self.aggregate(slots, weights, staleness_sum)
                slots, weights, staleness_sum, newest = [], [], 0, 0
            dispatch(client, now, sequence, heap)
            sequence += 1
        self.now = now


def run_fedbuff(*, problem: Problem, rounds: int, sample_rate: float, buffer_size: int = 10,
                server_lr: float = 1.0, clipping_norm: float | None = None, noise_multiplier: float = 0.0,
                staleness: str = "polynomial", staleness_exponent: float = 0.5, staleness_cutoff: int = 10,
                value_after_cutoff: float = 0.0, compute: Durations = DEFAULT_COMPUTE,
                uplink: Durations = DEFAULT_LATENCY, downlink: Durations = DEFAULT_LATENCY, seed: int = 0,
                eval_every: int = 10, delta: float = 1e-5, accountant: str = "rdp", progress=None,
                trace: list | None = None) -> SimulationResult:
    """Simulate ``rounds`` server updates of FedBuff (module docstring).

    Parameters
    ----------
    rounds : int
        Server updates (each aggregates ``buffer_size`` client updates).
    sample_rate : float in (0, 1]
        q, the Poisson rate of each local example in a client update.
    server_lr : float
        η of w ← w − η Σ ω_j Δ_j / K.
    clipping_norm, noise_multiplier
        Per-example ℓ2 clipping C and the client's noise multiplier σ (std σC on the clipped sum);
        σ > 0 needs C. The staleness weight never exceeds 1, so each update has sensitivity ≤ C.
    staleness, staleness_exponent, staleness_cutoff, value_after_cutoff
        ω(s), see :func:`staleness_weight`.
    progress : callable, optional
        Called with the number of completed server rounds.
    trace : list, optional
        If given, every vectorised gradient batch ``("batch", rows, starts, models, batch_model, sizes, slots)``
        and every server step ``("step", slots, weights)`` is appended (benchmarks replay it; tests check it).
    """
    start = wallclock.perf_counter()
    rounds = check_int("rounds", rounds, low=1)
    rate = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    buffer_size = check_int("buffer_size", buffer_size, low=1)
    lr = check_real("server_lr", server_lr, low=0.0, low_open=True)
    clip = None if clipping_norm is None else check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    sigma = check_real("noise_multiplier", noise_multiplier, low=0.0)
    if sigma > 0 and clip is None:
        raise ValueError("noise_multiplier > 0 needs a clipping_norm (the noise std is noise_multiplier x C)")
    seed = check_int("seed", seed, low=0)

    def weight_of(s):
        return staleness_weight(s, kind=staleness, exponent=staleness_exponent, cutoff=staleness_cutoff,
                                value_after_cutoff=value_after_cutoff)

    table = weight_of(np.arange(4 * (problem.n_clients + buffer_size) + 1))
    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    streams = spawn_generators(seed, 5)
    run = _Buffered(problem, rate=rate, buffer_size=buffer_size, lr=lr, clip=clip, sigma=sigma, weights=table,
                    weight_of=weight_of, trips=_TripTimes(compute, uplink, downlink, streams[2:], problem.n_clients),
                    rngs=streams[:2], recorder=recorder)
    run.trace = trace
    diverged, message = False, None
    try:
        with np.errstate(all="ignore"):  # divergence is detected and reported, not warned about
            run.run(rounds)
            final = recorder.finish(run.w)
    except Diverged as error:
        diverged, message = True, str(error)
        final = {"loss": None, "accuracy": None, "dist_sq": None}
    note = ("Local DP: each client adds N(0, sigma^2 C^2) to its clipped sum before uploading; every upload is a "
            "release.")
    privacy = gaussian_ledger([[(rate, sigma, count)] if count else [] for count in run.releases], delta=delta,
                              accountant=accountant, note=note)
    executed = Schedule.from_rows([{"sample_rate": rate, "noise_multiplier": sigma, "buffer_size": buffer_size,
                                    "learning_rate": lr}] * max(len(recorder.rows), 1),
                                  metadata={"algorithm": "fedbuff", "neighboring_relation": "add_or_remove_one",
                                            "sampling": "poisson"}, statement=privacy.get("statement", ""))
    config = {"source": SOURCE, **problem.describe(), "sample_rate": rate, "buffer_size": buffer_size,
              "server_lr": lr, "clipping_norm": clip, "noise_multiplier": sigma, "staleness": staleness,
              "staleness_exponent": staleness_exponent, "seed": seed, "eval_every": recorder.eval_every,
              "client_updates": int(sum(run.releases))}
    return SimulationResult(algorithm="fedbuff", rows=tuple(recorder.rows), final=final, privacy=privacy,
                            virtual_time=run.now, wall_time_s=wallclock.perf_counter() - start, diverged=diverged,
                            divergence=message, executed=executed, config=config)
