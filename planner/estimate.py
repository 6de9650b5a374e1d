"""Problem constants of a convex federated learning problem, estimated from its data.

Zhou et al.'s bound U(T, b) (zhou L298, L401) and the other papers' recipes need constants that a
planner must measure on the user's data: μ (strong convexity, A4, zhou L266-270), λ (smoothness, A3,
zhou L260-264), G (A5, zhou L272-276), ξ₁ and ξ₂ (A1/A2, zhou L194, L218), Λ_i (A6, zhou L389),
Γ (non-iid degree, Def. 4, zhou L246) and Y₀ = ‖θ₀ − θ*‖² (zhou L254). The paper's "Discussion of
Implementation" (zhou L369-372) leaves μ, λ, ξ₁, G to "existing algorithms" and estimates Y₀ and Γ from
the clients' local optima θ_i*, F_i*. This module does the same on a data set split over N clients:

* every local optimum θ_i* and the global optimum θ* are computed with L-BFGS (scipy), polished by
  Newton steps when needed, to a gradient norm below :data:`GRADIENT_TOLERANCE`;
* μ and λ are the Hessian bounds of each local objective F_i (A3/A4 are stated for every F_i,
  zhou L264, L270), combined as μ = min_i μ_i and λ = max_i λ_i;
* G, ξ₁, ξ₂ and Λ_i are maxima of per-sample gradient statistics over a set of evaluation points that
  stands for the training trajectory (the segment θ₀ → θ* and every θ_i*);
* Γ and Y₀ come both exactly from their definitions (``variant="corrected"``, the default: the planner
  sees all the data) and from the paper's local-optimum estimators (``variant="paper"``, zhou L371-372).

The models, with per-sample loss F(θ, ζ) including the L2 term (so F_i(θ) = (1/d_i) Σ_ζ F(θ, ζ),
zhou L105, and the global F = Σ_i (d_i/d) F_i):

* ``"logistic"``: binary labels y ∈ {0, 1}, F(θ, (x, y)) = log(1 + e^{θᵀx}) − y θᵀx + (ρ/2)‖θ‖²;
* ``"softmax"``: labels y ∈ {0, …, K−1}, parameters Θ ∈ ℝ^{K×f} (p = K f, no intercept, like the
  paper's MNIST model, zhou L435), F(Θ, (x, y)) = logsumexp(Θx) − (Θx)_y + (ρ/2)‖Θ‖²_F;
* ``"ridge"``: real labels, F(θ, (x, y)) = ½(θᵀx − y)² + (ρ/2)‖θ‖².

ρ is ``regularization``; add a constant feature to ``X`` for an intercept (it is then regularised too).
The result is a frozen :class:`ProblemConstants` whose ``method`` mapping says, for every constant, how it
was obtained and whether it is exact, an upper bound or an estimate.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, eigsh
from scipy.special import expit, logsumexp

from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.datasets import split_clients

__all__ = ["GRADIENT_TOLERANCE", "MODELS", "VARIANTS", "ProblemConstants", "estimate_constants"]

MODELS = ("logistic", "softmax", "ridge")
VARIANTS = ("corrected", "paper")
#: Every optimum (global and local) is returned with ‖∇F‖₂ below this.
GRADIENT_TOLERANCE = 1e-8
#: Up to this many features the Gram matrices XᵢᵀXᵢ/d_i are formed and diagonalised exactly (eigvalsh);
#: above it, Lanczos (eigsh) on the matrix-free operator.
DENSE_EIGEN_MAX_FEATURES = 2048
#: Rows per block when per-sample gradients are materialised (ℓ1 norms): block rows × p ≤ this.
BLOCK_ENTRIES = 1 << 21
SOURCE = "Zhou et al., A1-A6 and Def. 4 (zhou L194, L218, L246, L254, L260-276, L389), estimation of Y0/Gamma L369-372"


@dataclass(frozen=True, eq=False)
class ProblemConstants:
    """Constants of Zhou et al.'s convergence analysis, measured on a data set split over N clients.

    The first block holds what recipes read (paper symbols, zhou Table II L766-810); ``Gamma`` and
    ``Y0`` are the ``variant``'s choice between the exact values (``*_definition``) and the paper's
    estimators (``*_paper``). Arrays are read-only. ``method`` documents every constant.
    """

    model: str
    regularization: float
    clients: int
    #: μ: strong convexity of every F_i (A4, zhou L266-270).
    mu: float
    #: λ: smoothness of every F_i (A3, zhou L260-264).
    lam: float
    #: G: largest per-sample gradient norm ‖∇F(θ, ζ)‖₂ at the evaluation points (estimate of A5, zhou L272-276).
    G: float
    #: ξ₁ / ξ₂: largest ℓ1 / ℓ2 norm of a per-sample gradient at the evaluation points (A1 zhou L194, A2 L218).
    xi1: float
    xi2: float
    #: Γ: non-iid degree (Def. 4, zhou L246), as chosen by ``variant``.
    Gamma: float
    #: Y₀ = E‖θ̄₀ − θ*‖² (zhou L254), as chosen by ``variant``.
    Y0: float
    variant: str
    client_sizes: tuple[int, ...]
    n_features: int
    n_classes: int | None
    #: p: number of model parameters (n_features, or n_classes·n_features for softmax).
    dim: int
    Gamma_definition: float
    Gamma_paper: float
    Y0_definition: float
    Y0_paper: float
    #: F* = F(θ*) and F_i* = F_i(θ_i*).
    F_star: float
    F_i_star: tuple[float, ...]
    #: F(θ₀) − F*: the initial loss gap used by function-value bounds of other papers.
    F0_gap: float
    #: sqrt(max over evaluation points of Σ_i (d_i/d)‖∇F_i(θ) − ∇F(θ)‖²): the client dispersion that Lemma 2's
    #: exact form needs (zhou L631); with equal d_i it may replace G there (spec §3.4).
    G_dispersion: float
    #: (1/d) Σ_ζ ‖∇F(θ*, ζ)‖²: per-sample gradient variance at the optimum (∇F(θ*) = 0).
    sigma2_star: float
    #: Per client: μ_i, λ_i, and Λ_i, the within-client standard deviation of per-sample gradients (A6, zhou L389).
    mu_i: tuple[float, ...]
    lam_i: tuple[float, ...]
    Lambda_i: tuple[float, ...]
    #: Largest ‖∇F‖₂ (or ‖∇F_i‖₂) at the returned optima.
    max_gradient_norm: float
    theta0: np.ndarray = field(repr=False)
    theta_star: np.ndarray = field(repr=False)
    theta_i_star: np.ndarray = field(repr=False)
    method: Mapping[str, str] = field(repr=False)
    source: str = SOURCE

    @property
    def n_samples(self) -> int:
        """d = Σ_i d_i (zhou L83)."""
        return int(sum(self.client_sizes))

    @property
    def gamma(self) -> float:
        """γ = 2λ/μ, the step-size offset of Theorems 3-4 (zhou L296)."""
        return 2.0 * self.lam / self.mu

    def fedsgd_problem_kwargs(self) -> dict:
        """Keyword arguments of ``bounds.fedsgd_dpc.Problem`` (Zhou et al.'s constants under its names)."""
        return {
            "num_clients": self.clients,
            "model_dim": self.dim,
            "client_sizes": tuple(float(size) for size in self.client_sizes),
            "strong_convexity": self.mu,
            "smoothness": self.lam,
            "gradient_bound": self.G,
            "heterogeneity": self.Gamma,
            "initial_distance": self.Y0,
            "local_gradient_std": self.Lambda_i,
        }

    def to_dict(self) -> dict:
        """Every scalar and tuple field (no parameter vectors), JSON-serialisable."""
        skip = {"theta0", "theta_star", "theta_i_star"}
        out = {}
        for name in self.__dataclass_fields__:
            if name in skip:
                continue
            value = getattr(self, name)
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        out["n_samples"] = self.n_samples
        out["gamma"] = self.gamma
        return out


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class _Data:
    """One client's (or the global) samples: features, labels (class indices for softmax), squared row norms."""

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    row_sq_norms: np.ndarray
    #: For CSR ``X``: the row (sample) of every stored entry; None for dense ``X``.
    entry_rows: np.ndarray | None = None

    @property
    def size(self) -> int:
        return self.X.shape[0]


class _Model:
    """Loss, gradient, Hessian-vector product and per-sample gradient statistics of one model.

    Parameters are a flat vector of length p; for softmax it is Θ (K × f) in row-major order. Scores are
    Z = X Θᵀ (shape (n, K)); logistic and ridge use K = 1. The per-sample gradient is
    ∇F(θ, ζ) = R_ζ ⊗ x_ζ + ρθ with R_ζ = ∂loss/∂Z_ζ (the "residual").
    """

    def __init__(self, name: str, regularization: float, n_features: int, n_classes: int | None):
        self.name = name
        self.rho = regularization
        self.f = n_features
        self.k = n_classes if name == "softmax" else 1
        self.p = self.k * self.f

    def _scores(self, data: _Data, theta: np.ndarray) -> np.ndarray:
        return np.asarray(data.X @ theta.reshape(self.k, self.f).T)

    def _loss_residual(self, data: _Data, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-sample data loss (n,) and residual R = ∂loss/∂Z (n, K)."""
        if self.name == "logistic":
            z = Z[:, 0]
            return np.logaddexp(0.0, z) - data.y * z, (expit(z) - data.y)[:, None]
        if self.name == "ridge":
            r = Z[:, 0] - data.y
            return 0.5 * r * r, r[:, None]
        lse = logsumexp(Z, axis=1)
        rows = np.arange(Z.shape[0])
        R = np.exp(Z - lse[:, None])
        R[rows, data.y] -= 1.0
        return lse - Z[rows, data.y], R

    def value_and_gradient(self, data: _Data, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """F_D(θ) = (1/|D|) Σ_ζ F(θ, ζ) and its gradient."""
        loss, R = self._loss_residual(data, self._scores(data, theta))
        value = float(np.mean(loss)) + 0.5 * self.rho * float(theta @ theta)
        gradient = np.asarray(data.X.T @ R).T.ravel() / data.size + self.rho * theta
        return value, gradient

    def hessian_vector(self, data: _Data, theta: np.ndarray, vector: np.ndarray) -> np.ndarray:
        Z = self._scores(data, theta)
        U = self._scores(data, vector)
        if self.name == "logistic":
            s = expit(Z[:, 0])
            W = (s * (1.0 - s) * U[:, 0])[:, None]
        elif self.name == "ridge":
            W = U
        else:
            P = np.exp(Z - logsumexp(Z, axis=1)[:, None])
            PU = P * U
            W = PU - P * PU.sum(axis=1, keepdims=True)
        return np.asarray(data.X.T @ W).T.ravel() / data.size + self.rho * vector

    def hessian(self, data: _Data, theta: np.ndarray) -> np.ndarray:
        """The dense p × p Hessian of F_D at θ (for small p)."""
        Z = self._scores(data, theta)
        if self.name == "logistic":
            s = expit(Z[:, 0])
            weights = s * (1.0 - s)
            blocks = [[_weighted_gram(data.X, weights)]]
        elif self.name == "ridge":
            blocks = [[_weighted_gram(data.X, np.ones(data.size))]]
        else:
            P = np.exp(Z - logsumexp(Z, axis=1)[:, None])
            blocks = [[_weighted_gram(data.X, (P[:, a] if a == b else 0.0) - P[:, a] * P[:, b])
                       for b in range(self.k)] for a in range(self.k)]
        return np.block(blocks) / data.size + self.rho * np.eye(self.p)

    def sample_statistics(self, data: _Data, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-sample ‖∇F(θ, ζ)‖₂², ‖∇F(θ, ζ)‖₁ and the mean gradient ∇F_D(θ).

        ‖R⊗x + ρθ‖² = ‖R‖²‖x‖² + 2ρ Rᵀ(Θx) + ρ²‖θ‖², with Θx the scores. The ℓ1 norms are summed over
        the stored entries of a sparse ``X``, and over materialised blocks of gradients for a dense one.
        """
        Z = self._scores(data, theta)
        _, R = self._loss_residual(data, Z)
        rho = self.rho
        l2_sq = (R * R).sum(axis=1) * data.row_sq_norms + 2.0 * rho * (R * Z).sum(axis=1) + rho * rho * (theta @ theta)
        l2_sq = np.maximum(l2_sq, 0.0)
        Theta = theta.reshape(self.k, self.f)
        if data.entry_rows is not None:
            # Off the support of x the gradient is ρθ: ‖∇F(θ, ζ)‖₁ = ρ‖θ‖₁ + Σ_{j∈supp x} (|R x_j + ρθ_j| − ρ|θ_j|).
            X = data.X
            l1 = np.full(data.size, rho * float(np.abs(Theta).sum()))
            for k in range(self.k):
                theta_k = Theta[k, X.indices]
                entries = np.abs(R[data.entry_rows, k] * X.data + rho * theta_k) - rho * np.abs(theta_k)
                l1 += np.bincount(data.entry_rows, weights=entries, minlength=data.size)
        else:
            l1 = np.empty(data.size)
            block = max(1, BLOCK_ENTRIES // self.p)
            for start in range(0, data.size, block):
                stop = min(start + block, data.size)
                grads = R[start:stop, :, None] * data.X[start:stop, None, :] + rho * Theta[None, :, :]
                l1[start:stop] = np.abs(grads).sum(axis=(1, 2))
        mean_gradient = np.asarray(data.X.T @ R).T.ravel() / data.size + rho * theta
        return l2_sq, l1, mean_gradient

    def curvature(self, data: _Data) -> tuple[float, float, float]:
        """(μ_D, λ_D, λ_D at θ = 0) for F_D; see the ``method`` texts of :func:`estimate_constants`."""
        low, high = _gram_extreme_eigenvalues(data)
        if self.name == "ridge":
            return low + self.rho, high + self.rho, high + self.rho
        if self.name == "logistic":
            return self.rho, 0.25 * high + self.rho, 0.25 * high + self.rho
        return self.rho, 0.5 * high + self.rho, high / self.k + self.rho


def _weighted_gram(X, weights: np.ndarray) -> np.ndarray:
    """Xᵀ diag(weights) X as a dense array."""
    product = X.T @ (X.multiply(weights[:, None]).tocsr() if sp.issparse(X) else X * weights[:, None])
    return product.toarray() if sp.issparse(product) else np.asarray(product)


def _gram_extreme_eigenvalues(data: _Data) -> tuple[float, float]:
    """Smallest and largest eigenvalue of XᵀX/n (exact below DENSE_EIGEN_MAX_FEATURES features)."""
    n, f = data.X.shape
    if f <= DENSE_EIGEN_MAX_FEATURES:
        gram = data.X.T @ data.X
        gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
        eigenvalues = np.linalg.eigvalsh(gram / n)
        return max(float(eigenvalues[0]), 0.0), float(eigenvalues[-1])
    operator = LinearOperator((f, f), matvec=lambda v: data.X.T @ (data.X @ v) / n, dtype=np.float64)
    high = float(eigsh(operator, k=1, which="LA", tol=1e-10, return_eigenvectors=False)[0])
    low = 0.0 if f > n else max(float(eigsh(operator, k=1, which="SA", tol=1e-10, return_eigenvectors=False)[0]), 0.0)
    return low, high


def _minimise(model: _Model, data: _Data, start: np.ndarray) -> tuple[np.ndarray, float, float]:
    """argmin of the strongly convex F_D: L-BFGS, then trust-region Newton-CG if ‖∇F_D‖₂ is not yet tiny."""

    def fun(theta):
        return model.value_and_gradient(data, theta)

    def hessp(theta, vector):
        return model.hessian_vector(data, theta, vector)

    result = minimize(fun, start, jac=True, method="L-BFGS-B",
                      options={"maxiter": 20_000, "maxcor": 30, "gtol": 1e-12, "ftol": 1e-16})
    theta = result.x
    value, gradient = fun(theta)
    target = 0.1 * GRADIENT_TOLERANCE
    if np.linalg.norm(gradient) >= target and model.p <= DENSE_EIGEN_MAX_FEATURES:
        # Newton steps with the exact Hessian, kept while they reduce the gradient norm.
        for _ in range(20):
            step = np.linalg.solve(model.hessian(data, theta), gradient)
            new_value, new_gradient = fun(theta - step)
            if not np.linalg.norm(new_gradient) < np.linalg.norm(gradient):
                break
            theta, value, gradient = theta - step, new_value, new_gradient
            if np.linalg.norm(gradient) < target:
                break
    elif np.linalg.norm(gradient) >= target:
        result = minimize(fun, theta, jac=True, hessp=hessp, method="trust-ncg",
                          options={"gtol": target, "maxiter": 500})
        theta = result.x
        value, gradient = fun(theta)
    norm = float(np.linalg.norm(gradient))
    if not norm < GRADIENT_TOLERANCE:
        raise RuntimeError(f"the optimiser stopped at gradient norm {norm:.3g} >= {GRADIENT_TOLERANCE:g} "
                           f"({model.name}, {data.size} samples): the problem is too badly conditioned or badly "
                           "scaled for float64; rescale the features or labels, or raise the regularization")
    return theta, value, norm


# --------------------------------------------------------------------------- validation


def _check_features(X) -> np.ndarray | sp.csr_matrix:
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array or sparse matrix; got {X.ndim} dimensions")
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        finite = bool(np.all(np.isfinite(X.data)))
    else:
        try:
            X = np.ascontiguousarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("X must be a 2-D array of real numbers (or a scipy.sparse matrix)") from None
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}")
        finite = bool(np.all(np.isfinite(X)))
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must have at least one sample and one feature; got shape {X.shape}")
    if not finite:
        raise ValueError("X must hold finite numbers; got NaN or inf")
    return X


def _check_labels(y, n_samples: int, model: str, n_classes: int | None) -> tuple[np.ndarray, int | None]:
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y must be a 1-D array of real numbers") from None
    if y.shape != (n_samples,):
        raise ValueError(f"y must have shape ({n_samples},) to match X; got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must hold finite numbers; got NaN or inf")
    if model == "ridge":
        if n_classes is not None:
            raise ValueError(f"n_classes must be None for model='ridge'; got {n_classes!r}")
        return y, None
    present = np.unique(y)
    if model == "logistic":
        if not np.all(np.isin(present, (0.0, 1.0))):
            shown = ", ".join(f"{v:g}" for v in present[:6])
            raise ValueError(f"y must hold binary labels in {{0, 1}} for model='logistic' (load_libsvm maps "
                             f"{{-1, +1}} and {{1, 2}} to {{0, 1}}); got values {{{shown}}}")
        if n_classes not in (None, 2):
            raise ValueError(f"n_classes must be None or 2 for model='logistic'; got {n_classes!r}")
        return y, 2
    if not np.all((present >= 0) & (present == np.round(present))):
        raise ValueError("y must hold class indices 0, 1, ..., K-1 for model='softmax'; "
                         f"got values such as {present[(present < 0) | (present != np.round(present))][0]:g}")
    largest = int(present[-1])
    if n_classes is None:
        n_classes = max(largest + 1, 2)
    else:
        n_classes = check_int("n_classes", n_classes, low=max(largest + 1, 2))
    return y.astype(np.int64), n_classes


def _check_client_indices(client_indices, n_samples: int) -> list[np.ndarray]:
    if isinstance(client_indices, np.ndarray) and client_indices.ndim == 1:
        raise ValueError("client_indices must be a sequence of index arrays, one per client; got one flat array")
    blocks = []
    for number, block in enumerate(client_indices):
        array = np.asarray(block)
        if array.ndim != 1 or array.size == 0:
            raise ValueError(f"client_indices[{number}] must be a non-empty 1-D array of sample indices")
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"client_indices[{number}] must hold integers; got dtype {array.dtype}")
        if array.min() < 0 or array.max() >= n_samples:
            raise ValueError(f"client_indices[{number}] must hold indices in [0, {n_samples - 1}]; "
                             f"got values in [{array.min()}, {array.max()}]")
        blocks.append(array.astype(np.int64))
    if not blocks:
        raise ValueError("client_indices must hold at least one client")
    return blocks


def _make_data(X, y, rows: np.ndarray | None = None) -> _Data:
    if rows is not None:
        X, y = X[rows], y[rows]
    if sp.issparse(X):
        squares = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        entry_rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        return _Data(X=X, y=y, row_sq_norms=squares, entry_rows=entry_rows)
    return _Data(X=X, y=y, row_sq_norms=np.einsum("ij,ij->i", X, X))


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64, copy=True)
    array.setflags(write=False)
    return array


# --------------------------------------------------------------------------- the estimator


def estimate_constants(
    *,
    X,
    y,
    model: str,
    regularization: float,
    clients: int | None = None,
    client_indices: Sequence[np.ndarray] | None = None,
    seed: int = 0,
    iid: bool = True,
    n_classes: int | None = None,
    theta0: np.ndarray | None = None,
    variant: str = "corrected",
    path_points: int = 11,
) -> ProblemConstants:
    """Estimate μ, λ, G, ξ₁, ξ₂, Λ_i, Γ and Y₀ of a convex model on data split over N clients.

    Parameters
    ----------
    X : array (n_samples, n_features) or scipy.sparse matrix
        Features (e.g. from :func:`planner.datasets.load_libsvm`).
    y : array (n_samples,)
        Labels: {0, 1} for ``"logistic"``, class indices 0..K−1 for ``"softmax"``, reals for ``"ridge"``.
    model : {"logistic", "softmax", "ridge"}
    regularization : float
        ρ > 0, the L2 coefficient (ρ/2)‖θ‖² of every per-sample loss. It must be positive: Zhou et al.'s
        analysis assumes μ-strong convexity (A4, zhou L266-270), and ρ is the μ of the logistic and softmax
        models.
    clients : int, optional
        N, in [1, n_samples]: split the samples with :func:`planner.datasets.split_clients` using
        ``seed`` and ``iid`` (``iid=False`` sorts by label). Give exactly one of ``clients`` and
        ``client_indices``.
    client_indices : sequence of int arrays, optional
        𝒟_i as index arrays into ``X``, one per client (they may overlap; the global objective is
        F = Σ_i (d_i/d) F_i over their concatenation, zhou L246).
    seed : int, default 0
    iid : bool, default True
    n_classes : int, optional
        K for ``"softmax"`` (default: largest label + 1).
    theta0 : array (p,), optional
        Initial parameters θ₀ (default zeros; the paper allows a random start, zhou L89).
    variant : {"corrected", "paper"}, default "corrected"
        Which values fill ``Gamma`` and ``Y0``: "corrected" uses the definitions with the global optimum
        (Γ = F* − Σ_i (d_i/d) F_i*, zhou L246; Y₀ = ‖θ₀ − θ*‖², zhou L254); "paper" uses the estimators
        of zhou L371-372 that need only local optima (Ŷ₀ = Σ_i (d_i/d)‖θ₀ − θ_i*‖²,
        Γ̂ = max_i F_i* − Σ_i (d_i/d) F_i*). Both are always reported.
    path_points : int, default 11
        Number of equally spaced points on the segment θ₀ → θ* (endpoints included) at which gradient
        statistics are evaluated, in [2, 1000].

    Returns
    -------
    ProblemConstants

    Raises
    ------
    ValueError
        On a bad argument, naming it, its value and the allowed range.
    RuntimeError
        If an optimum cannot be located to ‖∇F‖₂ < :data:`GRADIENT_TOLERANCE`.
    """
    model = check_choice("model", model, MODELS)
    variant = check_choice("variant", variant, VARIANTS)
    rho = check_real("regularization", regularization, low=0.0, low_open=True)
    path_points = check_int("path_points", path_points, low=2, high=1000)
    X = _check_features(X)
    n_samples, n_features = X.shape
    y, n_classes = _check_labels(y, n_samples, model, n_classes)
    if (clients is None) == (client_indices is None):
        raise ValueError("give exactly one of clients (a number of clients) and client_indices (their samples)")
    if clients is not None:
        clients = check_int("clients", clients, low=1, high=n_samples)
        blocks = split_clients(n_samples, clients, seed=seed, iid=iid, labels=y)
    else:
        blocks = _check_client_indices(client_indices, n_samples)
    N = len(blocks)
    sizes = np.array([block.size for block in blocks], dtype=np.float64)
    weights = sizes / sizes.sum()

    m = _Model(model, rho, n_features, n_classes)
    if theta0 is None:
        start = np.zeros(m.p)
    else:
        start = np.asarray(theta0, dtype=np.float64).ravel()
        if start.shape != (m.p,) or not np.all(np.isfinite(start)):
            raise ValueError(f"theta0 must hold {m.p} finite parameters (p for model={model!r}); "
                             f"got shape {np.shape(theta0)}")

    client_data = [_make_data(X, y, block) for block in blocks]
    everything = _make_data(X, y, np.concatenate(blocks))

    # Optima: θ* of F = Σ (d_i/d) F_i, then every θ_i* warm-started from θ*.
    theta_star, F_star, worst = _minimise(m, everything, start)
    local = []
    for data in client_data:
        theta_i, F_i, norm = _minimise(m, data, theta_star)
        local.append((theta_i, F_i))
        worst = max(worst, norm)
    client_theta = np.array([theta for theta, _ in local])
    client_F = np.array([value for _, value in local])

    # Γ (Def. 4, L246) and the paper's estimate (L372); round-off below 0 is clipped.
    weighted_local = float(weights @ client_F)
    gamma_definition = max(F_star - weighted_local, 0.0)
    gamma_paper = max(float(client_F.max()) - weighted_local, 0.0)
    # Y₀ (L254) and the paper's estimate (L371).
    y0_definition = float(np.sum((start - theta_star) ** 2))
    y0_paper = float(weights @ np.sum((client_theta - start) ** 2, axis=1))
    F0_gap = max(m.value_and_gradient(everything, start)[0] - F_star, 0.0)

    # Curvature: A3/A4 hold for every F_i (L264, L270).
    curvatures = [m.curvature(data) for data in client_data]
    mu_i = tuple(c[0] for c in curvatures)
    lam_i = tuple(c[1] for c in curvatures)
    lam_at_zero = max(c[2] for c in curvatures)

    # Gradient statistics over the evaluation points.
    steps = np.linspace(0.0, 1.0, path_points)
    points = [start + s * (theta_star - start) for s in steps] + list(client_theta)
    l2_max = 0.0
    l1_max = 0.0
    lambda_sq = np.zeros(N)
    dispersion_sq = 0.0
    for theta in points:
        means = []
        for i, data in enumerate(client_data):
            l2_sq, l1, mean_gradient = m.sample_statistics(data, theta)
            l2_max = max(l2_max, float(l2_sq.max()))
            l1_max = max(l1_max, float(l1.max()))
            lambda_sq[i] = max(lambda_sq[i], float(l2_sq.mean() - mean_gradient @ mean_gradient))
            means.append(mean_gradient)
        means = np.array(means)
        overall = weights @ means
        dispersion_sq = max(dispersion_sq, float(weights @ np.sum((means - overall) ** 2, axis=1)))
    sigma2_star = float(m.sample_statistics(everything, theta_star)[0].mean())

    G = math.sqrt(l2_max)
    method = _method_texts(model, m.k, rho, lam_at_zero, max(lam_i), path_points, N, variant)
    return ProblemConstants(
        model=model,
        regularization=rho,
        clients=N,
        mu=float(min(mu_i)),
        lam=float(max(lam_i)),
        G=G,
        xi1=l1_max,
        xi2=G,
        Lambda_i=tuple(float(math.sqrt(max(v, 0.0))) for v in lambda_sq),
        Gamma=gamma_definition if variant == "corrected" else gamma_paper,
        Y0=y0_definition if variant == "corrected" else y0_paper,
        variant=variant,
        client_sizes=tuple(int(block.size) for block in blocks),
        n_features=int(n_features),
        n_classes=n_classes,
        dim=m.p,
        Gamma_definition=gamma_definition,
        Gamma_paper=gamma_paper,
        Y0_definition=y0_definition,
        Y0_paper=y0_paper,
        F_star=float(F_star),
        F_i_star=tuple(float(v) for v in client_F),
        F0_gap=float(F0_gap),
        G_dispersion=math.sqrt(dispersion_sq),
        sigma2_star=sigma2_star,
        mu_i=tuple(float(v) for v in mu_i),
        lam_i=tuple(float(v) for v in lam_i),
        max_gradient_norm=float(worst),
        theta0=_readonly(start),
        theta_star=_readonly(theta_star),
        theta_i_star=_readonly(client_theta),
        method=types.MappingProxyType(method),
    )


def _method_texts(model: str, k: int, rho: float, lam_at_zero: float, lam: float, path_points: int, N: int,
                  variant: str) -> dict[str, str]:
    gram = "λ_max/λ_min of XᵢᵀXᵢ/d_i (eigvalsh up to 2048 features, Lanczos above)"
    if model == "ridge":
        mu_text = f"exact: min_i λ_min(XᵢᵀXᵢ/d_i) + ρ, the constant Hessian of F_i (A4, zhou L266-270); {gram}"
        lam_text = f"exact: max_i λ_max(XᵢᵀXᵢ/d_i) + ρ, the constant Hessian of F_i (A3, zhou L260-264); {gram}"
    elif model == "logistic":
        mu_text = (f"exact: ρ = {rho:g}, the infimum over θ of λ_min(∇²F_i(θ)) (A4 must hold for all θ, zhou "
                   "L266-270): the data term Xᵀdiag(s(1−s))X/d_i tends to 0 along any direction θ with xᵀθ ≠ 0 "
                   "for every non-zero x; the curvature near θ* is larger")
        lam_text = ("exact: max_i λ_max(XᵢᵀXᵢ/d_i)/4 + ρ; s(1−s) ≤ 1/4 with equality at θ = 0, so the supremum "
                    f"of λ_max(∇²F_i(θ)) is attained at θ = 0 (A3, zhou L260-264); {gram}. Never larger than "
                    "the per-sample bound max‖x‖²/4 + ρ")
    else:
        mu_text = (f"exact: ρ = {rho:g}; at every Θ the softmax Hessian (diag π − ππᵀ) ⊗ xxᵀ annihilates "
                   "the directions 1 ⊗ v (A4, zhou L266-270)")
        bound = "exact for K = 2 (attained at Θ = 0)" if k == 2 else (
            f"an upper bound; the true constant lies in [{lam_at_zero:.6g} (the value at Θ = 0, "
            f"λ_max(XᵀX/d_i)/K + ρ), {lam:.6g}]")
        lam_text = ("max_i λ_max(XᵢᵀXᵢ/d_i)/2 + ρ from Böhning's bound diag π − ππᵀ ≼ ½(I − 11ᵀ/K) "
                    f"(A3, zhou L260-264): {bound}; {gram}")
    points = (f"the {path_points} equally spaced points of the segment θ₀ → θ* and the {N} local optima θ_i* "
              "(a stand-in for the trajectory θ_t, which is unknown before training)")
    return {
        "optimisation": (f"θ* of F = Σ (d_i/d) F_i and every θ_i* of F_i: scipy L-BFGS-B, then Newton steps "
                         "with the exact Hessian (trust-region Newton-CG above 2048 parameters) until "
                         f"‖∇‖₂ < {GRADIENT_TOLERANCE:g}; local solves start at θ*"),
        "mu": mu_text + ("; μ = min_i μ_i: A4 is stated for every F_i and used per client in Lemma 3's proof "
                         "(zhou L668), although Table II calls μ a constant of F (zhou L806)"),
        "lam": lam_text + ("; λ = max_i λ_i: A3 is stated for every F_i and used per client in Lemma 3's proof "
                           "(zhou L660), although Table II calls λ a constant of F (zhou L805)"),
        "G": ("max over samples ζ and evaluation points θ of ‖∇F(θ, ζ)‖₂ (A5, zhou L272-276, read as a "
              f"per-sample bound on the trajectory); evaluation points: {points}. An estimate, not a bound "
              "for noisy iterates that leave these points"),
        "xi1": (f"max over samples and evaluation points of ‖∇F(θ, ζ)‖₁ (A1, zhou L194); {points}. In "
                "practice ξ₁ is the ℓ1 clipping norm (zhou L441): this is the norm at which clipping never "
                "binds at these points"),
        "xi2": "max over samples and evaluation points of ‖∇F(θ, ζ)‖₂ (A2, zhou L218); equals G by construction",
        "Lambda_i": ("Λ_i² = max over evaluation points of (1/d_i) Σ_{ζ∈D_i} ‖∇F(θ, ζ) − ∇F_i(θ)‖², the "
                     "within-client variance of a per-sample gradient (A6, zhou L389; Table II calls Λ_i the "
                     f"variance, zhou L807); {points}"),
        "Gamma": (f"variant={variant!r}. Definition (Gamma_definition): F* − Σ_i (d_i/d) F_i* with the global "
                  "optimum (Def. 4, zhou L246), exact up to the optimiser tolerance. Paper (Gamma_paper): "
                  "max_i F_i* − Σ_i (d_i/d) F_i* (zhou L372), which can under- or over-estimate Γ"),
        "Y0": (f"variant={variant!r}. Definition (Y0_definition): ‖θ₀ − θ*‖² (Y_t of zhou L254 at t = 0, a "
               "deterministic start). Paper (Y0_paper): Σ_i (d_i/d)‖θ₀ − θ_i*‖² from the local optima "
               "(zhou L371)"),
        "F0_gap": "F(θ₀) − F*, the initial loss gap (not a constant of Zhou et al.; used by other recipes)",
        "G_dispersion": ("sqrt of max over evaluation points of Σ_i (d_i/d)‖∇F_i(θ) − ∇F(θ)‖², the client "
                         "dispersion in Lemma 2's exact variance (zhou L631)"),
        "sigma2_star": "(1/d) Σ_ζ ‖∇F(θ*, ζ)‖², the per-sample gradient variance at the optimum",
    }
