"""planner.estimate: problem constants checked against independent computations.

The reference quantities here are computed sample by sample with plain loops and explicit Hessians
(Kronecker products for softmax), closed forms for ridge, and the brute-force maximum over the same
evaluation points that the estimator documents.
"""

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fedplan.planner.datasets import load_libsvm, split_clients, synthetic_logistic
from fedplan.planner.estimate import GRADIENT_TOLERANCE, ProblemConstants, estimate_constants

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
RHO = 0.05


# --------------------------------------------------------------------------- independent reference code


def sigmoid(z):
    return 0.5 * (1.0 + math.tanh(0.5 * z))  # no overflow far out


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def sample_gradient(model, theta, x, y, rho, k=1):
    """∇F(θ, (x, y)) of one sample, written out per model."""
    if model == "logistic":
        return (sigmoid(theta @ x) - y) * x + rho * theta
    if model == "ridge":
        return (theta @ x - y) * x + rho * theta
    Theta = theta.reshape(k, -1)
    residual = softmax(Theta @ x)
    residual[int(y)] -= 1.0
    return (np.outer(residual, x) + rho * Theta).ravel()


def sample_loss(model, theta, x, y, rho, k=1):
    penalty = 0.5 * rho * theta @ theta
    if model == "logistic":
        z = theta @ x
        return math.log1p(math.exp(z)) - y * z + penalty
    if model == "ridge":
        return 0.5 * (theta @ x - y) ** 2 + penalty
    scores = theta.reshape(k, -1) @ x
    return math.log(np.exp(scores).sum()) - scores[int(y)] + penalty


def mean_loss(model, theta, X, Y, rho, k=1):
    return float(np.mean([sample_loss(model, theta, x, y, rho, k) for x, y in zip(X, Y, strict=True)]))


def mean_gradient(model, theta, X, Y, rho, k=1):
    return np.mean([sample_gradient(model, theta, x, y, rho, k) for x, y in zip(X, Y, strict=True)], axis=0)


def hessian(model, theta, X, rho, k=1):
    """Explicit Hessian of (1/n) Σ F(θ, ζ)."""
    n, f = X.shape
    H = np.zeros((k * f, k * f))
    for x in X:
        if model == "logistic":
            s = sigmoid(theta @ x)
            H += s * (1 - s) * np.outer(x, x)
        elif model == "ridge":
            H += np.outer(x, x)
        else:
            pi = softmax(theta.reshape(k, f) @ x)
            H += np.kron(np.diag(pi) - np.outer(pi, pi), np.outer(x, x))
    return H / n + rho * np.eye(k * f)


@pytest.fixture(scope="module")
def binary():
    return synthetic_logistic(90, 4, seed=11)


@pytest.fixture(scope="module")
def multiclass():
    return synthetic_logistic(90, 3, seed=12, n_classes=3)


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(13)
    X = rng.standard_normal((60, 3))
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.standard_normal(60)


# --------------------------------------------------------------------------- μ and λ against exact Hessians


def test_logistic_mu_lambda_against_exact_hessians(binary):
    X, y = binary
    c = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=3, seed=0)
    blocks = split_clients(90, 3, seed=0)
    assert c.mu == RHO and c.mu_i == (RHO,) * 3
    for i, block in enumerate(blocks):
        top_at_zero = np.linalg.eigvalsh(hessian("logistic", np.zeros(4), X[block], RHO))[-1]
        assert c.lam_i[i] == pytest.approx(top_at_zero, rel=1e-12)  # the supremum, attained at θ = 0
    assert c.lam == max(c.lam_i)
    rng = np.random.default_rng(0)
    for _ in range(10):  # A3/A4 hold at arbitrary points for every client
        theta = 3 * rng.standard_normal(4)
        for block in blocks:
            eigenvalues = np.linalg.eigvalsh(hessian("logistic", theta, X[block], RHO))
            assert c.mu <= eigenvalues[0] + 1e-15 and eigenvalues[-1] <= c.lam + 1e-15
    far = 1e4 * rng.standard_normal(4)  # μ = ρ is the infimum: the curvature tends to ρ far out
    assert np.linalg.eigvalsh(hessian("logistic", far, X[blocks[0]], RHO))[0] == pytest.approx(RHO, rel=1e-9)
    assert c.gamma == pytest.approx(2 * c.lam / c.mu)
    assert "exact" in c.method["mu"] and "exact" in c.method["lam"]


def test_softmax_mu_is_exact_and_lambda_bounds_the_hessian(multiclass):
    X, y = multiclass
    c = estimate_constants(X=X, y=y, model="softmax", regularization=RHO, clients=2, seed=1)
    assert c.n_classes == 3 and c.dim == 9
    blocks = split_clients(90, 2, seed=1)
    rng = np.random.default_rng(1)
    for _ in range(5):
        theta = rng.standard_normal(9)
        for block in blocks:
            eigenvalues = np.linalg.eigvalsh(hessian("softmax", theta, X[block], RHO, k=3))
            assert eigenvalues[0] == pytest.approx(RHO, rel=1e-9)  # the 1 ⊗ v directions: μ = ρ exactly
            assert eigenvalues[-1] <= c.lam
    for i, block in enumerate(blocks):
        gram_top = np.linalg.eigvalsh(X[block].T @ X[block] / block.size)[-1]
        assert c.lam_i[i] == pytest.approx(gram_top / 2 + RHO, rel=1e-12)  # Böhning's bound
    assert "upper bound" in c.method["lam"]


def test_softmax_with_two_classes_has_the_exact_smoothness(binary):
    X, y = binary
    c = estimate_constants(X=X, y=y, model="softmax", regularization=RHO, client_indices=[np.arange(90)])
    top_at_zero = np.linalg.eigvalsh(hessian("softmax", np.zeros(8), X, RHO, k=2))[-1]
    assert c.lam == pytest.approx(top_at_zero, rel=1e-12)
    assert "exact for K = 2" in c.method["lam"]


# --------------------------------------------------------------------------- ridge: closed forms


def test_ridge_optima_gamma_and_curvature_against_closed_forms(regression):
    X, y = regression
    blocks = [np.arange(0, 20), np.arange(20, 45), np.arange(45, 60)]  # unequal d_i
    c = estimate_constants(X=X, y=y, model="ridge", regularization=RHO, client_indices=blocks)

    def solve(Xb, yb):
        theta = np.linalg.solve(Xb.T @ Xb / len(yb) + RHO * np.eye(3), Xb.T @ yb / len(yb))
        value = 0.5 * np.mean((Xb @ theta - yb) ** 2) + 0.5 * RHO * theta @ theta
        return theta, value

    theta_star, F_star = solve(X, y)
    np.testing.assert_allclose(c.theta_star, theta_star, rtol=0, atol=1e-8)
    assert c.F_star == pytest.approx(F_star, rel=1e-12)
    local = [solve(X[b], y[b]) for b in blocks]
    weights = np.array([b.size for b in blocks]) / 60
    F_local = np.array([value for _, value in local])
    np.testing.assert_allclose(c.F_i_star, F_local, rtol=1e-12)
    assert c.Gamma == c.Gamma_definition == pytest.approx(F_star - weights @ F_local, rel=1e-8)
    assert c.Gamma_paper == pytest.approx(F_local.max() - weights @ F_local, rel=1e-10)
    assert c.Y0 == pytest.approx(theta_star @ theta_star, rel=1e-10)
    assert c.Y0_paper == pytest.approx(sum(w * t @ t for w, (t, _) in zip(weights, local, strict=True)), rel=1e-10)
    assert c.F0_gap == pytest.approx(0.5 * np.mean(y**2) - F_star, rel=1e-10)
    for i, b in enumerate(blocks):
        eigenvalues = np.linalg.eigvalsh(X[b].T @ X[b] / b.size) + RHO
        assert c.mu_i[i] == pytest.approx(eigenvalues[0], rel=1e-12)
        assert c.lam_i[i] == pytest.approx(eigenvalues[-1], rel=1e-12)
    assert c.mu == min(c.mu_i) > RHO and c.lam == max(c.lam_i)
    assert c.client_sizes == (20, 25, 15) and c.n_samples == 60 and c.n_classes is None


# --------------------------------------------------------------------------- Γ, Y₀


def test_gamma_is_zero_when_all_clients_hold_the_same_data(binary):
    X, y = binary
    X3, y3 = np.vstack([X, X, X]), np.concatenate([y, y, y])
    blocks = [np.arange(90), np.arange(90, 180), np.arange(180, 270)]
    c = estimate_constants(X=X3, y=y3, model="logistic", regularization=RHO, client_indices=blocks)
    assert c.Gamma_definition == pytest.approx(0.0, abs=1e-13)
    assert c.Gamma_paper == pytest.approx(0.0, abs=1e-13)
    assert c.G_dispersion == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(c.theta_i_star, np.tile(c.theta_star, (3, 1)), atol=1e-7)
    assert c.Y0_paper == pytest.approx(c.Y0_definition, rel=1e-7)


def test_label_sorted_split_is_far_more_heterogeneous(binary):
    X, y = binary
    X = np.hstack([X, np.ones((90, 1))])  # an intercept lets a one-label client fit its label
    iid = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=3, seed=0)
    skewed = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=3, seed=0, iid=False)
    assert skewed.Gamma > 10 * iid.Gamma > 0
    assert skewed.G_dispersion > 5 * iid.G_dispersion
    # spec §7 item 20: the paper's max_i F_i* − Σ (d_i/d) F_i* (zhou L372) can underestimate Γ; here it does
    assert skewed.Gamma_paper < 0.8 * skewed.Gamma_definition


def test_variant_paper_and_theta0(binary):
    X, y = binary
    theta0 = np.array([1.0, -1.0, 0.5, 2.0])
    corrected = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=3, theta0=theta0)
    paper = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=3, theta0=theta0,
                               variant="paper")
    assert corrected.Gamma == corrected.Gamma_definition and corrected.Y0 == corrected.Y0_definition
    assert paper.Gamma == paper.Gamma_paper and paper.Y0 == paper.Y0_paper
    assert paper.Gamma_paper == corrected.Gamma_paper and paper.Gamma != paper.Gamma_definition
    assert corrected.Y0 == pytest.approx(np.sum((theta0 - corrected.theta_star) ** 2), rel=1e-12)
    F0 = mean_loss("logistic", theta0, X, y, RHO)
    assert corrected.F0_gap == pytest.approx(F0 - corrected.F_star, rel=1e-10)
    np.testing.assert_array_equal(corrected.theta0, theta0)
    with pytest.raises(ValueError):
        corrected.theta0[0] = 0.0  # read-only


# --------------------------------------------------------------------------- optima, G, ξ, Λ by brute force


@pytest.mark.parametrize(
    ("model", "k", "sparse"),
    [("logistic", 1, False), ("softmax", 3, False), ("ridge", 1, False), ("logistic", 1, True), ("softmax", 3, True)],
)
def test_optima_and_gradient_statistics_by_brute_force(binary, multiclass, regression, model, k, sparse):
    X, y = {"logistic": binary, "softmax": multiclass, "ridge": regression}[model]
    n, f = X.shape
    theta0 = np.linspace(-1.0, 2.0, k * f)  # a non-zero start: the ρθ part of every gradient counts
    features = X
    if sparse:  # half the entries zeroed: the ℓ1 norms off the support of x are ρ|θ_j|
        X = np.where(np.random.default_rng(3).random(X.shape) < 0.5, 0.0, X)
        features = sp.csr_matrix(X)
    c = estimate_constants(X=features, y=y, model=model, regularization=RHO, clients=3, seed=2, path_points=5,
                           theta0=theta0)
    blocks = split_clients(n, 3, seed=2, labels=y)
    # optimality, checked with the independent gradient
    assert np.linalg.norm(mean_gradient(model, c.theta_star, X, y, RHO, k)) < GRADIENT_TOLERANCE
    assert c.F_star == pytest.approx(mean_loss(model, c.theta_star, X, y, RHO, k), rel=1e-12)
    for i, block in enumerate(blocks):
        theta_i = c.theta_i_star[i]
        assert np.linalg.norm(mean_gradient(model, theta_i, X[block], y[block], RHO, k)) < GRADIENT_TOLERANCE
        assert c.F_i_star[i] == pytest.approx(mean_loss(model, theta_i, X[block], y[block], RHO, k), rel=1e-12)
    assert c.max_gradient_norm < GRADIENT_TOLERANCE
    # brute force over the documented evaluation points
    points = [c.theta0 + s * (c.theta_star - c.theta0) for s in np.linspace(0, 1, 5)] + list(c.theta_i_star)
    l2 = l1 = dispersion = 0.0
    variance = np.zeros(3)
    weights = np.array([b.size for b in blocks]) / n
    for theta in points:
        client_means = []
        for i, block in enumerate(blocks):
            grads = np.array([sample_gradient(model, theta, X[j], y[j], RHO, k) for j in block])
            l2 = max(l2, np.linalg.norm(grads, axis=1).max())
            l1 = max(l1, np.abs(grads).sum(axis=1).max())
            mean = grads.mean(axis=0)
            variance[i] = max(variance[i], np.mean(np.sum((grads - mean) ** 2, axis=1)))
            client_means.append(mean)
        client_means = np.array(client_means)
        overall = weights @ client_means
        dispersion = max(dispersion, weights @ np.sum((client_means - overall) ** 2, axis=1))
    assert c.G == pytest.approx(l2, rel=1e-10) and c.xi2 == c.G
    assert c.xi1 == pytest.approx(l1, rel=1e-10)
    np.testing.assert_allclose(c.Lambda_i, np.sqrt(variance), rtol=1e-8)
    assert c.G_dispersion == pytest.approx(math.sqrt(dispersion), rel=1e-7)
    at_optimum = np.array([sample_gradient(model, c.theta_star, x, t, RHO, k) for x, t in zip(X, y, strict=True)])
    assert c.sigma2_star == pytest.approx(np.mean(np.sum(at_optimum**2, axis=1)), rel=1e-9)


def test_sparse_input_gives_the_same_constants(binary):
    X, y = binary
    dense = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=3, seed=4)
    sparse = estimate_constants(X=sp.csr_matrix(X), y=y, model="logistic", regularization=RHO, clients=3, seed=4)
    for name in ("mu", "lam", "G", "xi1", "Gamma", "Y0", "Gamma_paper", "Y0_paper", "G_dispersion", "sigma2_star"):
        assert getattr(sparse, name) == pytest.approx(getattr(dense, name), rel=1e-7, abs=1e-12), name


def test_deterministic_for_a_fixed_seed(binary):
    X, y = binary
    first = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=5, seed=9)
    second = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=5, seed=9)
    assert first.to_dict() == second.to_dict()
    np.testing.assert_array_equal(first.theta_i_star, second.theta_i_star)
    other = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=5, seed=10)
    assert other.Gamma != first.Gamma and other.F_star == pytest.approx(first.F_star, rel=1e-12)
    assert isinstance(first, ProblemConstants)
    with pytest.raises(AttributeError):
        first.mu = 1.0  # frozen
    assert set(first.method) >= {"mu", "lam", "G", "xi1", "xi2", "Lambda_i", "Gamma", "Y0", "optimisation"}


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"clients": 91}, r"clients must be an integer in \[1, 90\]; got 91"),
        ({"regularization": 0.0}, r"regularization must be a real number in \(0, inf\); got 0"),
        ({"regularization": -1.0}, "regularization"),
        ({"model": "svm"}, "model must be one of 'logistic', 'softmax', 'ridge'; got 'svm'"),
        ({"variant": "exact"}, "variant"),
        ({"path_points": 1}, "path_points"),
        ({"theta0": np.zeros(3)}, "theta0 must hold 4 finite parameters"),
        ({"clients": None}, "exactly one of clients"),
        ({"client_indices": [np.arange(3)]}, "exactly one of clients"),
        ({"clients": None, "client_indices": [np.array([0, 90])]}, r"indices in \[0, 89\]"),
        ({"clients": None, "client_indices": [np.array([], dtype=int)]}, "non-empty"),
        ({"y": np.zeros(89)}, r"y must have shape \(90,\)"),
        ({"n_classes": 3}, "n_classes must be None or 2"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_name_the_parameter(binary, changes, fragment):
    X, y = binary
    kwargs = {"X": X, "y": y, "model": "logistic", "regularization": RHO, "clients": 3} | changes
    with pytest.raises(ValueError, match=fragment):
        estimate_constants(**kwargs)


def test_bad_data(binary, regression):
    X, y = binary
    with pytest.raises(ValueError, match=r"binary labels in \{0, 1\}"):
        estimate_constants(X=X, y=2 * y - 1, model="logistic", regularization=RHO, clients=2)
    with pytest.raises(ValueError, match="class indices"):
        estimate_constants(X=X, y=y - 0.5, model="softmax", regularization=RHO, clients=2)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X must hold finite numbers"):
        estimate_constants(X=bad, y=y, model="logistic", regularization=RHO, clients=2)
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        estimate_constants(X=X[:, 0], y=y, model="logistic", regularization=RHO, clients=2)
    Xr, yr = regression
    with pytest.raises(ValueError, match="n_classes must be None"):
        estimate_constants(X=Xr, y=yr, model="ridge", regularization=RHO, clients=2, n_classes=2)


# --------------------------------------------------------------------------- real data


@pytest.mark.skipif(not (DATA / "phishing.libsvm").is_file(), reason="shared data set phishing.libsvm absent")
def test_phishing_ten_clients():
    X, y = load_libsvm(DATA / "phishing.libsvm")
    c = estimate_constants(X=X, y=y, model="logistic", regularization=1e-3, clients=10, seed=0)
    # plausibility first
    assert c.client_sizes == (1106,) * 5 + (1105,) * 5
    row_sq_max = float(np.max(np.sum(X * X, axis=1)))
    assert c.mu == 1e-3 < c.lam <= row_sq_max / 4 + 1e-3  # never above the per-sample smoothness bound
    assert c.F0_gap == pytest.approx(math.log(2) - c.F_star, rel=1e-12)  # θ₀ = 0
    assert 0 < c.Gamma_definition < c.Gamma_paper  # iid split: tiny heterogeneity
    assert max(c.Lambda_i) < c.G <= c.xi1 <= math.sqrt(68) * c.G
    assert c.G <= math.sqrt(row_sq_max) + 1e-3 * math.sqrt(c.Y0)  # |σ − y|·‖x‖ + ρ‖θ‖ on the segment
    # pinned values (seed 0, ρ = 1e-3)
    pinned = {
        "lam": 0.166023, "G": 0.937342, "xi1": 5.16950, "Gamma": 0.00309282, "Y0": 159.857,
        "Gamma_paper": 0.0180034, "Y0_paper": 162.087, "F_star": 0.313581, "F0_gap": 0.379567,
        "G_dispersion": 0.0179605, "sigma2_star": 0.0607866,
    }
    for name, value in pinned.items():
        assert getattr(c, name) == pytest.approx(value, rel=1e-4), name
    assert c.gamma == pytest.approx(332.05, rel=1e-4)
    np.testing.assert_allclose(c.Lambda_i, 0.4915, atol=0.003)


def test_lanczos_path_agrees_with_the_dense_eigenvalues(regression, monkeypatch):
    # Above DENSE_EIGEN_MAX_FEATURES the Gram eigenvalues come from eigsh; force that path on a small problem.
    X, y = regression
    blocks = [np.arange(0, 30), np.arange(30, 60)]
    dense = estimate_constants(X=X, y=y, model="ridge", regularization=RHO, client_indices=blocks)
    monkeypatch.setattr("fedplan.planner.estimate.DENSE_EIGEN_MAX_FEATURES", 0)
    lanczos = estimate_constants(X=sp.csr_matrix(X), y=y, model="ridge", regularization=RHO, client_indices=blocks)
    np.testing.assert_allclose(lanczos.mu_i, dense.mu_i, rtol=1e-8)
    np.testing.assert_allclose(lanczos.lam_i, dense.lam_i, rtol=1e-8)


@pytest.mark.parametrize(("model", "k", "sparse"), [("logistic", 1, False), ("softmax", 3, True), ("ridge", 1, False)])
def test_newton_polish_uses_the_exact_hessian(binary, multiclass, regression, model, k, sparse):
    # white box: the dense Hessian of the Newton polish against the explicit one
    from fedplan.planner.estimate import _make_data, _Model

    X, y = {"logistic": binary, "softmax": multiclass, "ridge": regression}[model]
    labels = y.astype(np.int64) if model == "softmax" else y
    data = _make_data(sp.csr_matrix(X) if sparse else X, labels)
    theta = np.linspace(-1.0, 1.0, k * X.shape[1])
    computed = _Model(model, RHO, X.shape[1], k if model == "softmax" else None).hessian(data, theta)
    np.testing.assert_allclose(computed, hessian(model, theta, X, RHO, k), rtol=1e-12, atol=1e-14)


def test_constants_feed_zhou_problem(binary):
    X, y = binary
    c = estimate_constants(X=X, y=y, model="logistic", regularization=RHO, clients=3, seed=0)
    kwargs = c.fedsgd_problem_kwargs()
    assert kwargs["strong_convexity"] == c.mu and kwargs["smoothness"] == c.lam and kwargs["gradient_bound"] == c.G
    assert kwargs["heterogeneity"] == c.Gamma and kwargs["initial_distance"] == c.Y0 and kwargs["model_dim"] == 4
    fedsgd_dpc = pytest.importorskip("fedplan.bounds.fedsgd_dpc")
    problem = fedsgd_dpc.Problem(**kwargs)
    assert problem.gamma == pytest.approx(c.gamma) and problem.total_size == 90
