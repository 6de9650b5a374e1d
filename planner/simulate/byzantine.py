"""Byzantine workers: the asynchronous Kardam server (Damaskinos ch. 5) and synchronous GARs (ch. 4).

Workers are the clients of a :class:`~planner.simulate.problem.Problem`; the last ``byzantine`` of the n are
Byzantine. An honest worker sends the mean gradient of ``batch_size`` examples drawn from its data at the model
version it pulled. Attacks (:data:`ATTACKS`; ``attack_scale`` s):

* ``"sign_flip"``: −s·g of its own honest gradient (the thesis' attack, s = 10, L1266);
* ``"noise"``: N(0, s²) per coordinate;
* ``"stale_replay"``: the gradient it computed on the initial model, resent forever with a fresh version;
* ``"little"``: "a little is enough" (Baruch et al. 2019): coordinate-wise mean − z·std of the honest gradients
  at the current model, z = Φ⁻¹((n − s)/n), s = ⌊n/2 + 1⌋ − f (an omniscient adversary, L851-855).

:func:`run_kardam` (spec §2.9): pushes arrive by the engine's timing (``arrivals="event"``: exponential compute
times, :class:`~planner.simulate.engine.EventQueue`), i.i.d. uniformly (``"iid"``) or in shuffled round robin.
Staleness τ = t − t_p (updates between pull and push, Def. 6 L1056). The server keeps, per worker, the last
``lipschitz_window`` empirical Lipschitz coefficients K̂_p (Def. 8, computed server-side; K̂_p = their max,
spec K-L1 reading (b)), and applies the pure filters of :mod:`bounds.kardam`: the Lipschitz filter
‖g − g_last‖/‖θ_{t_p} − θ_{t_last}‖ ≤ quantile_{(n−f)/n}{K̂_p} (L1108; unprotected warm-up until a gradient was
accepted and n − f workers have a K̂_p) and the frequency filter (L1130, 2f distinct sentinels pre-filled,
K-F2). Both verdicts are recorded for every candidate. R accepted gradients make one update
θ ← θ − γφ_t Σ Λ(τ)g (Eq. 5.1-5.2; φ_t = R/ΣΛ, or 1 without ``adaptive_rate``); its row records ``grad_sq``
‖∇F(θ_{t+1})‖², ``step_size`` γφ_t and ``staleness_values`` (the τ of its R gradients). Dampening Λ: inverse
1/(1+τ), exponential e^{−aτ}, AdaSGD e^{−βτ} with β from τ_thres (given, or the 99.7 % quantile of the
staleness seen so far, L612, L695; inverse during the first n pushes), or constant.

:func:`run_byzantine_sync`: every round all n workers propose a gradient at θ_t and a GAR of
:mod:`planner.simulate.aggregators` combines them.

No noise is added here: dampening, filters and GARs are post-processing and spend no privacy.
"""

from __future__ import annotations

import math
import time as wallclock
from collections import deque

import numpy as np
from scipy.special import ndtri

from fedplan.bounds import kardam
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.simulate import aggregators
from fedplan.planner.simulate.engine import DEFAULT_COMPUTE, Durations, EventQueue, spawn_generators
from fedplan.planner.simulate.models import is_finite
from fedplan.planner.simulate.problem import Problem
from fedplan.planner.simulate.records import Diverged, RoundRecorder, SimulationResult

__all__ = ["ARRIVALS", "ATTACKS", "DAMPENINGS", "little_is_enough_z", "run_byzantine_sync", "run_kardam"]

ATTACKS = ("none", "sign_flip", "noise", "stale_replay", "little")
ARRIVALS = ("event", "iid", "round_robin")
DAMPENINGS = ("inverse", "exponential", "adasgd", "constant")
#: AdaSGD's s% (L695: τ_thres = μ + 3σ, 99.7 %).
ADASGD_QUANTILE = 0.997
NO_PRIVACY = {"mechanism": "none", "epsilon": None, "delta": None,
              "statement": "No noise is added: the run is not differentially private (filters, dampening and GARs "
                           "are post-processing and would spend no privacy)."}


def little_is_enough_z(*, workers: int, faults: int) -> float:
    """z = Φ⁻¹((n − s)/n), s = ⌊n/2 + 1⌋ − f (Baruch et al. 2019); 0 unless 0 < s < n."""
    n = check_int("workers", workers, low=1)
    f = check_int("faults", faults, low=0, high=n)
    supporters = math.floor(n / 2 + 1) - f
    if supporters <= 0 or supporters >= n:
        return 0.0
    return float(ndtri((n - supporters) / n))


class _Workers:
    """Mini-batch gradients of the honest workers and the attacks of the Byzantine ones."""

    def __init__(self, problem: Problem, *, batch_size: int, byzantine: int, attack: str, scale: float,
                 faults: int, rng: np.random.Generator, attack_rng: np.random.Generator):
        self.problem, self.model = problem, problem.model
        self.batch = check_int("batch_size", batch_size, low=1)
        self.n = problem.n_clients
        self.byzantine = check_int("byzantine", byzantine, low=0, high=self.n - 1)
        self.attack = check_choice("attack", attack, ATTACKS)
        self.scale = check_real("attack_scale", scale, low=0.0)
        self.rng, self.attack_rng = rng, attack_rng
        sizes = np.asarray(problem.client_sizes)
        self.sizes, self.offsets = sizes, np.concatenate(([0], np.cumsum(sizes)[:-1]))
        self.stacked = problem.stacked
        self.z = little_is_enough_z(workers=self.n, faults=faults)
        self.replay: dict[int, np.ndarray] = {}

    def is_byzantine(self, worker: int) -> bool:
        return worker >= self.n - self.byzantine

    def honest(self, workers: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """Mean mini-batch gradients (rows) of ``workers`` at θ, one vectorised call."""
        local = self.rng.integers(0, self.sizes[workers][:, None], size=(workers.size, self.batch))
        rows = (self.offsets[workers][:, None] + local).ravel()
        starts = np.arange(workers.size + 1) * self.batch
        sums = self.model.clipped_gradient_sums(self.stacked.X[rows], self.stacked.y[rows], theta, starts, clip=None)
        return sums / self.batch

    def propose(self, worker: int, theta: np.ndarray, current: np.ndarray) -> np.ndarray:
        """What ``worker`` sends for a pull of θ (``current`` is the newest model, known to an omniscient attacker)."""
        if not self.is_byzantine(worker) or self.attack == "none":
            return self.honest(np.array([worker]), theta)[0]
        if self.attack == "sign_flip":
            return -self.scale * self.honest(np.array([worker]), theta)[0]
        if self.attack == "noise":
            return self.scale * self.attack_rng.standard_normal(self.model.dim)
        if self.attack == "stale_replay":
            if worker not in self.replay:
                self.replay[worker] = self.honest(np.array([worker]), np.zeros(self.model.dim))[0]
            return self.replay[worker]
        honest = self.honest(np.arange(self.n - self.byzantine), current)
        return honest.mean(axis=0) - self.z * honest.std(axis=0)


def _dampening(kind: str, rate: float, tau_thres: float | None) -> kardam.Dampening | None:
    """The fixed Λ, or None for AdaSGD with τ_thres estimated from the staleness history."""
    if kind == "inverse":
        return kardam.Dampening("inverse")
    if kind == "constant":
        return kardam.Dampening("constant")
    if kind == "exponential":
        return kardam.Dampening("exponential", rate=rate)
    return None if tau_thres is None else kardam.adasgd_dampening(tau_thres=tau_thres)


class _StalenessHistory:
    """Counts of the staleness values seen, for AdaSGD's τ_thres = their 99.7 % quantile (L612)."""

    def __init__(self) -> None:
        self.counts = np.zeros(16, dtype=np.int64)
        self.total = 0

    def add(self, tau: int) -> None:
        if tau >= self.counts.size:
            self.counts = np.concatenate((self.counts, np.zeros(max(tau + 1, 2 * self.counts.size) - self.counts.size,
                                                                dtype=np.int64)))
        self.counts[tau] += 1
        self.total += 1

    def quantile(self, level: float) -> int:
        return int(np.searchsorted(np.cumsum(self.counts), level * self.total))


class _Arrivals:
    """The next pushing worker: engine timing, i.i.d. uniform, or shuffled round robin."""

    def __init__(self, kind: str, n: int, compute: Durations, rng: np.random.Generator):
        self.kind, self.n, self.rng = kind, n, rng
        self.order: list[int] = []
        if kind == "event":
            self.queue = EventQueue()
            self.stream = compute.stream(rng)
            self.means = compute.means(n)
            for worker in range(n):
                self.queue.push(self.means[worker] * self.stream.draw(), 0, worker)

    def next(self) -> int:
        if self.kind == "iid":
            return int(self.rng.integers(self.n))
        if self.kind == "round_robin":
            if not self.order:
                self.order = self.rng.permutation(self.n).tolist()
            return self.order.pop()
        _, _, worker = self.queue.pop()
        self.queue.push(self.queue.now + self.means[worker] * self.stream.draw(), 0, worker)
        return worker

    @property
    def now(self) -> float:
        return self.queue.now if self.kind == "event" else 0.0


def _counts() -> dict:
    keys = ("delivered", "lipschitz_pass", "frequency_pass", "accepted")
    return {"honest": dict.fromkeys(keys, 0), "byzantine": dict.fromkeys(keys, 0)}


def _rates(counts: dict, n: int, f: int) -> dict:
    """Drop rates of each filter, Theorem 1's SL (honest passing the Lipschitz filter / delivered) and its band."""
    honest, byz = counts["honest"], counts["byzantine"]
    delivered = honest["delivered"] + byz["delivered"]

    def share(part, whole):
        return None if whole == 0 else part / whole

    band = kardam.accept_ratio_bounds(workers=n, byzantine=f)  # n ≥ 3f + 1: run_kardam refuses more faults
    return {"counts": counts, "slowdown_SL": share(honest["lipschitz_pass"], delivered),
            "theorem1_band": [band.lower, band.upper],
            "frequency_reject_rate": share(delivered - honest["frequency_pass"] - byz["frequency_pass"], delivered),
            "frequency_reject_predicted_iid": 2 * f / n if n > 2 * f else None,
            "honest_lipschitz_drop": share(honest["delivered"] - honest["lipschitz_pass"], honest["delivered"]),
            "honest_drop": share(honest["delivered"] - honest["accepted"], honest["delivered"]),
            "byzantine_rejected": share(byz["delivered"] - byz["accepted"], byz["delivered"])}


def run_kardam(*, problem: Problem, rounds: int, learning_rate: float, byzantine: int = 0, faults: int | None = None,
               attack: str = "sign_flip", attack_scale: float = 10.0, batch_size: int = 16,
               gradients_per_step: int = 1, dampening: str = "inverse", dampening_rate: float = 0.2,
               tau_thres: float | None = None, adaptive_rate: bool = False, filters: bool = True,
               lipschitz_window: int = 26, arrivals: str = "event", compute: Durations = DEFAULT_COMPUTE,
               max_pushes: int | None = None, seed: int = 0, eval_every: int = 1, progress=None) -> SimulationResult:
    """Asynchronous SGD with Kardam's filters and dampening (module docstring) for ``rounds`` model updates.

    ``faults`` is the f the server assumes (default: ``byzantine``); Kardam needs n ≥ 3f + 1 (K-N), checked
    with :func:`bounds.byzantine.max_byzantine`. ``filters=False`` gives plain dampened asynchronous SGD
    (AdaSGD/DynSGD without boosting). The run stops early (``config["stalled"]``) after ``max_pushes``
    pushes (default 50·R·rounds + 10n). The result's ``config["filters"]`` holds the drop rates.
    """
    from fedplan.bounds.byzantine import max_byzantine

    start = wallclock.perf_counter()
    rounds = check_int("rounds", rounds, low=1)
    gamma = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    n = problem.n_clients
    f = check_int("faults", byzantine if faults is None else faults, low=0)
    if filters and f > max_byzantine(workers=n, rule="kardam").max_faults:
        raise ValueError(f"faults={f} exceeds Kardam's tolerance with n = {n} workers (n >= 3f + 1: at most "
                         f"f = {max_byzantine(workers=n, rule='kardam').max_faults}; spec K-N)")
    arrivals = check_choice("arrivals", arrivals, ARRIVALS)
    dampening = check_choice("dampening", dampening, DAMPENINGS)
    rate = check_real("dampening_rate", dampening_rate, low=0.0, low_open=True)
    if tau_thres is not None:
        tau_thres = check_real("tau_thres", tau_thres, low=0.0, low_open=True)
    R = check_int("gradients_per_step", gradients_per_step, low=1)
    window = check_int("lipschitz_window", lipschitz_window, low=1)
    limit = 50 * R * rounds + 10 * n if max_pushes is None else check_int("max_pushes", max_pushes, low=1)
    batch_rng, attack_rng, arrival_rng = spawn_generators(seed, 3)
    workers = _Workers(problem, batch_size=batch_size, byzantine=byzantine, attack=attack, scale=attack_scale,
                       faults=f, rng=batch_rng, attack_rng=attack_rng)
    schedule = _Arrivals(arrivals, n, compute, arrival_rng)
    fixed = _dampening(dampening, rate, tau_thres)
    history = _StalenessHistory()
    X, y = problem.dataset.X_train, problem.dataset.y_train
    models = [np.zeros(problem.model.dim)]
    pulled = [0] * n
    previous: list[tuple[np.ndarray, int] | None] = [None] * n
    coefficients = [deque(maxlen=window) for _ in range(n)]
    recent = [-(k + 1) for k in range(2 * f)]
    last: tuple[np.ndarray, int] | None = None
    buffer: list[tuple[np.ndarray, int]] = []
    counts = _counts()
    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    pushes, diverged, message = 0, False, None
    try:
        with np.errstate(all="ignore"):
            while len(models) <= rounds and pushes < limit:
                worker = schedule.next()
                pushes += 1
                t, t_p = len(models) - 1, pulled[worker]
                pulled[worker] = t
                g = workers.propose(worker, models[t_p], models[t])
                kind = counts["byzantine" if workers.is_byzantine(worker) else "honest"]
                kind["delivered"] += 1
                history.add(t - t_p)
                if previous[worker] is not None and previous[worker][1] != t_p:
                    coefficients[worker].append(kardam.empirical_lipschitz(
                        gradient=g, other_gradient=previous[worker][0], model=models[t_p],
                        other_model=models[previous[worker][1]]))
                previous[worker] = (g, t_p)
                known = [max(values) for values in coefficients if values]
                if not filters or last is None or len(known) < n - f:
                    lipschitz = True
                else:
                    lipschitz = kardam.lipschitz_filter_accepts(
                        coefficient=kardam.empirical_lipschitz(gradient=g, other_gradient=last[0],
                                                               model=models[t_p], other_model=models[last[1]]),
                        coefficients=known, workers=n, byzantine=f)
                frequency = not filters or kardam.frequency_filter_accepts(recent_workers=recent, candidate=worker,
                                                                           byzantine=f)
                kind["lipschitz_pass"] += lipschitz
                kind["frequency_pass"] += frequency
                if not (lipschitz and frequency):
                    continue
                kind["accepted"] += 1
                recent = (recent + [worker])[-2 * f:] if f else recent
                last = (g, t_p)
                buffer.append((g, t - t_p))
                if len(buffer) < R:
                    continue
                taus = np.array([tau for _, tau in buffer], dtype=float)
                damp = fixed
                if damp is None:
                    damp = (kardam.Dampening("inverse") if history.total < n else
                            kardam.adasgd_dampening(tau_thres=max(history.quantile(ADASGD_QUANTILE), 1)))
                weights = np.atleast_1d(damp(taus))
                step = gamma * (kardam.adaptive_rate(dampening=damp, staleness=taus) if adaptive_rate else 1.0)
                theta = models[t] - step * (weights @ np.array([grad for grad, _ in buffer]))
                if not is_finite(theta):
                    raise Diverged(f"the model stopped being finite at update {t}")
                models.append(theta)
                buffer = []
                recorder.record(round=t, time=schedule.now if arrivals == "event" else float(pushes), w=theta,
                                staleness=float(taus.mean()), force=len(models) > rounds)
                recorder.rows[-1].update(grad_sq=float(np.sum(problem.model.gradient(X, y, theta) ** 2)),
                                         step_size=step, staleness_values=taus.astype(int).tolist())
            final = recorder.finish(models[-1])
    except Diverged as error:
        diverged, message = True, str(error)
        final = {"loss": None, "accuracy": None, "dist_sq": None}
    config = {"source": "Damaskinos Kardam L1094-1194 (spec §2.9); attacks L1266, Baruch et al. 2019",
              **problem.describe(), "workers": n, "byzantine": byzantine, "faults": f, "attack": attack,
              "attack_scale": attack_scale, "batch_size": batch_size, "gradients_per_step": R,
              "dampening": dampening, "dampening_rate": rate, "tau_thres": tau_thres, "adaptive_rate": adaptive_rate,
              "filters": _rates(counts, n, f) if filters else None, "kardam_filters": filters,
              "lipschitz_window": window, "arrivals": arrivals, "pushes": pushes, "updates": len(models) - 1,
              "stalled": len(models) <= rounds and not diverged, "learning_rate": gamma, "seed": seed}
    return SimulationResult(algorithm="kardam", rows=tuple(recorder.rows), final=final, privacy=dict(NO_PRIVACY),
                            virtual_time=schedule.now if arrivals == "event" else float(pushes),
                            wall_time_s=wallclock.perf_counter() - start, diverged=diverged, divergence=message,
                            config=config)


def run_byzantine_sync(*, problem: Problem, rule: str, rounds: int, learning_rate: float, faults: int,
                       byzantine: int | None = None, attack: str = "sign_flip", attack_scale: float = 10.0,
                       batch_size: int = 16, seed: int = 0, eval_every: int = 1, progress=None) -> SimulationResult:
    """Synchronous SGD: each round the n workers propose, ``rule`` aggregates with declared f = ``faults``
    (``byzantine`` actual attackers, default f), θ ← θ − η·GAR."""
    start = wallclock.perf_counter()
    rounds = check_int("rounds", rounds, low=1)
    eta = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    rule = check_choice("rule", aggregators.OLD_RULE_NAMES.get(rule, rule), aggregators.RULES)
    f = check_int("faults", faults, low=0)
    n = problem.n_clients
    aggregators.aggregate(rule, np.zeros((n, 1)), faults=f)  # rejects f beyond the rule's tolerance up front
    batch_rng, attack_rng = spawn_generators(seed, 2)
    workers = _Workers(problem, batch_size=batch_size, byzantine=f if byzantine is None else byzantine,
                       attack=attack, scale=attack_scale, faults=f, rng=batch_rng, attack_rng=attack_rng)
    honest = np.arange(n - workers.byzantine)
    theta = np.zeros(problem.model.dim)
    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    diverged, message = False, None
    try:
        with np.errstate(all="ignore"):
            for t in range(rounds):
                proposals = np.empty((n, theta.size))
                proposals[honest] = workers.honest(honest, theta)
                for worker in range(n - workers.byzantine, n):
                    proposals[worker] = workers.propose(worker, theta, theta)
                theta = theta - eta * aggregators.aggregate(rule, proposals, faults=f)
                if not is_finite(theta):
                    raise Diverged(f"the model stopped being finite at round {t}")
                recorder.record(round=t, time=float(t + 1), w=theta, force=t == rounds - 1)
            final = recorder.finish(theta)
    except Diverged as error:
        diverged, message = True, str(error)
        final = {"loss": None, "accuracy": None, "dist_sq": None}
    config = {"source": "Damaskinos ch. 4 (GARs L877-895, spec §2.6-2.7)", **problem.describe(), "rule": rule,
              "faults": f, "byzantine": workers.byzantine, "attack": attack, "attack_scale": attack_scale,
              "batch_size": batch_size, "learning_rate": eta, "seed": seed}
    return SimulationResult(algorithm=f"sync-{rule}", rows=tuple(recorder.rows), final=final,
                            privacy=dict(NO_PRIVACY), virtual_time=float(rounds),
                            wall_time_s=wallclock.perf_counter() - start, diverged=diverged, divergence=message,
                            config=config)
