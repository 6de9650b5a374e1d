"""Discrete-event engine: a virtual clock, timing models and the delay log.

Algorithms plug in through three small pieces:

* :class:`EventQueue`: a heap of ``(time, sequence, kind, payload)`` events; ``pop`` advances the
  virtual clock ``now``. Ties are broken by insertion order, so runs are deterministic.
* :class:`Durations`: per-client random durations (compute times, up-link and down-link latencies):
  ``constant``, ``exponential`` or ``lognormal`` with a per-client mean. Independent latencies make
  messages overtake each other (reordering; no message is lost, van Dijk L43, L129). Unit draws come
  from :class:`UnitStream`, which draws in vectorised blocks and hands out Python floats.
* :class:`DelayLog`: the empirical delay τ̂(t) of every gradient computation (van Dijk Definition 1,
  L73) next to the permissible delay τ(t), stored as arrays block by block.

Randomness: every stream is a ``numpy.random.Generator`` spawned from one ``SeedSequence(seed)``
(:func:`spawn_generators`), so a seed fixes the whole run and adding a stream does not shift the others.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from fedplan.bounds.validation import check_choice, check_int, check_real

__all__ = ["DEFAULT_COMPUTE", "DEFAULT_LATENCY", "DISTRIBUTIONS", "DelayLog", "Durations", "EventQueue", "UnitStream",
           "spawn_generators"]

DISTRIBUTIONS = ("constant", "exponential", "lognormal")
#: Unit draws per vectorised block of a :class:`UnitStream`.
STREAM_BLOCK = 1 << 14


def spawn_generators(seed: int, count: int) -> list[np.random.Generator]:
    """``count`` independent generators derived from ``seed`` (``SeedSequence.spawn``)."""
    seed = check_int("seed", seed, low=0)
    return [np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(count)]


class UnitStream:
    """Mean-one draws of one distribution, produced in blocks of :data:`STREAM_BLOCK`.

    ``lognormal`` with shape s is exp(s·Z − s²/2) (mean one); ``exponential`` has rate one.
    """

    def __init__(self, distribution: str, rng: np.random.Generator, *, shape: float = 0.5):
        self.distribution = check_choice("distribution", distribution, DISTRIBUTIONS)
        self.shape = check_real("shape", shape, low=0.0)
        self.rng = rng
        self._values: list[float] = []
        self._next = 0

    def block(self, size: int) -> np.ndarray:
        """``size`` fresh unit draws as an array (bypasses the buffered scalars)."""
        if self.distribution == "constant":
            return np.ones(size)
        if self.distribution == "exponential":
            return self.rng.standard_exponential(size)
        return np.exp(self.shape * self.rng.standard_normal(size) - 0.5 * self.shape**2)

    def draw(self) -> float:
        """One unit draw as a Python float."""
        if self._next >= len(self._values):
            self._values = self.block(STREAM_BLOCK).tolist()
            self._next = 0
        value = self._values[self._next]
        self._next += 1
        return value


@dataclass(frozen=True)
class Durations:
    """A duration model: ``distribution`` with mean ``means[client]`` (one mean, or one per client)."""

    distribution: str = "exponential"
    mean: float | tuple[float, ...] = 1.0
    shape: float = 0.5

    def __post_init__(self) -> None:
        check_choice("distribution", self.distribution, DISTRIBUTIONS)
        check_real("shape", self.shape, low=0.0)
        means = self.mean if isinstance(self.mean, tuple) else (self.mean,)
        for index, value in enumerate(means):
            check_real(f"mean[{index}]" if len(means) > 1 else "mean", value, low=0.0)

    def means(self, clients: int) -> list[float]:
        """One mean per client (a single mean is shared; a tuple must have one entry per client)."""
        if isinstance(self.mean, tuple):
            if len(self.mean) != clients:
                raise ValueError(f"mean must have one entry per client ({clients}); got {len(self.mean)}")
            return [float(value) for value in self.mean]
        return [float(self.mean)] * clients

    def stream(self, rng: np.random.Generator) -> UnitStream:
        return UnitStream(self.distribution, rng, shape=self.shape)


#: Defaults shared by the algorithms: one time unit per local gradient computation, latencies ten times longer.
DEFAULT_COMPUTE = Durations("exponential", 1.0)
DEFAULT_LATENCY = Durations("exponential", 10.0)


class EventQueue:
    """A heap of timestamped events and the virtual clock ``now`` (the time of the last popped event)."""

    __slots__ = ("_heap", "_sequence", "now")

    def __init__(self) -> None:
        self._heap: list[tuple] = []
        self._sequence = 0
        self.now = 0.0

    def push(self, time: float, kind: int, payload=None) -> None:
        if time < self.now:
            raise ValueError(f"an event cannot be scheduled in the past: time {time:g} < now {self.now:g}")
        self._sequence += 1
        heapq.heappush(self._heap, (time, self._sequence, kind, payload))

    def pop(self) -> tuple[float, int, object]:
        time, _, kind, payload = heapq.heappop(self._heap)
        self.now = time
        return time, kind, payload

    def __len__(self) -> int:
        return len(self._heap)


class DelayLog:
    """Per gradient computation: global index t, empirical delay τ̂(t) and permissible τ(t) (van Dijk Def. 1).

    τ̂(t) = t − P, P the length of the longest prefix 0..P−1 of global iterations included in the model
    the computation read (spec §10.4). Blocks are appended as arrays; :meth:`arrays` concatenates them.
    """

    def __init__(self) -> None:
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def append(self, t: np.ndarray, tau_hat: np.ndarray, tau: np.ndarray) -> None:
        self._blocks.append((t, tau_hat, tau))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(t, τ̂(t), τ(t)) sorted by t."""
        if not self._blocks:
            empty = np.zeros(0)
            return empty.astype(np.int64), empty.astype(np.int64), empty
        t, tau_hat, tau = (np.concatenate(parts) for parts in zip(*self._blocks, strict=True))
        order = np.argsort(t, kind="stable")
        return t[order], tau_hat[order], tau[order]

    def summary(self) -> dict:
        """Count, largest τ̂, mean τ̂, and the computations with τ̂(t) > τ(t) (Definition 1 violated)."""
        t, tau_hat, tau = self.arrays()
        if t.size == 0:
            return {"computations": 0, "max_delay": None, "mean_delay": None, "violations": 0}
        bounded = np.isfinite(tau)
        return {"computations": int(t.size), "max_delay": int(tau_hat.max()), "mean_delay": float(tau_hat.mean()),
                "violations": int(np.count_nonzero(tau_hat[bounded] > tau[bounded]))}

    def quantiles(self, *, bins: int = 20, levels=(0.5, 0.9, 1.0)) -> list[dict]:
        """Plot-ready rows: per bin of t, the τ̂ quantiles and the largest τ(t) of the bin."""
        t, tau_hat, tau = self.arrays()
        if t.size == 0:
            return []
        edges = np.unique(np.linspace(0, t.size, min(bins, t.size) + 1).astype(int))
        rows = []
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            row = {"t": int(t[hi - 1])}
            for level in levels:
                row[f"tau_hat_q{int(round(100 * level))}"] = float(np.quantile(tau_hat[lo:hi], level))
            allowed = tau[lo:hi]
            row["tau"] = float(allowed.max()) if np.all(np.isfinite(allowed)) else None
            rows.append(row)
        return rows


def finite_or_none(value) -> float | None:
    """``float(value)`` if finite, else None (JSON never carries NaN or inf)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
