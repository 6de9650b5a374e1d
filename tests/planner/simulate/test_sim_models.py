"""planner.simulate.models: exact gradients and clipping against brute force."""

import numpy as np
import pytest

from fedplan.planner.simulate.models import Model


def _case(kind, seed=0, n=40, f=6, k=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f))
    if kind == "logistic":
        y = (rng.random(n) < 0.5).astype(float)
    elif kind == "softmax":
        y = rng.integers(0, k, n).astype(float)
    else:
        y = rng.standard_normal(n)
    model = Model(kind=kind, n_features=f, regularization=0.05, n_classes=k if kind == "softmax" else None)
    return model, X, y, rng.standard_normal(model.dim)


def _loss_of_one(model, x, y, w):
    return model.loss(x[None, :], np.array([y]), w)


@pytest.mark.parametrize("kind", ["logistic", "softmax", "ridge"])
def test_per_example_gradients_match_finite_differences(kind):
    model, X, y, w = _case(kind)
    grads = model.per_example_gradients(X[:3], y[:3], w)
    for row in range(3):
        numeric = np.array([(_loss_of_one(model, X[row], y[row], w + 1e-6 * e)
                             - _loss_of_one(model, X[row], y[row], w - 1e-6 * e)) / 2e-6 for e in np.eye(model.dim)])
        np.testing.assert_allclose(grads[row], numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.gradient(X, y, w), model.per_example_gradients(X, y, w).mean(axis=0), atol=1e-12)


@pytest.mark.parametrize("kind", ["logistic", "softmax", "ridge"])
def test_clipped_sum_equals_materialised_clipping(kind):
    model, X, y, w = _case(kind)
    grads = model.per_example_gradients(X, y, w)
    clip = float(np.median(np.linalg.norm(grads, axis=1)))
    brute = (grads * np.minimum(1.0, clip / np.linalg.norm(grads, axis=1))[:, None]).sum(axis=0)
    np.testing.assert_allclose(model.clipped_gradient_sum(X, y, w, clip=clip), brute, rtol=1e-10, atol=1e-12)
    l1 = (grads * np.minimum(1.0, clip / np.abs(grads).sum(axis=1))[:, None]).sum(axis=0)
    np.testing.assert_allclose(model.clipped_gradient_sum(X, y, w, clip=clip, norm="l1"), l1, rtol=1e-10)
    np.testing.assert_allclose(model.clipped_gradient_sum(X, y, w, clip=None), grads.sum(axis=0), rtol=1e-10)


def _clipped_reference(model, X, y, w, clip):
    """Σ_j clip(g_j) from materialised per-example gradients, one row at a time."""
    total = np.zeros(model.dim)
    for row in range(X.shape[0]):
        g = model.per_example_gradients(X[row:row + 1], y[row:row + 1], w)[0]
        total += g if clip is None else g * min(1.0, clip / np.linalg.norm(g))
    return total


@pytest.mark.parametrize("kind", ["logistic", "softmax", "ridge"])
@pytest.mark.parametrize("clip", [0.7, None])
@pytest.mark.parametrize("batch_model", [
    [2, 0, 1, 2, 0],  # no order: models 0 and 2 in two places each
    [0, 0, 1, 1, 2],  # ordered by model: one group per model, the one-row batch 3 ends a group
    [1, 2, 1, 1, 0],  # batch 1 (empty) reads another model between two batches of model 1 (one group of rows)
])
def test_batched_multi_version_sums_match_the_per_row_reference(kind, clip, batch_model):
    model, X, y, _ = _case(kind, n=30)
    models = np.random.default_rng(5).standard_normal((3, model.dim))
    models.setflags(write=False)  # the stack is only read
    starts = np.array([0, 4, 4, 11, 12, 30])  # batch 1 is empty, batch 3 has one row
    sums = model.clipped_gradient_sums(X, y, models, starts, clip=clip, batch_model=np.array(batch_model))
    for j, version in enumerate(batch_model):
        rows = slice(starts[j], starts[j + 1])
        np.testing.assert_allclose(sums[j], _clipped_reference(model, X[rows], y[rows], models[version], clip),
                                   rtol=1e-10, atol=1e-12)
    shared = model.clipped_gradient_sums(X, y, models[0], starts, clip=None)
    np.testing.assert_allclose(shared[2], model.clipped_gradient_sum(X[4:11], y[4:11], models[0], clip=None))
    assert not np.any(shared[1]) and not np.any(sums[1])


def test_constants_and_optimum():
    model, X, y, _ = _case("logistic", n=200)
    w_star = model.optimum(X, y)
    assert np.linalg.norm(model.gradient(X, y, w_star)) < 1e-8
    assert model.strong_convexity(X) == model.rho
    # L bounds every per-example Hessian: x xᵀ s(1−s) + ρI ≼ (‖x‖²/4 + ρ) I
    assert model.smoothness(X) == pytest.approx(0.25 * np.max(np.sum(X * X, axis=1)) + model.rho)
    grads = model.per_example_gradients(X, y, w_star)
    assert model.gradient_noise_at_optimum(X, y, w_star) == pytest.approx(2 * np.mean(np.sum(grads**2, axis=1)))
    assert model.accuracy(X, y, w_star) > 0.5 and Model(kind="ridge", n_features=2, regularization=0).accuracy(
        X[:, :2], y, np.zeros(2)) is None


def test_bad_model_options():
    with pytest.raises(ValueError, match="model must be one of 'logistic', 'softmax', 'ridge'"):
        Model(kind="svm", n_features=2, regularization=0.1)
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        Model(kind="softmax", n_features=2, regularization=0.1)
    with pytest.raises(ValueError, match="regularization must be a real number in"):
        Model(kind="ridge", n_features=2, regularization=-1)
