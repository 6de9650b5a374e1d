"""Experiment presets: named, fully specified runs of the papers' experiments.

``vandijk-dp`` is van Dijk et al.'s DP experiment (E.3, L1964-1974; main text L239; spec §7.4): w8a split
iid over 5 clients (about 9 450 examples each after a 5 % held-out test part; w8a has 49 749 rows, so the
paper's 5 × 10 000 cannot hold, I-39), L2-regularised logistic regression with λ = 1/N (I-38), the
planner's schedule for Example 3 (s_{i,c} = 16 + ⌈1.3216 i⌉, σ = 8, K = 25 000, ε = 1; 183 rounds),
C = 0.1 and η̄_i = η_t at t = Σ_{j<i} s_j with η_t = 0.15/(1 + 0.001 t) (Table 2, diminishing₂ L1910).
``vandijk-dp-constant`` is its constant-sample-size baseline: s = 16 for ⌈K/16⌉ = 1563 rounds with the
paper's baseline noise σ = 𝓑 = √(2 ln(1/δ)/ε) ≈ 5.78 (L221). The delay model is not in the paper (L129):
compute times are exponential (mean 1 per iteration), latencies exponential (mean 10), no wait rule.
Both report ε at the plan's δ = 5.5·10⁻⁸.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from fedplan.bounds.validation import check_choice
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.problem import make_problem
from fedplan.planner.simulate.records import SimulationResult
from fedplan.planner.simulate.vandijk import inputs_from_schedule, run_vandijk

__all__ = ["PRESETS", "data_file", "run_preset"]

PRESETS = ("vandijk-dp", "vandijk-dp-constant")
#: Rows of the per-round table that carry loss/accuracy (the others are cheap to record, costly to evaluate).
EVALUATIONS = 50
VANDIJK_DP = {"initial_size": 16, "client_size": 10_000, "epsilon": 1.0, "grad_computations": 25_000, "sigma": 8.0,
              "p": 1.0, "r0": 1 / math.e, "variant": "paper", "learning_rate": 0.15, "decay": 0.001,
              "step_rule": "inverse", "clipping_norm": 0.1, "clients": 5, "test_fraction": 0.05}


def data_file(name: str) -> Path:
    """``$FEDPLAN_DATA_DIR/name``, or ``../shared/data/name`` next to the repository."""
    directory = os.environ.get("FEDPLAN_DATA_DIR")
    root = Path(directory) if directory else Path(__file__).resolve().parents[3] / "shared" / "data"
    return root / name


def _vandijk_plan():
    from fedplan.planner.vandijk import plan_vandijk

    keys = ("initial_size", "client_size", "epsilon", "grad_computations", "sigma", "p", "r0", "variant",
            "learning_rate", "decay", "step_rule")
    return plan_vandijk(**{key: VANDIJK_DP[key] for key in keys}, with_pld=False)


def run_preset(name: str, *, dataset: str | None = None, seed: int = 0, accountant: str = "rdp",
               with_optimum: bool = False, progress=None) -> SimulationResult:
    """Run preset ``name`` (:data:`PRESETS`); ``dataset`` overrides the w8a file path.

    ``with_optimum`` also computes w* for ‖w − w*‖² (an L-BFGS solve of the ill-conditioned w8a problem, ~5 s).
    """
    from fedplan.planner.vandijk import round_step_sizes

    name = check_choice("preset", name, PRESETS)
    if dataset is None and not data_file("w8a.libsvm").is_file():
        raise ValueError(f"preset {name} runs on LIBSVM's w8a.libsvm, which is not at {data_file('w8a.libsvm')}: "
                         "give dataset (--dataset FILE) or set FEDPLAN_DATA_DIR to its folder")
    data = load_dataset(dataset or str(data_file("w8a.libsvm")), seed=seed,
                        test_fraction=VANDIJK_DP["test_fraction"], n_features_file=300)
    if data.task != "binary":
        raise ValueError(f"dataset must hold a binary task, as w8a does (the preset's logistic regression); "
                         f"{data.name!r} is {data.task}")
    problem = make_problem(dataset=data, clients=VANDIJK_DP["clients"], seed=seed, with_optimum=with_optimum)
    plan = _vandijk_plan()
    if name == "vandijk-dp":
        inputs = inputs_from_schedule(plan.schedule(), problem.client_sizes)
    else:
        selection = plan.selection
        sizes = [selection.initial_size] * selection.constant_rounds
        inputs = {"sizes": sizes, "noise_multiplier": selection.budget,
                  "step_sizes": round_step_sizes(sizes, learning_rate=VANDIJK_DP["learning_rate"],
                                                 decay=VANDIJK_DP["decay"], rule=VANDIJK_DP["step_rule"])}
    rounds = len(inputs["sizes"])
    result = run_vandijk(problem=problem, **inputs, clipping_norm=VANDIJK_DP["clipping_norm"], seed=seed,
                         eval_every=max(1, math.ceil(rounds / EVALUATIONS)), delta=plan.selection.delta,
                         accountant=accountant, progress=progress)
    result.config.update(preset=name, planned_epsilon_rdp=plan.tight_rdp.epsilon,
                         claimed_epsilon=plan.selection.epsilon, plan_delta=plan.selection.delta)
    return result
