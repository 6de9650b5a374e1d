"""An isotropic quadratic with exact, parameter-free gradient noise, built from data the engines can sample.

The Monte-Carlo checks of the convergence theorems (Li et al. Theorems 2 and 4, spec li TV-C8/TV-C9;
Kardam's Theorems 4 and 5, Damaskinos L1877-1930) need a problem whose constants are known exactly, not
estimated: smoothness L, the distance ‖x₁ − x*‖ from the start x₁ = 0, F(x₁) − F*, and a per-sample gradient
noise whose second moment is σ² at every x (Li Eq. (3) L76, Damaskinos Assumption 2 L1068).

Construction (ridge model, :mod:`planner.simulate.models`): every sample has x_i = c·e₁ and the model has the
L2 term ρ = L − c², so every per-sample Hessian is c²e₁e₁ᵀ + ρI (eigenvalue L along e₁, L − c² ≈ L across).
Each client holds two samples with labels m ± σ/c, m = L·distance/c: the per-sample gradient is
∇F(x) ∓ σe₁, so the noise has norm exactly σ, mean 0 under uniform draws, and does not depend on x; the
optimum is x* = distance·e₁, so F(0) − F* = L·distance²/2 exactly (the start error lies along e₁).
With c = 0.01 the other nine directions have curvature L − 10⁻⁴, which only the (isotropic) privacy noise
sees: the expectations differ from the exactly isotropic problem's by a relative 10⁻⁴ or less.
"""

from __future__ import annotations

import numpy as np

from fedplan.bounds.validation import check_int, check_real
from fedplan.planner.simulate.data import Dataset
from fedplan.planner.simulate.models import Model
from fedplan.planner.simulate.problem import ClientSplit, Problem

__all__ = ["isotropic_quadratic"]

#: The feature scale c of the construction (module docstring).
FEATURE_SCALE = 0.01


def isotropic_quadratic(*, dim: int, smoothness: float, distance: float, noise_std: float,
                        clients: int) -> Problem:
    """The quadratic of the module docstring on R^``dim`` split over ``clients`` (two samples each).

    ``smoothness`` L, ``distance`` ‖0 − x*‖ and ``noise_std`` σ = the per-sample gradient noise norm.
    """
    dim = check_int("dim", dim, low=1)
    smoothness = check_real("smoothness", smoothness, low=2 * FEATURE_SCALE**2, low_open=True)
    distance = check_real("distance", distance, low=0.0)
    sigma = check_real("noise_std", noise_std, low=0.0)
    clients = check_int("clients", clients, low=1)
    c = FEATURE_SCALE
    X = np.zeros((2 * clients, dim))
    X[:, 0] = c
    centre = smoothness * distance / c
    y = np.tile([centre + sigma / c, centre - sigma / c], clients)
    data = Dataset(name=f"isotropic-quadratic-d{dim}", task="regression", X_train=X, y_train=y, X_test=X.copy(),
                   y_test=y.copy())
    split = ClientSplit(X=X, y=y, indices=tuple(np.array([2 * k, 2 * k + 1]) for k in range(clients)))
    model = Model(kind="ridge", n_features=dim, regularization=smoothness - c**2)
    w_star = np.zeros(dim)
    w_star[0] = c * centre / smoothness
    return Problem(model=model, dataset=data, split=split, w_star=w_star)
