"""FedBuff-style buffered asynchronous aggregation with staleness weights, the familiar baseline.

Every client is always busy: it downloads the current model (version v), computes one local update and
uploads it. A client update is Δ = (Σ_{j∈B} clip(g_j) + σC·n)/(q N_c): the Poisson batch B (each local
example with probability q) of per-example gradients clipped to C, Gaussian noise added by the client
(local DP), divided by the expected batch size. The server keeps a buffer; an update arriving at version
v' is weighted by ω(v' − v) (staleness s = current version − the update's version) and once ``buffer_size``
updates are in, w ← w − η Σ ω_j Δ_j / K and the version increases (Nguyen et al. 2022, FedBuff; weight
families as in FLSim: constant, polynomial (1+s)^−a, threshold).

Engine (the per-update arithmetic is tiny, so its cost is Python and numpy calls; see :class:`_Buffered`):
timing never needs a model, so a window of server rounds is simulated first (one heap event per update,
trip times from unit streams drawn in bulk per window), then its arithmetic runs in waves: every update
whose model version is known, in one vectorised batch grouped by version (the models referenced in place,
one matrix product per version), then the server steps of every round that is complete (one batched
product). Only updates that arrive are computed; memory is the data, one window of updates and the models
that updates in flight still read. Loss and accuracy are evaluated every ``eval_every`` server rounds.

Privacy: each arrival is one Poisson-subsampled Gaussian release (q, σ) of that client's data
(weights ω ≤ 1 only shrink the sensitivity); the ledger composes every client's releases.
"""

from __future__ import annotations

import heapq
import time as wallclock

import numpy as np

from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.export import Schedule
from fedplan.planner.simulate.engine import DEFAULT_COMPUTE, DEFAULT_LATENCY, Durations, spawn_generators
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
    """Download + compute + upload time of successive dispatches, unit draws taken in bulk per window.

    Dispatch i (in dispatch order) by client c takes m_down[c]·u_i + m_comp[c]·v_i + m_up[c]·e_i, where
    u, v, e are the unit streams of the three duration models: the draws of a window's dispatches are
    taken at once and serve whichever clients dispatch, so no client holds draws of its own.
    """

    def __init__(self, compute: Durations, uplink: Durations, downlink: Durations, rngs, clients: int):
        self.streams = (downlink.stream(rngs[0]), compute.stream(rngs[1]), uplink.stream(rngs[2]))
        self.means = (downlink.means(clients), compute.means(clients), uplink.means(clients))

    def first(self) -> list[float]:
        """Every client's first trip (clients in order)."""
        clients = len(self.means[0])
        return (np.array(self.means) * self.units(clients)).sum(axis=0).tolist()

    def units(self, count: int) -> np.ndarray:
        """Unit draws (down, compute, up) of the next ``count`` dispatches, shape (3, count)."""
        return np.array([stream.block(count) for stream in self.streams])


class _PoissonBatches:
    """Poisson batches of successive client updates, drawn ahead in vectorised blocks of :attr:`BLOCK` updates.

    Update j's batch holds each local example independently with probability q: a Bernoulli process drawn
    by geometric gaps (positions cumsum(gaps) − 1) up to the largest client size; positions beyond the
    client's own size are dropped when the update is assigned to a client.
    """

    BLOCK = 2048

    def __init__(self, rate: float, sizes: np.ndarray, rng: np.random.Generator):
        self.rate, self.width, self.rng = rate, int(sizes.max()), rng
        self.equal_sizes = bool(np.all(sizes == self.width))
        self.positions = np.zeros(0, dtype=np.int64)
        self.starts = np.zeros(1, dtype=np.int64)  # drawn batch j: positions[starts[j]:starts[j+1]]

    def _gaps(self, columns: int) -> np.ndarray:
        """Geometric gaps capped at size + 1: a longer gap moves every later position past the last example just
        the same, and the cap keeps the sums in int64 (numpy returns 2⁶³ − 1 for q below about 1e-19)."""
        return np.minimum(self.rng.geometric(self.rate, size=(self.BLOCK, columns)), self.width + 1)

    def _draw(self) -> None:
        q, size = self.rate, self.width
        columns = int(np.ceil(q * size + 6.0 * np.sqrt(q * size) + 8))
        positions = np.cumsum(self._gaps(columns), axis=1) - 1
        while np.any(positions[:, -1] < size - 1):
            more = np.cumsum(self._gaps(columns), axis=1) + positions[:, -1:]
            positions = np.concatenate((positions, more), axis=1)
        inside = positions < size
        self.positions = np.concatenate((self.positions, positions[inside]))
        self.starts = np.concatenate((self.starts, self.starts[-1] + np.cumsum(inside.sum(axis=1))))

    def take(self, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(local positions, per-update counts) of the next updates, one per entry of ``sizes`` (their clients')."""
        count = sizes.size
        while self.starts.size <= count:
            self._draw()
        end = self.starts[count]
        local, counts = self.positions[:end], self.starts[1 : count + 1] - self.starts[:count]
        self.positions, self.starts = self.positions[end:], self.starts[count:] - end
        if not self.equal_sizes:
            owner = np.arange(count).repeat(counts)
            inside = local < sizes[owner]
            counts = np.bincount(owner[inside], minlength=count)
            local = local[inside]
        return local, counts


class _Buffered:
    """State of one FedBuff run (see :func:`run_fedbuff`): timing first, then arithmetic, window by window.

    The timing never needs a model: arrivals, buffers and versions follow from the trip times alone. So a
    run alternates two steps. (1) The event loop simulates a window of server rounds: every client always
    has one update in flight, a heap entry ``(arrival, sequence, client, version read)``; each arrival is
    noted (client, version read) and the arriving client dispatches again at once, reading the version
    current after the arrival. (2) The window's arithmetic runs in waves. A wave computes, in one
    vectorised batch, every update of the window that read a version already known (sorted by version:
    one matrix product per version, the models referenced in place); then it applies the server steps of
    every round whose updates are all computed (one batched product for all of them) and records those
    rounds. An update that read a version of its own window holds its round until the wave after that
    version: with few clients updates read recent versions and waves are short, with many clients long.

    Work: exactly the updates that arrive. Memory: the data; a window's updates (:attr:`WINDOW_NUMBERS`
    numbers, or one round); the models that an update in flight still reads (a row each of ``models``:
    ``readers`` counts a version's updates in flight, and its row is reused once they have all arrived);
    two integers per server round.
    """

    WINDOW_NUMBERS = 1 << 20

    def __init__(self, problem: Problem, *, rate: float, buffer_size: int, lr: float, clip, sigma: float,
                 weight_of, trips: _TripTimes, rngs, recorder: RoundRecorder):
        self.model = problem.model
        self.rate, self.K, self.lr, self.clip, self.sigma = rate, buffer_size, lr, clip, sigma
        self.weight_of = weight_of
        self.recorder = recorder
        self.trips = trips
        split = problem.split
        self.split, self.sizes, self.offsets = split, split.sizes, split.offsets
        self.mean_size = float(self.sizes.mean())
        self.noise_rng = rngs[1]
        self.batches = _PoissonBatches(rate, self.sizes, rngs[0])
        self.window = max(1, self.WINDOW_NUMBERS // (self.model.dim * buffer_size))  # server rounds
        self.models = np.zeros((2, self.model.dim))
        self.free_rows = [1]
        self.heap: list[tuple] = []  # the updates in flight
        self.version = 0
        self.sequence = 0  # dispatches so far (the heap's tie-break)
        #: With a list here, every batch of gradients and every server step is logged (tests replay it).
        self.trace: list | None = None
        self.computed = 0  # updates computed in earlier windows (the trace's update numbers)
        self.releases = np.zeros(problem.n_clients, dtype=np.int64)
        self.now = 0.0

    @property
    def w(self) -> np.ndarray:
        return self.models[self.row_of[self.version]]

    def events(self, heap: list, end: int) -> tuple[list[int], list[int], list[float]]:
        """Arrivals until version ``end``: their clients and versions read, and the time each round closes."""
        clients: list[int] = []
        reads: list[int] = []
        closes: list[float] = []
        down, comp, up = self.trips.means
        u, v, e = self.trips.units((end - self.version) * self.K).tolist()
        version, sequence, K, i = self.version, self.sequence, self.K, 0
        pop, push = heapq.heappop, heapq.heappush
        while version < end:
            now, _, client, read = pop(heap)
            clients.append(client)
            reads.append(read)
            if len(clients) % K == 0:
                version += 1
                closes.append(now)
            push(heap, (now + down[client] * u[i] + comp[client] * v[i] + up[client] * e[i], sequence, client,
                        version))
            sequence += 1
            i += 1
        self.sequence = sequence
        return clients, reads, closes

    def _rows(self, count: int) -> list[int]:
        """``count`` free rows of ``models`` (it grows when too few are free)."""
        if len(self.free_rows) < count:
            old = self.models.shape[0]
            size = max(2 * old, old + count)
            self.models = np.concatenate((self.models, np.zeros((size - old, self.model.dim))))
            self.free_rows.extend(range(old, size))
        rows = self.free_rows[-count:]
        del self.free_rows[-count:]
        return rows

    def compute(self, clients: np.ndarray, reads: np.ndarray, out: np.ndarray, numbers: range) -> None:
        """Client updates of ``clients`` at the versions ``reads`` (sorted) into ``out``: one vectorised batch."""
        sizes = self.sizes[clients]
        local, counts = self.batches.take(sizes)
        positions = self.offsets[clients].repeat(counts) + local
        starts = np.zeros(clients.size + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        data_rows = self.split.order[positions]
        rows = self.row_of[reads]
        sums = self.model.clipped_gradient_sums(self.split.X[data_rows], self.split.y[data_rows], self.models,
                                                starts, clip=self.clip, row_sq_norms=self.split.row_sq_norms[data_rows],
                                                batch_model=rows)
        if self.sigma > 0:
            self.noise_rng.standard_normal(out=out)
            out *= self.sigma * self.clip
            out += sums
        else:
            out[...] = sums
        out *= (1.0 / (self.rate * sizes))[:, None]
        if self.trace is not None:
            used, batch_model = np.unique(rows, return_inverse=True)
            self.trace.append(("batch", positions, starts, self.models[used].copy(), batch_model, sizes,
                               list(numbers)))

    def arithmetic(self, clients: list[int], reads: list[int], closes: list[float]) -> None:
        """The window's waves (class docstring): its updates, server steps and recorded rounds."""
        K, first, rounds = self.K, self.version, len(closes)
        arrivals, read = np.array(clients), np.array(reads)
        staleness = (first + np.arange(rounds).repeat(K) - read).reshape(rounds, K)
        weights = self.weight_of(staleness)
        noise = self.sigma * (self.clip or 0.0) * self.lr / K / (self.rate * self.mean_size)
        records = {"time": closes, "staleness": (staleness.sum(axis=1) / K).tolist(),
                   "noise": (noise * np.sqrt((weights * weights).sum(axis=1))).tolist()}
        held = read.reshape(rounds, K).max(axis=1).tolist()  # the newest version each round's updates read
        order = np.argsort(read, kind="stable")
        place = np.empty_like(order)  # arrival → its place in version order
        place[order] = np.arange(order.size)
        sorted_clients, sorted_reads = arrivals[order], read[order]
        updates = self.buffer[:order.size]
        computed = 0
        try:
            while self.version < first + rounds:
                known = self.version
                upto = int(np.searchsorted(sorted_reads, known, side="right"))
                if upto > computed:
                    self.compute(sorted_clients[computed:upto], sorted_reads[computed:upto], updates[computed:upto],
                                 range(self.computed + computed, self.computed + upto))
                    computed = upto
                stop = known + 1
                while stop < first + rounds and held[stop - first] <= known:
                    stop += 1
                self.step(updates, place[(known - first) * K:(stop - first) * K], weights[known - first:stop - first],
                          records, known - first)
        finally:  # the releases of every round applied (and of the one that diverged)
            done = min(self.version - first + 1, rounds) * K
            self.releases += np.bincount(arrivals[:done], minlength=self.releases.size)
        self.computed += order.size
        self._release(sorted_reads, first)

    def _release(self, reads: np.ndarray, first: int) -> None:
        """Count the window's dispatches and arrivals (sorted ``reads``) in ``readers``; free unread versions' rows."""
        dispatched = np.arange(1, reads.size + 1) // self.K  # the version each arrival's next dispatch read, − first
        self.readers[first:self.version + 1] += np.bincount(dispatched, minlength=self.version - first + 1)
        oldest = reads[0]
        self.readers[oldest:reads[-1] + 1] -= np.bincount(reads - oldest)
        read = reads[np.concatenate(([True], reads[1:] != reads[:-1]))]
        self.free_rows.extend(self.row_of[read[self.readers[read] == 0]].tolist())

    def step(self, updates: np.ndarray, places: np.ndarray, weights: np.ndarray, records: dict, lo: int) -> None:
        """Server steps of the rounds whose updates are ``updates[places]`` (arrival order, staleness ``weights``),
        the window's rounds from ``lo`` on; records them, up to a model that is not finite (:class:`Diverged`)."""
        count, K = weights.shape
        new_rows = self._rows(count)
        chain = np.empty((count + 1, self.model.dim))
        chain[0] = self.models[self.row_of[self.version]]
        np.matmul((self.lr / K) * weights[:, None, :], updates[places].reshape(count, K, -1), out=chain[1:, None, :])
        np.subtract.accumulate(chain, axis=0, out=chain)
        models = chain[1:]
        self.models[new_rows] = models
        self.row_of[self.version + 1:self.version + count + 1] = new_rows
        finite = np.isfinite(np.einsum("ij,ij->i", models, models)).tolist()
        for j in range(count):
            self.now = records["time"][lo + j]
            if not finite[j]:
                raise Diverged(f"the model stopped being finite at server round {self.version} (time {self.now:g})")
            if self.trace is not None:
                self.trace.append(("step", (self.computed + places[j * K:(j + 1) * K]).tolist(), weights[j].tolist()))
            self.recorder.record(round=self.version, time=self.now, w=models[j],
                                 staleness=records["staleness"][lo + j], noise=records["noise"][lo + j])
            self.version += 1

    def run(self, rounds: int) -> None:
        self.heap = heap = [(time, client, client, 0) for client, time in enumerate(self.trips.first())]
        heapq.heapify(heap)
        self.sequence = len(heap)
        self.row_of = np.zeros(rounds + 1, dtype=np.intp)  # version → its row of ``models``
        self.readers = np.zeros(rounds + 1, dtype=np.int64)  # version → its updates in flight
        self.readers[0] = len(heap)
        self.buffer = np.empty((min(self.window, rounds) * self.K, self.model.dim))  # a window's updates
        while self.version < rounds:
            self.arithmetic(*self.events(heap, min(self.version + self.window, rounds)))


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
        If given, every vectorised gradient batch ``("batch", rows, starts, models, batch_model, sizes, numbers)``
        (``rows`` index :attr:`Problem.stacked`; batch j is rows ``starts[j]:starts[j+1]`` at model
        ``models[batch_model[j]]``, of a client with ``sizes[j]`` examples, and is update ``numbers[j]``) and
        every server step ``("step", numbers, weights)`` is appended (tests replay it).
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

    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    streams = spawn_generators(seed, 5)
    run = _Buffered(problem, rate=rate, buffer_size=buffer_size, lr=lr, clip=clip, sigma=sigma,
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
    privacy = gaussian_ledger([[(rate, sigma, count)] if count else [] for count in run.releases.tolist()],
                              delta=delta, accountant=accountant, note=note)
    executed = Schedule.from_rows([{"sample_rate": rate, "noise_multiplier": sigma, "buffer_size": buffer_size,
                                    "learning_rate": lr}] * max(len(recorder.rows), 1),
                                  metadata={"algorithm": "fedbuff", "neighboring_relation": "add_or_remove_one",
                                            "sampling": "poisson"}, statement=privacy.get("statement", ""))
    config = {"source": SOURCE, **problem.describe(), "sample_rate": rate, "buffer_size": buffer_size,
              "server_lr": lr, "clipping_norm": clip, "noise_multiplier": sigma, "staleness": staleness,
              "staleness_exponent": staleness_exponent, "seed": seed, "eval_every": recorder.eval_every,
              "client_updates": int(run.releases.sum())}
    return SimulationResult(algorithm="fedbuff", rows=tuple(recorder.rows), final=final, privacy=privacy,
                            virtual_time=run.now, wall_time_s=wallclock.perf_counter() - start, diverged=diverged,
                            divergence=message, executed=executed, config=config)
