"""Convex models with exact gradients, per-example gradients and per-example clipping.

Per-example loss, including the L2 term (van Dijk I-38: f(w; ξ) = ℓ(w; ξ) + (ρ/2)‖w‖²; the same
models as :mod:`planner.estimate`, whose L-BFGS/Newton solver gives the optimum w*):

* ``"logistic"``: y ∈ {0, 1}, ℓ = log(1 + e^{wᵀx}) − y wᵀx;
* ``"softmax"``: y ∈ {0..K−1}, parameters W ∈ ℝ^{K×f} flattened row-major, ℓ = logsumexp(Wx) − (Wx)_y;
* ``"ridge"``: ℓ = ½(wᵀx − y)².

A per-example gradient is g = R ⊗ x + ρw with the residual R = ∂ℓ/∂(Wx). Its squared norm is
‖R‖²‖x‖² + 2ρ Rᵀ(Wx) + ρ²‖w‖², so clipping to ‖g‖₂ ≤ C needs no materialised gradients: the clipped
sum over a batch is Xᵀ(c∘R) + ρw Σc with c_j = min(1, C/‖g_j‖).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from scipy.special import expit, logsumexp

from fedplan.bounds.validation import check_choice, check_real
from fedplan.planner.estimate import MODELS, _make_data, _minimise, _Model

__all__ = ["MODELS", "Model", "is_finite"]


class Model:
    """One of ``"logistic"``, ``"softmax"``, ``"ridge"`` with L2 coefficient ``regularization`` (ρ ≥ 0)."""

    def __init__(self, *, kind: str, n_features: int, regularization: float, n_classes: int | None = None):
        self.kind = check_choice("model", kind, MODELS)
        self.rho = check_real("regularization", regularization, low=0.0)
        self.n_features = int(n_features)
        if self.kind == "softmax":
            if n_classes is None or n_classes < 2:
                raise ValueError(f"n_classes must be an integer >= 2 for model='softmax'; got {n_classes!r}")
            self.k = int(n_classes)
        else:
            self.k = 1
        self.dim = self.k * self.n_features

    # ------------------------------------------------------------------ batch quantities

    def scores(self, X: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Z = X Wᵀ, shape (n, K)."""
        return X @ w.reshape(self.k, self.n_features).T

    def residuals(self, Z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """R = ∂ℓ/∂Z, shape (n, K)."""
        if self.kind == "logistic":
            return (expit(Z[:, 0]) - y)[:, None]
        if self.kind == "ridge":
            return (Z[:, 0] - y)[:, None]
        R = np.exp(Z - logsumexp(Z, axis=1, keepdims=True))
        R[np.arange(Z.shape[0]), y.astype(np.int64)] -= 1.0
        return R

    def loss(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
        """Mean per-example loss over (X, y), including (ρ/2)‖w‖²."""
        Z = self.scores(X, w)
        if self.kind == "logistic":
            data = np.logaddexp(0.0, Z[:, 0]) - y * Z[:, 0]
        elif self.kind == "ridge":
            data = 0.5 * (Z[:, 0] - y) ** 2
        else:
            data = logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), y.astype(np.int64)]
        return float(np.mean(data)) + 0.5 * self.rho * float(w @ w)

    def accuracy(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float | None:
        """Share of correct predictions (``None`` for ridge, which has no classes)."""
        if self.kind == "ridge" or X.shape[0] == 0:
            return None
        Z = self.scores(X, w)
        predicted = (Z[:, 0] > 0) if self.kind == "logistic" else np.argmax(Z, axis=1)
        return float(np.mean(predicted == y))

    def gradient(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Exact mean gradient over (X, y)."""
        R = self.residuals(self.scores(X, w), y)
        return (R.T @ X).ravel() / X.shape[0] + self.rho * w

    def per_example_gradients(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Materialised per-example gradients, shape (n, dim) (for tests and ℓ1 clipping)."""
        R = self.residuals(self.scores(X, w), y)
        return (R[:, :, None] * X[:, None, :]).reshape(X.shape[0], self.dim) + self.rho * w

    def clip_factors(self, X: np.ndarray, Z: np.ndarray, R: np.ndarray, w_sq, clip: float,
                     row_sq_norms: np.ndarray | None = None) -> np.ndarray:
        """c_j = min(1, C/‖g_j‖₂) from the closed-form per-example norms (module docstring).

        ``w_sq`` is ‖w‖² of the model each row was computed at (a number, or one per row).
        """
        squares = np.einsum("ij,ij->i", X, X) if row_sq_norms is None else row_sq_norms
        norms_sq = (R * R).sum(axis=1) * squares
        if self.rho:
            norms_sq += 2.0 * self.rho * (R * Z).sum(axis=1) + self.rho**2 * w_sq
        norms = np.sqrt(np.maximum(norms_sq, 0.0))
        return np.minimum(1.0, clip / np.maximum(norms, 1e-300))

    def clipped_gradient_sum(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, *, clip: float | None,
                             norm: str = "l2", row_sq_norms: np.ndarray | None = None) -> np.ndarray:
        """Σ_j clip(g_j): every per-example gradient scaled to ``‖g_j‖ ≤ clip`` (ℓ2 or ℓ1); no clipping if None."""
        if X.shape[0] == 0:
            return np.zeros(self.dim)
        Z = self.scores(X, w)
        R = self.residuals(Z, y)
        if clip is None:
            return (R.T @ X).ravel() + self.rho * X.shape[0] * w
        if norm == "l1":
            grads = self.per_example_gradients(X, y, w)
            factors = np.minimum(1.0, clip / np.maximum(np.abs(grads).sum(axis=1), 1e-300))
            return factors @ grads
        c = self.clip_factors(X, Z, R, float(w @ w), clip, row_sq_norms)
        return ((c[:, None] * R).T @ X).ravel() + self.rho * float(c.sum()) * w

    def clipped_gradient_sums(self, X: np.ndarray, y: np.ndarray, models: np.ndarray, starts: np.ndarray, *,
                              clip: float | None, row_sq_norms: np.ndarray | None = None,
                              batch_model: np.ndarray | None = None) -> np.ndarray:
        """Clipped sums of many batches: rows ``starts[j]:starts[j+1]`` form batch j.

        ``models`` is one model (dim,) shared by every batch, or a stack (V, dim) with ``batch_model[j]``
        naming the row of batch j's model (batches that read different model versions, computed together).
        The stack is only read, never copied per row: consecutive rows that share a model form a group,
        whose scores are one matrix product with that model and whose ρw terms are one outer product
        (so batches ordered by model need one of each per model); the data terms of all sums are one
        sparse-times-dense product, batches × rows, whose entries are the clipped residuals. ``starts``
        has one more entry than there are batches (its last entry is ``len(X)``); empty batches give zero
        rows. Shape (batches, dim). This is the engines' vectorised hot path.
        """
        batches, n = len(starts) - 1, X.shape[0]
        if n == 0:
            return np.zeros((batches, self.dim))
        if models.ndim == 1:
            models, batch_model = models[None, :], np.zeros(batches, dtype=np.intp)
        counts = starts[1:] - starts[:-1]
        row_model = batch_model.repeat(counts)
        bounds = np.concatenate(([0], (row_model[1:] != row_model[:-1]).nonzero()[0] + 1, [n]))
        groups = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), row_model[bounds[:-1]].tolist(), strict=True))
        Z = np.empty((n, self.k))
        group_sq = []
        for lo, hi, model in groups:
            w = models[model]
            np.matmul(X[lo:hi], w.reshape(self.k, self.n_features).T, out=Z[lo:hi])
            group_sq.append(w @ w)
        R = self.residuals(Z, y)
        if clip is None:
            c = np.ones(n)
        else:
            c = self.clip_factors(X, Z, R, np.array(group_sq).repeat(bounds[1:] - bounds[:-1]), clip, row_sq_norms)
        weighted, columns = c[:, None] * R, np.arange(n)
        parts = [sparse.csr_array((weighted[:, label], columns, starts), shape=(batches, n)) @ X
                 for label in range(self.k)]
        out = parts[0] if self.k == 1 else np.stack(parts, axis=1).reshape(batches, self.dim)
        if self.rho:
            nonempty = counts.nonzero()[0]
            coefficients = np.zeros(batches)
            coefficients[nonempty] = self.rho * np.add.reduceat(c, starts[nonempty])
            first = (np.searchsorted(starts, bounds[:-1], side="right") - 1).tolist()
            stop = np.searchsorted(starts, bounds[1:] - 1, side="right").tolist()
            for (_, _, model), lo, hi in zip(groups, first, stop, strict=True):  # the batches of each group
                out[lo:hi] += coefficients[lo:hi, None] * models[model]
        return out

    # ------------------------------------------------------------------ constants of the problem

    def strong_convexity(self, X: np.ndarray) -> float:
        """μ: ρ for logistic/softmax (their data term is not uniformly strongly convex), λ_min(XᵀX/n)+ρ for ridge."""
        if self.kind != "ridge":
            return self.rho
        return max(float(np.linalg.eigvalsh(X.T @ X / X.shape[0])[0]), 0.0) + self.rho

    def smoothness(self, X: np.ndarray) -> float:
        """L of every per-example f(·; ξ): max‖x‖²·c + ρ with c = 1/4 (logistic), 1/2 (softmax), 1 (ridge)."""
        factor = {"logistic": 0.25, "softmax": 0.5, "ridge": 1.0}[self.kind]
        return factor * float(np.einsum("ij,ij->i", X, X).max()) + self.rho

    def optimum(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """w* = argmin of the mean loss, to ‖∇F(w*)‖₂ < 1e-8 (L-BFGS + Newton polish of :mod:`planner.estimate`).

        Needs ρ > 0 for logistic and softmax (otherwise the optimum may not exist).
        """
        if self.rho <= 0 and self.kind != "ridge":
            raise ValueError(f"regularization must be > 0 for the optimum of model={self.kind!r}; got {self.rho:g}")
        solver = _Model(self.kind, self.rho, self.n_features, self.k if self.kind == "softmax" else None)
        labels = y.astype(np.int64) if self.kind == "softmax" else y
        theta, _, _ = _minimise(solver, _make_data(X, labels), np.zeros(self.dim))
        return theta

    def gradient_noise_at_optimum(self, X: np.ndarray, y: np.ndarray, w_star: np.ndarray) -> float:
        """N = 2·mean‖∇f(w*; ξ)‖² (Assumption 4 of van Dijk et al., L675)."""
        grads = self.per_example_gradients(X, y, w_star)
        return 2.0 * float(np.mean(np.einsum("ij,ij->i", grads, grads)))


def is_finite(w: np.ndarray) -> bool:
    """True when every entry of ``w`` is finite (one dot product, cheap enough for every update)."""
    return math.isfinite(float(w @ w))

