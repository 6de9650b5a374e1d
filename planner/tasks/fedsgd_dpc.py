"""Zhou et al.'s FedSGD-DPC: the optimal numbers of rounds T* and clients per round b*, and the bound U(T*, b*).

``fedplan fedsgd-dpc optimum`` runs :class:`FedsgdDpcOptimum`. The problem's constants are given (raw-constants
mode: strong_convexity, smoothness, gradient_bound, heterogeneity, initial_distance, client_size, model_dim and
the clipping_norm) or estimated from a LIBSVM file split over the clients (``dataset`` mode).

    fedplan fedsgd-dpc optimum --mechanism laplace --strong-convexity 10 --smoothness 20 --gradient-bound 1 \\
        --clipping-norm 1 --heterogeneity 0 --initial-distance 1 --clients 10 --client-size 6000 \\
        --model-dim 7850 --target-epsilon 1
    fedplan fedsgd-dpc optimum --mechanism laplace --dataset phishing.libsvm --clients 10 \\
        --target-epsilon 1 --json

``--variant paper`` answers with the paper's rounding rule in every mode (free, ``--fixed-clients-per-round``,
``--fixed-rounds``), which reproduces Table I (zhou L467-472), with the exact integer optimum beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.bounds.theorem import VARIANTS
from fedplan.bounds.validation import check_int
from fedplan.planner.fedsgd_dpc import MECHANISMS, FedSGDPlan, estimate_problem, plan_fedsgd_dpc
from fedplan.planner.tasks.accounting import target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import OneOf, Report, Request, choice, count, flag, real, text

#: The raw constants of the problem and the keys the report's ``constants`` gives them (the paper's symbols).
RAW = {"strong_convexity": "mu", "smoothness": "lam", "gradient_bound": "G", "heterogeneity": "Gamma",
       "initial_distance": "Y0", "clients": "N", "client_size": "d", "model_dim": "p"}
#: Models whose constants can be estimated from a data set (:data:`planner.estimate.MODELS`, which loads scipy).
MODELS = ("logistic", "softmax", "ridge")
GAUSSIAN_ONLY = ("target_delta", "sample_rate", "noise_constant")


@dataclass(frozen=True, kw_only=True)
class FedsgdDpcOptimum(Request):
    """T*, b* and the bound U(T*, b*) for a per-client privacy target, from constants or from a data set."""

    command: ClassVar = ("fedsgd-dpc", "optimum")
    summary: ClassVar = "T*, b* and the bound, from constants or from a data set"
    one_of: ClassVar = (OneOf(("fixed_clients_per_round", "fixed_rounds"), required=False),)

    mechanism: str = choice(..., help="laplace (pure ε per client, Sec. V) or gaussian ((ε, δ) per client, "
                            "Sec. VI)", choices=MECHANISMS)
    clients: int = count(..., help="number of clients N (with dataset: the data are split over them)", low=2,
                         high=zhou.MAX_CLIENTS, deprecated=("--N",))
    strong_convexity: float | None = real(None, help="strong convexity μ of every F_i (A4, L266); raw-constants "
                                          "mode", low=zhou.MIN_STRONG_CONVEXITY, deprecated=("--mu",))
    smoothness: float | None = real(None, help="smoothness λ ≥ μ of every F_i (A3, L260); raw-constants mode",
                                    low=0.0, low_open=True, deprecated=("--lam",))
    gradient_bound: float | None = real(None, help="G with E‖∇F_i(θ, ζ)‖² ≤ G² (A5, L272); raw-constants mode",
                                        low=0.0, deprecated=("--G",))
    heterogeneity: float | None = real(None, help="non-iid degree Γ (Def. 4, L246); raw-constants mode", low=0.0,
                                       deprecated=("--Gamma",))
    initial_distance: float | None = real(None, help="squared initial distance Y₀ = ‖θ₀ − θ*‖² (L254); "
                                          "raw-constants mode", low=0.0, deprecated=("--Y0",))
    client_size: tuple[int, ...] | None = count(None, help="records per client d_i: one value for every client, or "
                                                "one per client; raw-constants mode", low=1, multiple=True,
                                                deprecated=("--d",))
    model_dim: int | None = count(None, help="model dimension p; raw-constants mode", low=1, deprecated=("--p",))
    local_gradient_std: float | None = real(None, help="local gradient std Λ_i (A6, L389; gaussian); "
                                            "raw-constants mode (default 0)", low=0.0, deprecated=("--Lambda",))
    dataset: str | None = text(None, help="LIBSVM file: estimate the constants from it (zhou L369-372) instead of "
                               "giving them", metavar="FILE")
    model: str = choice("logistic", help="the model whose constants are estimated (with dataset)", choices=MODELS)
    regularization: float = real(1e-3, help="L2 coefficient ρ (= μ for logistic; with dataset)", low=0.0,
                                 low_open=True)
    seed: int = count(0, help="seed of the client split (with dataset)", low=0)
    non_iid: bool = flag(help="split the dataset by sorted label instead of at random")
    clipping_norm: float | None = real(None, help="clipping norm: ξ₁ (L1, laplace, A1) or ξ₂ (L2, gaussian, A2); "
                                       "with dataset the estimate by default", low=0.0, low_open=True,
                                       deprecated=("--xi1", "--xi2"))
    target_epsilon: float = target_epsilon_field(help="per-client ε_i", deprecated=("--epsilon",))
    target_delta: float | None = target_delta_field(None, help="per-client δ_i in (0, 1) (gaussian)",
                                                    deprecated=("--delta",))
    sample_rate: float | None = real(None, help="Poisson sampling rate q of each local record per reply "
                                     "(gaussian)", low=0.0, high=1.0, low_open=True, flags=("-q",),
                                     deprecated=("--q",))
    noise_constant: float | None = real(None, help="gaussian: assume this value of the paper's unknown constant "
                                        "c₂ of Eq. (5) (L222) instead of calibrating the noise with an "
                                        "accountant", low=0.0, low_open=True, deprecated=("--c2",))
    max_rounds: int | None = count(None, help="cap on T (required for gaussian without noise_constant)", low=0)
    fixed_clients_per_round: int | None = count(None, help="laplace: optimise T for this b", low=1,
                                                deprecated=("--fix-b",))
    fixed_rounds: int | None = count(None, help="laplace: optimise b for this T", low=1, deprecated=("--fix-T",))
    variant: str = choice("corrected", help="corrected (noise calibrated on the most replies a client can make, "
                          "erratum Z-1; T*, b*: the exact integer optimum) or paper (on the printed bT/N; T*, b*: the "
                          "paper's rounding, T = ⌊T*⌋, b = ⌈b*⌉, b ∈ {1, N} when both are free, as Table I prints "
                          "them, L467); the other answer is shown beside", choices=VARIANTS)
    accountant: str = choice("rdp", help="accountant of the gaussian noise calibration", choices=("rdp", "pld"))

    def check(self) -> None:
        raw = [name for name in RAW if name != "clients"]
        if self.dataset is not None:
            given = [name for name in (*raw, "local_gradient_std") if self.given(name)]
            if given:
                raise ValueError(f"dataset estimates the constants; do not also give {', '.join(given)}")
            if not Path(self.dataset).is_file():
                raise ValueError(f"dataset must name an existing LIBSVM file; got {self.dataset!r}")
        else:
            missing = [name for name in (*raw, "clipping_norm") if not self.given(name)]
            if missing:
                raise ValueError("give dataset (a LIBSVM file to estimate the constants from), or all raw "
                                 f"constants (missing {', '.join(missing)})")
            if len(self.client_size) not in (1, self.clients):
                raise ValueError(f"client_size must be one value or one value per client ({self.clients}); got "
                                 f"{len(self.client_size)} values")
            self.raw_problem()  # the relations between constants (smoothness ≥ strong_convexity), by name
        if self.fixed_clients_per_round is not None:
            check_int("fixed_clients_per_round", self.fixed_clients_per_round, low=1, high=self.clients)
        if self.mechanism == "laplace":
            given = [name for name in GAUSSIAN_ONLY if self.given(name)]
            if given:
                raise ValueError(f"{', '.join(given)} apply to the gaussian mechanism, not laplace")
            return
        fixed = [name for name in ("fixed_clients_per_round", "fixed_rounds") if self.given(name)]
        if fixed:
            raise ValueError(f"{fixed[0]} applies to the laplace mechanism; the gaussian optimum has b* = N and T* "
                             "at a boundary (zhou L418-419)")
        missing = [name for name in ("target_delta", "sample_rate") if not self.given(name)]
        if missing:
            raise ValueError(f"the gaussian mechanism needs {' and '.join(missing)}")
        if self.noise_constant is None and self.max_rounds is None:
            raise ValueError("the gaussian mechanism with accountant noise needs max_rounds (or noise_constant "
                             "for the paper's Eq. (5))")

    def raw_problem(self) -> zhou.Problem:
        sizes = self.client_size[0] if len(self.client_size) == 1 else self.client_size
        return zhou.Problem(num_clients=self.clients, model_dim=self.model_dim, client_sizes=sizes,
                            strong_convexity=self.strong_convexity, smoothness=self.smoothness,
                            gradient_bound=self.gradient_bound, heterogeneity=self.heterogeneity,
                            initial_distance=self.initial_distance,
                            local_gradient_std=self.local_gradient_std or 0.0)

    def problem(self) -> tuple[zhou.Problem, float, dict]:
        """The problem, the clipping norm and the constants as reported: given, or estimated from the data set."""
        if self.dataset is None:
            constants = {"source": "given", **{key: getattr(self, name) for name, key in RAW.items()}}
            constants["d"] = self.client_size[0] if len(self.client_size) == 1 else list(self.client_size)
            return self.raw_problem(), self.clipping_norm, constants
        problem, estimated = estimate_problem(self.dataset, clients=self.clients, model=self.model,
                                              regularization=self.regularization, seed=self.seed,
                                              iid=not self.non_iid)
        norm = self.clipping_norm
        if norm is None:
            norm = estimated.xi1 if self.mechanism == "laplace" else estimated.xi2
        return problem, norm, {"source": f"estimated from {self.dataset}", **estimated.to_dict()}

    def plan(self) -> FedSGDPlan:
        problem, norm, constants = self.problem()
        return plan_fedsgd_dpc(problem=problem, mechanism=self.mechanism, epsilon=self.target_epsilon,
                               clipping_norm=norm, delta=self.target_delta, sample_rate=self.sample_rate,
                               c2=self.noise_constant, max_rounds=math.inf if self.max_rounds is None else
                               self.max_rounds, fix_b=self.fixed_clients_per_round, fix_T=self.fixed_rounds,
                               variant=self.variant, accountant=self.accountant,
                               constants={**constants, "clipping_norm": norm})

    def run(self, *, progress=None) -> Report:
        plan = self.plan()
        return Report(values=plan.summary(), result=plan)


TASKS = (FedsgdDpcOptimum,)
