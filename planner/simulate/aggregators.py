"""Gradient aggregation rules (GARs) of the synchronous Byzantine setting (Damaskinos thesis ch. 4), in numpy.

Every rule takes the n proposed gradients as the rows of ``gradients`` (n × d) and the declared number of
Byzantine workers f; f beyond the rule's tolerance (:func:`bounds.byzantine.max_byzantine`: Krum/Multi-Krum
n ≥ 2f + 3, Bulyan n ≥ 4f + 3, averaging f = 0) raises ``ValueError`` naming the requirement.

* :func:`multi_krum` (L877-895, Eq. 4.1; spec §2.6): score(i) = sum of the n − f − 2 smallest squared
  distances ‖G_i − G_j‖², j ≠ i; the mean of the m best-scoring gradients (m = n − f − 2 by default);
  :func:`krum` is m = 1 (L893). A non-finite distance counts as +∞.
* :func:`bulyan` (L891-895, L974; spec §2.7, AggregaThor's form): θ = n − 2f − 2 Multi-Krum outputs from
  scores computed once (the k-th averages the m₀ − k best remaining, m₀ = n − f − 2, then the best is
  removed and its distances subtracted from the other scores), then per coordinate the mean of the
  β = n − 4f − 2 values closest to the coordinate-wise median.
* :func:`average`: the plain mean (not resilient, L833).

Pairwise distances are one Gram-matrix product (O(n²d), the cost of L974).
"""

from __future__ import annotations

import numpy as np

from fedplan.bounds import byzantine
from fedplan.bounds.validation import check_choice, check_int

__all__ = ["RULES", "aggregate", "average", "bulyan", "krum", "krum_scores", "multi_krum", "pairwise_sq_distances"]

#: The rules by the names of :mod:`fedplan.bounds.byzantine` (``average`` is the old name of ``averaging``).
RULES = ("averaging", "krum", "multi-krum", "bulyan")
OLD_RULE_NAMES = {"average": "averaging"}


def _checked(gradients, faults: int, rule: str) -> tuple[np.ndarray, int]:
    G = np.asarray(gradients, dtype=float)
    if G.ndim != 2 or G.shape[0] == 0:
        raise ValueError(f"gradients must be an (n, d) array with n >= 1; got shape {np.shape(gradients)}")
    f = check_int("faults", faults, low=0)
    tolerance = byzantine.max_byzantine(workers=G.shape[0], rule=rule)
    if f > tolerance.max_faults:
        raise ValueError(f"faults={f} exceeds what {rule} tolerates with n = {G.shape[0]} workers "
                         f"({tolerance.requirement}: at most f = {tolerance.max_faults}; {tolerance.source})")
    return G, f


def pairwise_sq_distances(gradients: np.ndarray) -> np.ndarray:
    """D_ij = ‖G_i − G_j‖² (n × n, zero diagonal); +∞ where a row is not finite."""
    G = np.asarray(gradients, dtype=float)
    finite = np.all(np.isfinite(G), axis=1)
    safe = np.where(finite[:, None], G, 0.0)
    squares = np.einsum("ij,ij->i", safe, safe)
    D = np.maximum(squares[:, None] + squares[None, :] - 2.0 * safe @ safe.T, 0.0)
    D[~finite, :] = np.inf
    D[:, ~finite] = np.inf
    np.fill_diagonal(D, 0.0)
    return D


def krum_scores(distances: np.ndarray, faults: int) -> np.ndarray:
    """score(i) = Σ of the n − f − 2 smallest D_ij over j ≠ i (L891)."""
    n = distances.shape[0]
    neighbours = n - faults - 2
    others = distances + np.diag(np.full(n, np.inf))
    return np.sum(np.partition(others, neighbours - 1, axis=1)[:, :neighbours], axis=1)


def multi_krum(gradients, *, faults: int, m: int | None = None) -> np.ndarray:
    """Mean of the m gradients with the smallest Krum scores (m ∈ [1, n − f − 2], default n − f − 2)."""
    G, f = _checked(gradients, faults, "multi-krum")
    n = G.shape[0]
    m = n - f - 2 if m is None else check_int("m", m, low=1, high=n - f - 2)
    chosen = np.argsort(krum_scores(pairwise_sq_distances(G), f), kind="stable")[:m]
    return G[chosen].mean(axis=0)


def krum(gradients, *, faults: int) -> np.ndarray:
    """Krum: the single gradient with the smallest score (Multi-Krum with m = 1, L893)."""
    _checked(gradients, faults, "krum")
    return multi_krum(gradients, faults=faults, m=1)


def bulyan(gradients, *, faults: int) -> np.ndarray:
    """Bulyan over Multi-Krum (AggregaThor's form, spec §2.7; parameters :func:`bounds.byzantine.bulyan_parameters`)."""
    G, f = _checked(gradients, faults, "bulyan")
    params = byzantine.bulyan_parameters(workers=G.shape[0], faults=f)
    D = pairwise_sq_distances(G)
    scores = krum_scores(D, f)
    remaining = np.ones(G.shape[0], dtype=bool)
    selections = []
    for k in range(params["selection_size"]):
        order = np.flatnonzero(remaining)[np.argsort(scores[remaining], kind="stable")]
        selections.append(G[order[:params["multikrum_m0"] - k]].mean(axis=0))
        best = order[0]
        remaining[best] = False
        scores = scores - D[:, best]
    I = np.array(selections)  # noqa: E741 - the spec's I_k
    median = np.median(I, axis=0)
    beta = params["averaged_per_coordinate"]
    closest = np.argpartition(np.abs(I - median), beta - 1, axis=0)[:beta]
    return np.take_along_axis(I, closest, axis=0).mean(axis=0)


def average(gradients, *, faults: int = 0) -> np.ndarray:
    """Plain mean (tolerates f = 0 only, L833)."""
    G, _ = _checked(gradients, faults, "averaging")
    return G.mean(axis=0)


def aggregate(rule: str, gradients, *, faults: int) -> np.ndarray:
    """Dispatch to one of :data:`RULES`."""
    rule = check_choice("rule", OLD_RULE_NAMES.get(rule, rule), RULES)
    function = {"averaging": average, "krum": krum, "multi-krum": multi_krum, "bulyan": bulyan}[rule]
    return function(gradients, faults=faults)
