"""van Dijk et al.'s asynchronous FL with increasing sample sizes (Algorithms 1-4) on the event engine.

Server (Alg. 3, L328-356): applies v̂ ← v̂ − η̄_i U as messages (i, c, U) arrive, in any order; once it
holds round k from every client it increments k (repeatedly, if later rounds are complete too) and
broadcasts (v̂, k). Clients (Alg. 4 / Alg. 1 with DP, L83-121, L364-398): round i runs s_{i,c} local
SGD iterations with step η̄_i, each on one sample, clipped to C; at the end Gaussian noise N(0, C²σ_i²I)
is added to U and (sign of I-4 corrected) ŵ ← ŵ − η̄_i n; (i, c, U) is sent. A broadcast with a larger
k resets ŵ ← v̂ − η̄_i U (L371; the freshness check of Alg. 4 is applied).

Timing: every local iteration takes a draw of the client's compute-time model and completes atomically
(its gradient reads ŵ at its completion time); up- and down-link messages take latency draws (so they
reorder). A client computes in blocks of iterations that the wait rule allows; a broadcast arriving
mid-block takes effect between the iterations that completed before and after it.

Wait rules (spec §3 WAIT RULE, I-1, I-3): ``none``; ``exact`` (wait while t_delay > τ(t_glob), the
invariant of Theorem 1's proof, L422); ``alg1_literal`` (wait while ⌊τ(t_glob)⌋ = t_delay, L107);
``alg4_literal`` (wait while τ(t_glob) ≤ t_delay, L384); ``d_round`` (wait while i − k > d, B.2 L428-440);
``d_round_literal`` (wait while i − k ≥ d, L428; d ≥ 1, it deadlocks for d = 0).

Global numbering (B.1, L406-410): within round i, client c's iterations occupy the positions after
those of clients 0..c−1 (the assignment table a(i, ·) in client order); the delay log records, for every
gradient computation, t = ρ(c, i, h), the empirical delay τ̂(t) (Definition 1) and τ(t).

Sampling: ``with_replacement`` (Alg. 1: s_{i,c} uniform draws) or ``poisson`` (every example joins the
round with probability q_i = s_{i,c}/N_c; the realised counts are drawn at set-up, like Alg. 2's random
table, so the wait rule and the numbering use them).

Privacy (per example of a client's local data set of N_c records, add/remove-one): each client and round
makes one Gaussian release, the sum U of the round's clipped gradients plus N(0, C²σ_i²I), with multiplier
σ_i and rate q = s_{i,c}/N_c. The ledger accounts the sampling the run executed: a ``poisson`` run as the
Poisson-subsampled Gaussian (the planner's model), a ``with_replacement`` run as s_{i,c} = q·N_c
independent uniform draws from the client's N_c records (``bounds.accounting`` with
``sampling="with_replacement"``, ``dataset_size=N_c``; PLD only, so ``accountant="rdp"`` uses PLD and
says so). If the accountant cannot answer (e.g. the PLD grid would be too large), the ledger says "not
accounted" with the reason and reports no ε.
"""

from __future__ import annotations

import math
import time as wallclock
from collections.abc import Callable

import numpy as np

from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.export import Schedule
from fedplan.planner.simulate.engine import (
    DEFAULT_COMPUTE,
    DEFAULT_LATENCY,
    DelayLog,
    Durations,
    EventQueue,
    spawn_generators,
)
from fedplan.planner.simulate.models import is_finite
from fedplan.planner.simulate.problem import Problem
from fedplan.planner.simulate.records import (
    Diverged,
    RoundRecorder,
    SimulationResult,
    gaussian_ledger,
    merge_releases,
    sampling_description,
)

__all__ = ["SAMPLINGS", "WAIT_RULES", "inputs_from_schedule", "run_vandijk"]

WAIT_RULES = ("none", "exact", "alg1_literal", "alg4_literal", "d_round", "d_round_literal")
SAMPLINGS = ("with_replacement", "poisson")
_BLOCK_END, _SERVER_RECEIVE, _BROADCAST = 0, 1, 2
SOURCE = "van Dijk et al., Algorithms 1-4 (L83-121, L296-398)"


def _round_sizes(sizes, client_sizes: tuple[int, ...]) -> np.ndarray:
    array = np.asarray(sizes)
    clients = len(client_sizes)
    if array.ndim == 1:
        array = np.repeat(array[:, None], clients, axis=1)
    if array.ndim != 2 or array.shape[1] != clients or array.shape[0] < 1:
        raise ValueError(f"sizes must have shape (rounds,) or (rounds, {clients}); got {np.shape(sizes)}")
    if not np.issubdtype(array.dtype, np.number) or np.any(array != np.round(array)) or np.any(array < 0):
        raise ValueError("sizes must hold non-negative integers s_{i,c}")
    too_large = np.flatnonzero((array > np.asarray(client_sizes)[None, :]).any(axis=1))
    if too_large.size:
        raise ValueError(f"sizes must be <= the client's number of examples N_c; round {int(too_large[0])} has "
                         f"{array[too_large[0]].max():g} > {min(client_sizes)}")
    return array.astype(np.int64)


def _per_round(name: str, values, rounds: int, *, low: float, low_open: bool = False) -> np.ndarray:
    array = np.broadcast_to(np.asarray(values, dtype=float), (rounds,)) if np.ndim(values) == 0 else np.asarray(
        values, dtype=float)
    if array.shape != (rounds,):
        raise ValueError(f"{name} must be one number or one per round ({rounds}); got {np.shape(values)}")
    for index, value in enumerate(array):
        check_real(f"{name}[{index}]", float(value), low=low, low_open=low_open)
    return np.array(array, dtype=float)


def inputs_from_schedule(schedule: Schedule, client_sizes: tuple[int, ...]) -> dict:
    """``sizes``, ``step_sizes`` and ``noise_multiplier`` of :func:`run_vandijk` from an exported schedule.

    Rows need ``noise_multiplier``, ``learning_rate`` and ``sample_size`` (or ``sample_rate``, turned into
    ⌈q N_c⌉ per client).
    """
    rows = schedule.rows()
    missing = [key for key in ("noise_multiplier", "learning_rate") if key not in rows[0]]
    if missing or not ({"sample_size", "sample_rate"} & set(rows[0])):
        raise ValueError("a van Dijk schedule needs the columns noise_multiplier, learning_rate and sample_size "
                         f"(or sample_rate); missing {', '.join(missing) or 'sample_size'}")
    if "sample_size" in rows[0]:
        sizes = np.array([row["sample_size"] for row in rows])
    else:
        rates = np.array([row["sample_rate"] for row in rows], dtype=float)
        sizes = np.ceil(rates[:, None] * np.asarray(client_sizes)[None, :] - 1e-9).astype(np.int64)
    return {"sizes": sizes, "step_sizes": [row["learning_rate"] for row in rows],
            "noise_multiplier": [row["noise_multiplier"] for row in rows]}


class _Run:
    """State of one simulated run (server, clients, queue); see :func:`run_vandijk`."""

    def __init__(self, problem: Problem, planned: np.ndarray, counts: np.ndarray, steps: np.ndarray,
                 sigmas: np.ndarray, clip: float | None, sampling: str, wait_rule: str, tau_table, d: int,
                 compute: Durations, uplink: Durations, downlink: Durations, rngs, recorder: RoundRecorder):
        self.problem, self.model = problem, problem.model
        self.planned, self.counts, self.steps, self.sigmas = planned, counts, steps, sigmas
        self.clip, self.sampling, self.wait_rule, self.tau_table, self.d = clip, sampling, wait_rule, tau_table, d
        self.recorder = recorder
        self.rounds, self.n = counts.shape
        per_round = counts.sum(axis=1)
        self.S = np.concatenate(([0], np.cumsum(per_round)))  # S[i] = Σ_{l<i} s_l
        self.offsets = np.concatenate((np.zeros((self.rounds, 1), dtype=np.int64), np.cumsum(counts, axis=1)[:, :-1]),
                                      axis=1)
        n, dim = self.n, self.model.dim
        client_rngs = rngs[: 2 * n]
        self.sample_rng = client_rngs[:n]
        self.noise_rng = client_rngs[n:]
        self.compute_streams = [compute.stream(rng) for rng in rngs[2 * n: 3 * n]]
        self.up_stream = uplink.stream(rngs[3 * n])
        self.down_stream = downlink.stream(rngs[3 * n + 1])
        self.compute_means, self.up_means = compute.means(n), uplink.means(n)
        self.down_means = downlink.means(n)
        self.queue = EventQueue()
        self.delays = DelayLog()
        self.server_w = np.zeros(dim)
        self.server_k = 0
        self.held: set[tuple[int, int]] = set()
        self.round_delay = np.zeros(self.rounds, dtype=np.int64)
        self.round_noise_sq = np.zeros(self.rounds)
        self.releases: list[list[tuple[float, float]]] = [[] for _ in range(n)]
        # client state
        self.i = [0] * n
        self.h = [0] * n
        self.k = [0] * n
        self.w = [np.zeros(dim) for _ in range(n)]
        #: U_{i,c,h} is kept implicitly: U = U_anchor + (w_anchor − ŵ)/η̄_i, exact while η̄_i is fixed (each local
        #: step is ŵ ← ŵ − η̄_i g); the anchor is reset at the start of a round and at every accepted broadcast.
        self.anchor: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(dim), np.zeros(dim)) for _ in range(n)]
        self.view: list[tuple[int, frozenset]] = [(0, frozenset())] * n
        self.own_done: list[set[int]] = [set() for _ in range(n)]
        self.batch: list[list[int]] = [[] for _ in range(n)]
        self.durations: list[np.ndarray] = [np.zeros(0)] * n
        self.block: list[tuple[int, np.ndarray] | None] = [None] * n  # (h0, completion times)
        self.waiting = [False] * n
        arrays = problem.clients
        self.y_lists = [client.y.tolist() for client in arrays]
        self.sq_lists = [client.row_sq_norms.tolist() for client in arrays]

    # ---------------------------------------------------------------- client side

    def start_round(self, c: int, now: float) -> None:
        i = self.i[c]
        count = int(self.counts[i, c])
        size = self.problem.clients[c].size
        rng = self.sample_rng[c]
        if self.sampling == "with_replacement":
            self.batch[c] = rng.integers(0, size, count).tolist()
        else:
            self.batch[c] = rng.choice(size, count, replace=False).tolist()
        self.durations[c] = self.compute_means[c] * self.compute_streams[c].block(count)
        self.h[c] = 0
        self.anchor[c] = (np.zeros(self.model.dim), self.w[c].copy())
        self.try_block(c, now)

    def limit(self, c: int) -> int:
        """First iteration h the wait rule forbids in the current round (or s_{i,c} if none)."""
        i, h, k = self.i[c], self.h[c], self.k[c]
        size = int(self.counts[i, c])
        rule = self.wait_rule
        if rule == "none":
            return size
        if rule in ("d_round", "d_round_literal"):
            slack = self.d if rule == "d_round" else self.d - 1
            return size if i - k <= slack else h
        hs = np.arange(h, size)
        t_glob = self.S[i + 1] - (size - hs) - 1
        t_delay = t_glob - self.S[k] + 1
        allowed_delay = self.tau_table[t_glob]
        if rule == "exact":
            allowed = t_delay <= allowed_delay
        elif rule == "alg4_literal":
            allowed = t_delay < allowed_delay
        else:
            allowed = np.floor(allowed_delay) != t_delay
        forbidden = np.flatnonzero(~allowed)
        return size if forbidden.size == 0 else h + int(forbidden[0])

    def try_block(self, c: int, now: float) -> None:
        size = int(self.counts[self.i[c], c])
        if self.h[c] == size:
            self.finish_round(c, now)
            return
        stop = self.limit(c)
        if stop <= self.h[c]:
            self.waiting[c] = True
            self.block[c] = None
            return
        self.waiting[c] = False
        times = now + np.cumsum(self.durations[c][self.h[c]:stop])
        self.block[c] = (self.h[c], times)
        self.queue.push(float(times[-1]), _BLOCK_END, c)

    def advance(self, c: int, until: float) -> None:
        """Execute the iterations of the current block that completed by ``until``."""
        block = self.block[c]
        if block is None:
            return
        h0, times = block
        target = h0 + int(np.searchsorted(times, until, side="right"))
        if target > self.h[c]:
            self.iterate(c, self.h[c], target)

    def update_sum(self, c: int) -> np.ndarray:
        """U_{i,c,h}, the sum of client c's (clipped) gradients of its current round so far."""
        U_anchor, w_anchor = self.anchor[c]
        return U_anchor + (w_anchor - self.w[c]) / self.steps[self.i[c]]

    def iterate(self, c: int, start: int, stop: int) -> None:
        """Local SGD iterations ``start..stop−1`` of the current round (one sample each, clipped).

        For logistic and ridge models a step is ŵ ← (1 − ηb)ŵ − ηa·x with the per-example gradient
        a·x + b·ŵ (a = f·r, b = f·ρ, f the clipping factor); ‖ŵ‖², which the clipping norm needs, is
        updated from scalars, so a step costs one dot product and two vector operations.
        """
        i = self.i[c]
        self.log_delays(c, i, start, stop)
        eta = float(self.steps[i])
        w = self.w[c]
        client = self.problem.clients[c]
        X, ys, sqs, batch = client.X, self.y_lists[c], self.sq_lists[c], self.batch[c]
        rho, clip, model = self.model.rho, self.clip, self.model
        if model.k > 1:
            for h in range(start, stop):
                j = batch[h]
                w -= eta * model.clipped_gradient_sum(X[j:j + 1], client.y[j:j + 1], w, clip=clip)
            self.h[c] = stop
            return
        logistic = model.kind == "logistic"
        clip_sq = math.inf if clip is None else clip * clip
        w_sq = float(w @ w)
        for h in range(start, stop):
            j = batch[h]
            x = X[j]
            z = float(x @ w)
            if logistic:
                r = (1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))) - ys[j]
            else:
                r = z - ys[j]
            x_sq = sqs[j]
            norm_sq = r * r * x_sq + 2.0 * rho * r * z + rho * rho * w_sq
            factor = clip / math.sqrt(norm_sq) if norm_sq > clip_sq else 1.0
            a, shrink = eta * factor * r, 1.0 - eta * factor * rho
            if rho:
                w *= shrink
            w -= a * x
            w_sq = shrink * shrink * w_sq - 2.0 * shrink * a * z + a * a * x_sq
        self.h[c] = stop

    def included_prefix(self, c: int, i: int) -> tuple[int, bool]:
        """(P, partial): the included prefix 0..P−1 of the model client c reads; ``partial`` adds its own h."""
        view_k, held = self.view[c]
        own = self.own_done[c]
        prefix = int(self.S[view_k])
        for r in range(view_k, self.rounds):
            for other in range(self.n):
                if (r, other) in held or (other == c and r in own):
                    prefix += int(self.counts[r, other])
                    continue
                return prefix, (other == c and r == i)
        return prefix, False

    def log_delays(self, c: int, i: int, start: int, stop: int) -> None:
        hs = np.arange(start, stop)
        t = self.S[i] + self.offsets[i, c] + hs
        prefix, partial = self.included_prefix(c, i)
        tau_hat = t - prefix - (hs if partial else 0)
        if self.tau_table is None:
            tau = np.full(hs.size, np.inf)
        else:
            tau = self.tau_table[t]
        self.delays.append(t, tau_hat, tau)
        self.round_delay[i] = max(int(self.round_delay[i]), int(tau_hat.max()))

    def finish_round(self, c: int, now: float) -> None:
        i = self.i[c]
        sigma = float(self.sigmas[i])
        U, w = self.update_sum(c), self.w[c]
        if sigma > 0:
            noise = (sigma * self.clip) * self.noise_rng[c].standard_normal(self.model.dim)
            U += noise
            w -= self.steps[i] * noise  # I-4: minus, so that ŵ stays v̂ − η̄_i U
            self.round_noise_sq[i] += float(noise @ noise)
        self.releases[c].append((float(self.planned[i, c]) / self.problem.clients[c].size, sigma))
        arrival = now + self.up_means[c] * self.up_stream.draw()
        self.queue.push(arrival, _SERVER_RECEIVE, (i, c, U))
        self.own_done[c].add(i)
        self.block[c] = None
        self.i[c] = i + 1
        if i + 1 < self.rounds:
            self.start_round(c, now)

    def on_block_end(self, c: int, now: float) -> None:
        self.advance(c, now)
        self.block[c] = None
        self.try_block(c, now)

    def on_broadcast(self, c: int, now: float, payload) -> None:
        v_hat, k_msg, held = payload
        if k_msg <= self.k[c] or self.i[c] >= self.rounds:
            return
        self.advance(c, now)
        U = self.update_sum(c)
        self.w[c] = v_hat - self.steps[self.i[c]] * U
        self.anchor[c] = (U, self.w[c].copy())
        self.k[c] = k_msg
        self.view[c] = (k_msg, held)
        self.own_done[c] = set()
        if self.waiting[c]:
            self.try_block(c, now)

    # ---------------------------------------------------------------- server side

    def on_receive(self, now: float, payload) -> None:
        i, c, U = payload
        self.server_w -= self.steps[i] * U
        if not is_finite(self.server_w):
            raise Diverged(f"the server model stopped being finite at round {self.server_k} (time {now:g})")
        self.held.add((i, c))
        advanced = False
        while self.server_k < self.rounds and all((self.server_k, other) in self.held for other in range(self.n)):
            k = self.server_k
            self.held.difference_update((k, other) for other in range(self.n))
            self.recorder.record(round=k, time=now, w=self.server_w, staleness=float(self.round_delay[k]),
                                 noise=math.sqrt(self.round_noise_sq[k]), force=k == self.rounds - 1)
            self.server_k = k + 1
            advanced = True
        if advanced and self.server_k < self.rounds:
            message = (self.server_w.copy(), self.server_k, frozenset(self.held))
            for other in range(self.n):
                self.queue.push(now + self.down_means[other] * self.down_stream.draw(), _BROADCAST, (other, message))

    def run(self) -> None:
        for c in range(self.n):
            self.start_round(c, 0.0)
        queue = self.queue
        while self.server_k < self.rounds:
            if not len(queue):
                raise ValueError(f"the run stalled at round {self.server_k}: with wait_rule={self.wait_rule!r} every "
                                 "client waits for a broadcast that never comes (spec I-1, I-3); choose a larger "
                                 "delay function tau or d")
            now, kind, payload = queue.pop()
            if kind == _BLOCK_END:
                self.on_block_end(payload, now)
            elif kind == _SERVER_RECEIVE:
                self.on_receive(now, payload)
            else:
                self.on_broadcast(payload[0], now, payload[1])


def run_vandijk(*, problem: Problem, sizes, step_sizes, noise_multiplier=0.0, clipping_norm: float | None = None,
                sampling: str = "with_replacement", wait_rule: str = "none", tau: Callable | None = None, d: int = 1,
                compute: Durations = DEFAULT_COMPUTE, uplink: Durations = DEFAULT_LATENCY,
                downlink: Durations = DEFAULT_LATENCY, seed: int = 0, eval_every: int = 1,
                delta: float = 1e-5, accountant: str = "rdp", progress=None) -> SimulationResult:
    """Simulate van Dijk et al.'s Algorithms 1-4 for ``len(sizes)`` rounds (see the module docstring).

    Parameters
    ----------
    problem : :class:`planner.simulate.problem.Problem`
    sizes : int array (rounds,) or (rounds, clients)
        s_{i,c}: local iterations (expected ones for ``sampling="poisson"``) per round and client.
    step_sizes : float or array (rounds,)
        Round step sizes η̄_i > 0.
    noise_multiplier : float or array (rounds,)
        σ_i ≥ 0 (noise N(0, C²σ_i²I) per client and round); > 0 needs ``clipping_norm``.
    clipping_norm : float, optional
        C > 0: per-example ℓ2 clipping; None: no clipping.
    wait_rule, tau, d
        The wait rule (module docstring); ``tau`` is a vectorised τ(t) (e.g. ``theorem5_tau``), needed by
        ``exact``, ``alg1_literal`` and ``alg4_literal``; ``d`` by the two ``d_round`` rules.
    compute, uplink, downlink : :class:`planner.simulate.engine.Durations`
        Time of one local iteration and message latencies, per client.
    seed : int
        Fixes every random stream of the run.
    eval_every : int
        Loss/accuracy/‖w − w*‖² are evaluated every this many rounds (and at the last).
    delta, accountant
        δ at which the executed schedule's ε is reported; ``"rdp"`` (fast) or ``"pld"`` (tight). A
        ``with_replacement`` run is accounted by PLD whichever is asked (it has no RDP bound); the ledger
        records the accountant used and the one requested.
    progress : callable, optional
        Called with the number of rounds the server has completed.
    """
    start = wallclock.perf_counter()
    client_sizes = problem.client_sizes
    planned = _round_sizes(sizes, client_sizes)
    rounds = planned.shape[0]
    steps = _per_round("step_sizes", step_sizes, rounds, low=0.0, low_open=True)
    sigmas = _per_round("noise_multiplier", noise_multiplier, rounds, low=0.0)
    clip = None if clipping_norm is None else check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    if clip is None and np.any(sigmas > 0):
        raise ValueError("noise_multiplier > 0 needs a clipping_norm (the noise std is noise_multiplier x C)")
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    wait_rule = check_choice("wait_rule", wait_rule, WAIT_RULES)
    d = check_int("d", d, low=1 if wait_rule == "d_round_literal" else 0)
    seed = check_int("seed", seed, low=0)
    n = problem.n_clients
    rngs = spawn_generators(seed, 3 * n + 3)
    if sampling == "poisson":
        rates = planned / np.asarray(client_sizes)[None, :]
        counts = rngs[-1].binomial(np.asarray(client_sizes)[None, :], rates)
    else:
        counts = planned
    if tau is None and wait_rule in ("exact", "alg1_literal", "alg4_literal"):
        raise ValueError(f"wait_rule={wait_rule!r} needs a delay function tau(t)")
    tau_table = None if tau is None else np.asarray(tau(np.arange(int(counts.sum()) + 1, dtype=float)), dtype=float)
    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    run = _Run(problem, planned, counts, steps, sigmas, clip, sampling, wait_rule, tau_table, d, compute, uplink,
               downlink, rngs, recorder)
    diverged, message = False, None
    try:
        with np.errstate(all="ignore"):  # divergence is detected and reported, not warned about
            run.run()
            final = recorder.finish(run.server_w)
    except Diverged as error:
        diverged, message = True, str(error)
        final = {"loss": None, "accuracy": None, "dist_sq": None}
    if sampling == "poisson":
        note = "Sampling simulated: Poisson, as accounted."
    else:
        note = ("Sampling simulated: with replacement (Alg. 1: s_i uniform draws from the client's N_c examples per "
                "round), accounted as with_replacement with N = N_c.")
    note += (" Sequential local SGD: one example can move later gradients of its round; the accountant assumes "
             "sensitivity C per round (I-41).")
    privacy = gaussian_ledger([merge_releases(r) for r in run.releases], delta=delta, accountant=accountant, note=note,
                              sampling=sampling, dataset_sizes=client_sizes)
    executed = Schedule.from_rows(
        [{"sample_size": int(planned[i].max()), "sample_rate": float((planned[i] / np.asarray(client_sizes)).max()),
          "noise_multiplier": float(sigmas[i]), "learning_rate": float(steps[i])}
         for i in range(len(recorder.rows))] or [{"sample_size": 0}],
        metadata={"algorithm": "vandijk", "sampling": sampling_description(sampling),
                  "neighboring_relation": "add_or_remove_one"},
        statement=privacy.get("statement", ""))
    config = {"source": SOURCE, **problem.describe(), "rounds_planned": rounds, "sampling": sampling,
              "wait_rule": wait_rule, "d": d, "clipping_norm": clip, "seed": seed, "eval_every": recorder.eval_every,
              "compute": compute.distribution, "uplink": uplink.distribution, "downlink": downlink.distribution}
    return SimulationResult(algorithm="vandijk", rows=tuple(recorder.rows), final=final, privacy=privacy,
                            virtual_time=run.queue.now, wall_time_s=wallclock.perf_counter() - start,
                            diverged=diverged, divergence=message, delays=run.delays.summary(),
                            delay_quantiles=tuple(run.delays.quantiles()), executed=executed, config=config)
