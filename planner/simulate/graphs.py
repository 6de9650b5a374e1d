"""Communication graphs of decentralised workers and the spectral gap of pairwise gossip on them.

A(DP)²SGD (Xu et al., xu L72-80, L107, App. A L309) averages the active worker k with one neighbour j
chosen uniformly from N(k): A = I − ½(e_k − e_j)(e_k − e_j)ᵀ. A is a symmetric projection, so AᵀA = A and

    E[AᵀA] = Σ_k p_k Σ_{j ∈ N(k)} A(k, j) / |N(k)|                        (spec xu §4.7)

whose second-largest eigenvalue modulus is Assumption 2.1's ρ (xu L135). Closed forms (p uniform):
ring λ₂ = 1 − (1 − cos(2π/K))/K, complete graph ρ = 1 − 1/(K − 1) (checked in the tests).

Topologies: ``ring`` (K ≥ 3), ``torus`` (an r × c grid with wrap-around, r, c ≥ 3, the most square
factorisation of K), ``complete`` (K ≥ 2) and ``random_regular`` (every worker has ``degree`` neighbours,
K·degree even; drawn by the pairing model with rejection until simple and connected, seeded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedplan.bounds.validation import check_choice, check_int

__all__ = ["TOPOLOGIES", "Graph", "gossip_expectation", "make_graph", "spectral_gap"]

TOPOLOGIES = ("ring", "torus", "complete", "random_regular")
#: Pairing-model draws before a random regular graph is given up (simple and connected is likely for d ≥ 3).
PAIRING_ATTEMPTS = 1000


@dataclass(frozen=True, eq=False)
class Graph:
    """An undirected connected graph on workers 0..K−1: ``neighbors[k]`` is the sorted tuple N(k)."""

    topology: str
    neighbors: tuple[tuple[int, ...], ...]

    @property
    def workers(self) -> int:
        return len(self.neighbors)

    @property
    def edges(self) -> int:
        return sum(len(row) for row in self.neighbors) // 2

    def to_dict(self) -> dict:
        return {"topology": self.topology, "workers": self.workers, "edges": self.edges,
                "degrees": sorted({len(row) for row in self.neighbors}), "rho": spectral_gap(self)}


def _from_edges(topology: str, workers: int, pairs) -> Graph:
    sets: list[set[int]] = [set() for _ in range(workers)]
    for a, b in pairs:
        if a != b:
            sets[a].add(b)
            sets[b].add(a)
    return Graph(topology, tuple(tuple(sorted(row)) for row in sets))


def _torus_shape(workers: int) -> tuple[int, int]:
    rows = max((r for r in range(3, math.isqrt(workers) + 1) if workers % r == 0), default=None)
    if rows is None or workers // rows < 3:
        raise ValueError(f"workers must be r*c with r, c >= 3 for topology='torus'; got {workers}")
    return rows, workers // rows


def _connected(neighbors) -> bool:
    seen, frontier = {0}, [0]
    while frontier:
        for j in neighbors[frontier.pop()]:
            if j not in seen:
                seen.add(j)
                frontier.append(j)
    return len(seen) == len(neighbors)


def _random_regular(workers: int, degree: int, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    stubs = np.repeat(np.arange(workers), degree)
    for _ in range(PAIRING_ATTEMPTS):
        pairs = rng.permutation(stubs).reshape(-1, 2)
        keys = {tuple(sorted(map(int, pair))) for pair in pairs}
        if np.all(pairs[:, 0] != pairs[:, 1]) and len(keys) == len(pairs):
            graph = _from_edges("random_regular", workers, keys)
            if _connected(graph.neighbors):
                return graph
    raise ValueError(f"no simple connected {degree}-regular graph on {workers} workers in {PAIRING_ATTEMPTS} draws; "
                     "raise degree")


def make_graph(*, topology: str, workers: int, degree: int | None = None, seed: int = 0) -> Graph:
    """The graph ``topology`` (:data:`TOPOLOGIES`) on ``workers`` nodes (``degree`` for random_regular only)."""
    topology = check_choice("topology", topology, TOPOLOGIES)
    low = {"ring": 3, "torus": 9, "complete": 2, "random_regular": 3}[topology]
    workers = check_int("workers", workers, low=low)
    if topology == "ring":
        return _from_edges(topology, workers, [(k, (k + 1) % workers) for k in range(workers)])
    if topology == "complete":
        return _from_edges(topology, workers, [(a, b) for a in range(workers) for b in range(a + 1, workers)])
    if topology == "torus":
        rows, cols = _torus_shape(workers)
        pairs = []
        for r in range(rows):
            for c in range(cols):
                k = r * cols + c
                pairs += [(k, r * cols + (c + 1) % cols), (k, ((r + 1) % rows) * cols + c)]
        return _from_edges(topology, workers, pairs)
    if degree is None:
        raise ValueError("topology='random_regular' needs degree (neighbours per worker)")
    degree = check_int("degree", degree, low=2, high=workers - 1)
    if workers * degree % 2:
        raise ValueError(f"workers * degree must be even for a regular graph; got {workers} * {degree}")
    return _random_regular(workers, degree, check_int("seed", seed, low=0))


def gossip_expectation(graph: Graph, probabilities=None) -> np.ndarray:
    """E[AᵀA] of pairwise gossip: worker k active with probability p_k (uniform by default), partner uniform."""
    k = graph.workers
    p = np.full(k, 1.0 / k) if probabilities is None else np.asarray(probabilities, dtype=float)
    if p.shape != (k,) or np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, rel_tol=1e-9):
        raise ValueError(f"probabilities must be {k} non-negative numbers summing to 1")
    expectation = np.zeros((k, k))
    for worker, row in enumerate(graph.neighbors):
        weight = p[worker] / len(row)
        for j in row:
            expectation[worker, worker] -= 0.5 * weight
            expectation[j, j] -= 0.5 * weight
            expectation[worker, j] += 0.5 * weight
            expectation[j, worker] += 0.5 * weight
    return expectation + np.eye(k)


def spectral_gap(graph: Graph, probabilities=None) -> float:
    """ρ = max(|λ₂|, |λ_K|) of E[AᵀA] (xu Assumption 2.1, L135); ρ < 1 iff the graph is connected."""
    eigenvalues = np.sort(np.linalg.eigvalsh(gossip_expectation(graph, probabilities)))[::-1]
    return float(max(abs(eigenvalues[1]), abs(eigenvalues[-1])))
