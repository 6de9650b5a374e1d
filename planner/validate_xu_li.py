"""Bounds of Xu et al. (A(DP)²SGD) and Li et al. (AUDP, MAPA) against their backing simulations.

Every validation but the Monte-Carlo one (below) runs R seeds on an L2-free logistic problem with unit-norm rows
(:func:`planner.simulate.adp2sgd.unit_norm_problem`), where the constants the theorems need have valid
closed-form bounds instead of estimates: per-sample gradient norm ≤ max‖x‖ = 1 (G, and clipping at G never
binds), smoothness L = max‖x‖²/4, F ≥ 0 so F(w⁰) − F* ≤ F(0) = log 2, and

* Xu: ς² ≤ max_k mean_{D_k}‖x‖² (variance ≤ second moment), v² ≤ max_k (mean_{D_k}‖x‖)²;
* Li: σ ≤ 2 max‖x‖ (‖∇F(x, ξ) − ∇f(x)‖ ≤ ‖∇F(x, ξ)‖ + ‖∇f(x)‖), Eq. (3).

Reports (:class:`planner.validate.ValidationReport`, pass/fail per claim with its margin):

* :func:`validate_adp2sgd`: the mean identity θ^{t+1} = θ^t − (η/K)(g + n) (xu L363), Theorem 1 (xu L147,
  sum convention: η = η̄/B, σ_sum = B·std; evaluated at the largest staleness measured) against the
  simulated (1/T) Σ_t E‖∇F(θ^t)‖², and the busiest worker's share of updates against uniform worker choice
  (which the paper's privacy amplification γ = B/(K n₍₁₎) assumes, xu L520).
* :func:`validate_audp`: Theorem 2 (Eq. (10) step; li L231 as printed and re-derived, on x₂..x_{T+1}, with R
  and the gradient bound measured along the runs, spec I-10) or Theorem 4 (constant step, Eq. (14)).
* :func:`validate_mapa`: Theorem 4 stage by stage (T = the stage's updates, γ_s, F₀ = E f(x at the stage
  start) − 0, Δ_b with the largest noise moment the stage applied, since late uploads from an earlier stage
  carry more noise, li I-4), the paper's heuristic G'_s² in the table, and the clipped share per stage.
* :func:`validate_li_monte_carlo`: the spec's Monte-Carlo test vectors TV-C8 (Theorem 4) and TV-C9 (Theorem 2)
  re-run on a quadratic with exact constants (:func:`planner.simulate.quadratic.isotropic_quadratic`).

Both AUDP/MAPA validations also check the privacy assumption of the planner: each edge's uploads against the
round-robin count of :func:`bounds.mapa.round_robin_uploads` (li L401), which fails when edges differ in speed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from fedplan.bounds import adp2sgd as xu
from fedplan.bounds import mapa as li
from fedplan.bounds.theorem import hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.simulate.adp2sgd import Objective, run_adp2sgd, unit_norm_problem
from fedplan.planner.simulate.data import Dataset
from fedplan.planner.simulate.engine import DEFAULT_COMPUTE, Durations
from fedplan.planner.simulate.graphs import make_graph, spectral_gap
from fedplan.planner.simulate.mapa import plan_for_problem, run_audp, run_mapa, unit_logistic_constants
from fedplan.planner.simulate.models import Model
from fedplan.planner.simulate.quadratic import isotropic_quadratic
from fedplan.planner.validate import QUANTILES, Claim, ValidationReport, _claim, _seeds
from fedplan.planner.validate_damaskinos import STANDARD_ERRORS, _within

__all__ = ["LI_MONTE_CARLO", "largest_theorem1_learning_rate", "theorem1_constants_text", "theorem1_of_run",
           "theorem1_problem", "theorem4_stage_claims", "validate_adp2sgd", "validate_audp", "validate_li_monte_carlo",
           "validate_mapa"]

#: Relative residual below which the mean identity counts as exact (spec xu S1).
IDENTITY_TOLERANCE = 1e-12
#: Standard deviations of a multinomial share tolerated before uniform worker choice counts as violated.
SHARE_SIGMAS = 4.0
#: Points of the plot-ready running-average curves.
CURVE_POINTS = 50


def _binary_unit_problem(dataset: Dataset, clients: int, seed: int):
    if dataset.task != "binary":
        raise ValueError(f"dataset must be a binary task for the Xu/Li validations (their runs train a logistic model "
                         f"on unit rows); {dataset.name!r} is {dataset.task}: give binary data")
    return unit_norm_problem(dataset=dataset, clients=clients, seed=seed)


def _row_norms(problem) -> list[np.ndarray]:
    return [np.sqrt(client.row_sq_norms) for client in problem.clients]


def theorem1_problem(problem) -> xu.Problem:
    """Theorem 1's constants (xu L129, L145) of a unit-row logistic problem (module docstring): L, F(w⁰) − F* ≤ F(0),
    ς² ≤ max_k mean_{D_k}‖x‖², v² ≤ max_k (mean_{D_k}‖x‖)² and d."""
    X = problem.stacked.X
    norms = _row_norms(problem)
    return xu.Problem(smoothness=problem.model.smoothness(X),
                      initial_gap=problem.model.loss(X, problem.stacked.y, np.zeros(problem.model.dim)),
                      variance=max(float(np.mean(n**2)) for n in norms),
                      dissimilarity=max(float(np.mean(n)) for n in norms) ** 2, dimension=problem.model.dim)


def theorem1_constants_text(constants: xu.Problem) -> str:
    """The constants of :func:`theorem1_problem` in one line of a report's notes."""
    return (f"L = {constants.smoothness:.4g}, F(w0) - F* <= {constants.initial_gap:.4g}, varsigma^2 <= "
            f"{constants.variance:.4g}, v^2 <= {constants.dissimilarity:.4g}, d = {constants.dimension}")


def theorem1_of_run(*, constants: xu.Problem, topology: xu.Topology, config: dict, staleness: int):
    """Theorem 1 (xu L147) as a function of the horizon T' for a run of
    :func:`~planner.simulate.adp2sgd.run_adp2sgd` (its ``config``), in the theorem's sum convention: η = η̄/B and
    σ = B × the noise std the run adds to the mean gradient."""
    eta, batch, std = config["learning_rate"], config["batch_size"], config["noise_std"]

    def bound(horizon: int) -> xu.UtilityBound:
        return xu.theorem1_bound(problem=constants, topology=topology, learning_rate=eta / batch, batch_size=batch,
                                 steps=horizon, staleness=staleness, noise_std_sum=batch * std)

    return bound


def largest_theorem1_learning_rate(*, smoothness: float, topology: xu.Topology, staleness: int) -> float:
    """Largest η̄ = ηB with C₁ > 0, C₂ ≥ 0, C₃ ≤ 1 (xu L145-153; they depend on ηB only), to 6 digits.

    A geometric scan finds the first invalid point; bisection refines below it (spec xu §4.6 A5.2).
    """
    smoothness = check_real("smoothness", smoothness, low=0.0, low_open=True)

    def valid(x: float) -> bool:
        return xu.theorem1_constants(learning_rate=x, batch_size=1, smoothness=smoothness, topology=topology,
                                     staleness=staleness).valid

    grid = np.geomspace(1e-12, 1.0 / smoothness, 400)
    if not valid(grid[0]):
        raise ValueError("Theorem 1's conditions fail even at eta*B = 1e-12")
    bad = next((i for i, x in enumerate(grid) if not valid(x)), None)
    if bad is None:
        return float(grid[-1])
    low, high = grid[bad - 1], grid[bad]
    while high / low > 1 + 1e-7:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if valid(middle) else (low, middle)
    return float(f"{low:.6g}") if valid(float(f"{low:.6g}")) else low


def _running_rows(runs, column: str, predicted, *, offset: int = 0) -> list[dict]:
    """At ~50 horizons T': mean and quantiles over seeds of the average of ``column`` over its first T' rows."""
    averages = np.array([np.cumsum(run.column(column)) / np.arange(1, run.rounds + 1) for run in runs])
    points = np.unique(np.linspace(1, averages.shape[1], min(CURVE_POINTS, averages.shape[1])).astype(int))
    rows = []
    for horizon in points:
        values = averages[:, horizon - 1]
        row = {"quantity": f"running mean of {column}", "T": int(horizon + offset), "mean": float(values.mean())}
        row.update({f"q{int(100 * level)}": float(np.quantile(values, level)) for level in QUANTILES})
        row["predicted"] = predicted(int(horizon))
        rows.append(row)
    return rows


def _bound_claim(name: str, simulated: float, bound, source: str, detail: str) -> Claim:
    """sim ≤ bound, with the margin in the detail; NO GUARANTEE when a hypothesis of the bound fails."""
    value = getattr(bound, "value", None)
    margin = f"; bound/simulated = {value / simulated:.4g}" if value is not None and simulated > 0 else ""
    return _claim(name, simulated, value, "<=", source, detail + margin, hypotheses=bound.hypotheses)


# --------------------------------------------------------------------------------------------
# Xu et al.: A(DP)²SGD
# --------------------------------------------------------------------------------------------

def validate_adp2sgd(*, dataset: Dataset, workers: int = 8, topology: str = "ring", degree: int | None = None,
                     steps: int = 2000, batch_size: int = 16, noise_to_sensitivity: float = 2.0,
                     clipping_norm: float = 1.0, learning_rate: float | None = None, staleness: str = "fixed",
                     max_staleness: int = 2, compute: Durations | None = None, seeds=(0, 1, 2),
                     delta: float = 1e-5, progress=None) -> ValidationReport:
    """A(DP)²SGD on R seeds: mean identity, Theorem 1 vs (1/T)Σ E‖∇F(θ^t)‖², uniform worker choice.

    ``learning_rate`` η̄ defaults to the largest step with Theorem 1's conditions at τ = ``max_staleness``
    (:func:`largest_theorem1_learning_rate`). The bound is evaluated at the largest staleness measured over
    the runs (event-driven staleness is not bounded in advance). ``noise_to_sensitivity`` is Xu's z: noise std
    2Gz/B on each worker's averaged minibatch gradient (:func:`~planner.simulate.adp2sgd.run_adp2sgd`).
    """

    seeds = _seeds(seeds)
    problem = _binary_unit_problem(dataset, workers, seeds[0])
    graph = make_graph(topology=topology, workers=workers, degree=degree, seed=seeds[0])
    shape = xu.Topology(workers=workers, rho=spectral_gap(graph))
    constants = theorem1_problem(problem)
    eta = (largest_theorem1_learning_rate(smoothness=constants.smoothness, topology=shape, staleness=max_staleness)
           if learning_rate is None else check_real("learning_rate", learning_rate, low=0.0, low_open=True))
    runs = tuple(run_adp2sgd(problem=problem, graph=graph, steps=steps, batch_size=batch_size, learning_rate=eta,
                             noise_to_sensitivity=noise_to_sensitivity, clipping_norm=clipping_norm,
                             staleness=staleness, max_staleness=max_staleness, compute=compute or DEFAULT_COMPUTE,
                             seed=seed, delta=delta, progress=progress)
                 for seed in seeds)
    norms = _row_norms(problem)
    tau = int(max(run.delays["max_delay"] for run in runs))
    bound = theorem1_of_run(constants=constants, topology=shape, config=runs[0].config, staleness=tau)
    final = bound(steps)
    simulated = float(np.mean([run.column("grad_norm_sq").mean() for run in runs]))
    lipschitz = float(max(n.max() for n in norms))
    residual = max(run.config["mean_identity_residual"] for run in runs)
    share = max(run.privacy["busiest_worker_share"] for run in runs)
    uniform = 1.0 / workers
    claims = (
        _claim("max relative residual of theta^{t+1} = theta^t - (eta/K)(g + n)", residual, IDENTITY_TOLERANCE,
               "<=", "xu L363 (A_t doubly stochastic)", f"over {steps} iterations x {len(seeds)} seeds"),
        _bound_claim("(1/T) sum_t E||grad F(theta^t)||^2 <= Theorem 1", simulated, final, final.source,
                     f"mean over {len(seeds)} seeds, T = {steps}, eta*B = {eta:.4g}, tau = {tau} (largest measured), "
                     f"rho = {shape.rho:.6g}, terms {', '.join(f'{k} {v:.4g}' for k, v in final.terms.items())}"),
        _claim("busiest worker's share of updates <= 1/K + 4 sd (uniform worker choice)", share,
               uniform + SHARE_SIGMAS * math.sqrt(uniform * (1 - uniform) / steps), "<=",
               "xu L520 (amplification by uniform worker choice, gamma = B/(K n_(1)))",
               "worst seed; the paper-model epsilon in the ledger needs it"),
    )
    table = _running_rows(runs, "grad_norm_sq", lambda horizon: bound(horizon).value)
    notes = (f"per-sample gradient norm <= max||x|| = {lipschitz:.6g} <= G = {clipping_norm:g}: clipping never binds"
             if lipschitz <= clipping_norm * (1 + 1e-12) else
             f"max||x|| = {lipschitz:.6g} > G = {clipping_norm:g}: clipping may bind (biased gradients)",
             f"Theorem 1 constants: {theorem1_constants_text(constants)}",
             f"privacy (seed {seeds[0]}): {runs[0].privacy['statement']}")
    return ValidationReport(algorithm="adp2sgd", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            notes=notes, hypotheses=tuple(final.hypotheses))


# --------------------------------------------------------------------------------------------
# Li et al.: AUDP and MAPA
# --------------------------------------------------------------------------------------------

def _li_setting(dataset: Dataset, edges: int, seed: int) -> tuple:
    problem = _binary_unit_problem(dataset, edges, seed)
    return (problem, *unit_logistic_constants(problem))


def _upload_claim(runs, iterations: int) -> Claim:
    planned = li.round_robin_uploads(iterations=iterations, num_edges=len(runs[0].privacy["uploads_per_edge"]))
    busiest = max(max(run.privacy["uploads_per_edge"]) for run in runs)
    return _claim("busiest edge's uploads <= round-robin count (the planner's per-edge ledger)", float(busiest),
                  float(max(planned)), "<=", "li L401 (cyclic delays), bounds.mapa.round_robin_uploads",
                  "worst seed; dropped uploads count")


def _staleness_hypothesis(runs, tau: int):
    return hypothesis("measured tau(t) <= tau_max", max(run.delays["max_delay"] for run in runs), "<=", tau,
                      "li Assumption 2, L100")


def validate_audp(*, dataset: Dataset, edges: int = 5, iterations: int = 3000, batch_size: int = 16,
                  epsilon=5.0, step_rule: str = "eq10", max_staleness: int | None = None,
                  compute: Durations | None = None, tau_policy: str = "none", seeds=(0, 1, 2),
                  progress=None) -> ValidationReport:
    """AUDP on R seeds: Theorem 2 (``step_rule="eq10"``) or Theorem 4 (``"constant"``) vs the simulation.

    τ_max defaults to K (li L401); the default timing is cyclic (equal constant compute times, τ(t) ≤ K − 1),
    which Theorem 2's telescoping step needs (li I-11).
    """

    seeds = _seeds(seeds)
    problem, smoothness, sigma, gap = _li_setting(dataset, edges, seeds[0])
    if step_rule != "constant":
        problem = dataclasses.replace(problem, w_star=_optimum(problem)[0])
    tau = edges if max_staleness is None else check_int("max_staleness", max_staleness, low=0)
    runs = tuple(run_audp(problem=problem, iterations=iterations, batch_size=batch_size, epsilon=epsilon,
                          clipping_norm=1.0, smoothness=smoothness, max_staleness=tau, sigma=sigma, step_rule=step_rule,
                          compute=compute or Durations("constant", 1.0), tau_policy=tau_policy, seed=seed,
                          progress=progress) for seed in seeds)
    db = runs[0].config["delta_b"]
    staleness = _staleness_hypothesis(runs, tau)
    notes = [f"Delta_b = sigma^2/b + N(N+1) lambda^2 = {db:.6g} (sigma <= {sigma:.4g}, the noise actually drawn, "
             f"li erratum LI-1), L = {smoothness:.4g}, tau_max = {tau}",
             f"privacy (seed {seeds[0]}): {runs[0].privacy['statement']}"]
    if step_rule == "constant":
        gamma = float(runs[0].rows[0]["learning_rate"])
        result = li.theorem4_bound(iterations=iterations, learning_rate=gamma, initial_gap=gap, delta_b=db,
                                   smoothness=smoothness, max_staleness=tau)
        simulated = float(np.mean([run.column("grad_norm_sq").mean() for run in runs]))
        claims = [_bound_claim("(1/T) sum_t E||grad f(x_t)||^2 <= Theorem 4", simulated,
                               _with(result, staleness), result.source,
                               f"mean over {len(seeds)} seeds, T = {iterations}, gamma = {gamma:.4g}, F0 <= {gap:.4g}")]

        def predicted(horizon: int):
            return li.theorem4_bound(iterations=horizon, learning_rate=gamma, initial_gap=gap, delta_b=db,
                                     smoothness=smoothness, max_staleness=tau).value

        table = _running_rows(runs, "grad_norm_sq", predicted)
        hypotheses = (*result.hypotheses, staleness)
    else:
        claims, table, hypotheses = _theorem2_claims(problem, runs, smoothness=smoothness, tau=tau, db=db,
                                                     staleness=staleness, notes=notes)
    claims.append(_upload_claim(runs, iterations))
    return ValidationReport(algorithm=f"audp-{step_rule}", seeds=seeds, claims=tuple(claims), table=tuple(table),
                            runs=runs, notes=tuple(notes), hypotheses=tuple(hypotheses))


def _with(result, *extra):
    """``result`` with extra hypotheses (the staleness the run actually had) appended."""
    return dataclasses.replace(result, hypotheses=(*result.hypotheses, *extra))


def _optimum(problem) -> tuple[np.ndarray, float]:
    """w* and F* of the unregularised loss, via ρ = 1e-10 (F* is then overstated by at most ρ/2‖w*‖²)."""
    data = problem.stacked
    solver = Model(kind=problem.model.kind, n_features=problem.model.n_features, regularization=1e-10)
    w_star = solver.optimum(data.X, data.y)
    return w_star, problem.model.loss(data.X, data.y, w_star)


def _theorem2_claims(problem, runs, *, smoothness, tau, db, staleness, notes):
    """Theorem 2 as printed and re-derived, with R and G measured along the runs (spec li I-10)."""
    w_star, f_star = _optimum(problem)
    iterations = runs[0].rounds
    simulated = float(np.mean([run.column("objective").mean() for run in runs])) - f_star
    gradient = math.sqrt(max(float(run.column("grad_norm_sq").max()) for run in runs))
    radius = max(float(np.linalg.norm(w_star)), *(float(run.column("distance").max()) for run in runs))
    notes.append(f"F* = {f_star:.8g} (w* with rho = 1e-10), R = {radius:.4g} and G = {gradient:.4g}: the largest "
                 "||x_t - x*|| and ||grad f(x_t)|| along the runs (li I-10)")
    claims, hypotheses = [], [staleness]
    for variant in ("corrected", "paper"):
        result = li.theorem2_bound(iterations=iterations, radius=radius, gradient_bound=gradient,
                                   smoothness=smoothness, max_staleness=tau, delta_b=db, variant=variant)
        claims.append(_bound_claim(f"(1/T) sum_t E f(x_t) - f* <= Theorem 2 ({variant})", simulated,
                                   _with(result, staleness), result.source,
                                   f"mean over {len(runs)} seeds of x_2..x_T+1, T = {iterations}"))
        hypotheses.extend(result.hypotheses)

    def predicted(horizon: int):
        return li.theorem2_bound(iterations=horizon, radius=radius, gradient_bound=gradient, smoothness=smoothness,
                                 max_staleness=tau, delta_b=db).value

    return claims, _running_rows(runs, "objective", lambda horizon: predicted(horizon) + f_star), hypotheses


def theorem4_stage_claims(stages, runs, *, sigma: float, batch_size: int, smoothness: float, max_staleness: int,
                          initial_gap: float, staleness, sampled: str = "") -> tuple[list, list]:
    """Theorem 4 (li Eq. (14), L293) stage by stage against a MAPA run's (1/T_s) Σ E‖∇f(x_t)‖² over each stage's
    updates (:func:`~planner.simulate.mapa.run_mapa` records; the mean of those computed, ``sampled`` says which):
    T = the stage's updates, γ_s, F₀ = E f(x at the stage start) − 0 (``initial_gap`` for the first; f ≥ 0),
    Δ_b = σ²/b + the largest noise moment the stage applied (late uploads from an earlier stage carry more noise, li
    I-4), with the ``staleness`` hypothesis of the runs and unbiased uploads (no clipping, li L235, L757; LI-9).
    The claims, and one table row per stage with the paper's heuristic G'_s² and the clipped share."""
    claims, table = [], []
    for stage in stages:
        rows = slice(stage.start - 1, stage.end)
        simulated = float(np.mean([np.nanmean(run.column("grad_norm_sq")[rows]) for run in runs]))
        start_value = float(np.mean([initial_gap if stage.start == 1 else run.column("objective")[stage.start - 2]
                                     for run in runs]))
        moment = max(float(run.column("noise_moment")[rows].max()) for run in runs)
        clipped = max(float(run.column("clipped_fraction")[rows].max()) for run in runs)
        db = sigma**2 / batch_size + moment
        result = li.theorem4_bound(iterations=stage.iterations, learning_rate=stage.learning_rate,
                                   initial_gap=start_value, delta_b=db, smoothness=smoothness,
                                   max_staleness=max_staleness)
        unbiased = hypothesis("share of clipped per-sample gradients = 0 (unbiased uploads)", clipped, "<=", 0.0,
                              "li L235, L757; erratum LI-9")
        claims.append(_bound_claim(f"stage {stage.index}: mean E||grad f(x_t)||^2 <= Theorem 4", simulated,
                                   _with(result, staleness, unbiased), result.source,
                                   f"{stage.iterations} updates{sampled}, gamma = {stage.learning_rate:.4g}, "
                                   f"Delta S = {stage.sensitivity:.4g}, Delta_b = {db:.4g}, F0 = {start_value:.4g}"))
        table.append({"quantity": "stage", "stage": stage.index, "start": stage.start, "iterations": stage.iterations,
                      "simulated": simulated, "theorem4": result.value,
                      "paper_G_prime_sq": stage.gradient_norm_bound**2, "planned_length": stage.length,
                      "clipped_fraction_max": clipped})
    return claims, table


def validate_mapa(*, dataset: Dataset, edges: int = 5, iterations: int = 5000, batch_size: int = 16,
                  epsilon=5.0, theta: float = 0.5, delta: float = 1e-3, initial_clip: float | None = 1.0,
                  compute: Durations | None = None, tau_policy: str = "drop", seeds=(0, 1, 2),
                  progress=None) -> ValidationReport:
    """MAPA on R seeds: Theorem 4 per stage vs the stage's (1/T_s)Σ E‖∇f(x_t)‖², uploads vs round robin.

    The plan (:func:`bounds.mapa.mapa_schedule`) uses τ_max = K (li L401), σ ≤ 2 max‖x‖, L, F₀ = f(0) and the
    L2-Laplace noise moment (``noise_model="corrected"``); ``initial_clip`` C₀ starts at ΔS₀ = 2C₀/b (li L442;
    ``None``: Theorem 3 with failure probability ``delta``). Default timing: exponential compute with means
    1, 1, 2, 2, 4, ... (heterogeneous edges, li Fig. 2) and ``tau_policy="drop"`` to keep τ(t) ≤ τ_max.
    """

    seeds = _seeds(seeds)
    problem, smoothness, sigma, gap = _li_setting(dataset, edges, seeds[0])
    plan = plan_for_problem(problem, epsilon=epsilon, batch_size=batch_size, iterations=iterations, theta=theta,
                            delta=delta, initial_clip=initial_clip)
    timing = compute or Durations("exponential", tuple(float(2 ** (k // 2)) for k in range(edges)))
    runs = tuple(run_mapa(problem=problem, plan=plan, epsilon=epsilon, tau_policy=tau_policy, compute=timing,
                          seed=seed, progress=progress) for seed in seeds)
    staleness = _staleness_hypothesis(runs, edges)
    claims, table = theorem4_stage_claims(plan.stages, runs, sigma=sigma, batch_size=batch_size,
                                          smoothness=smoothness, max_staleness=edges, initial_gap=gap,
                                          staleness=staleness)
    claims.append(_upload_claim(runs, iterations))
    notes = (f"plan: {len(plan.stages)} stages, lengths {[s.iterations for s in plan.stages]}, sigma <= {sigma:.4g}, "
             f"L = {smoothness:.4g}, tau_max = {edges}, F0 = f(0) = {gap:.4g}",
             "paper_G_prime_sq is Eq. (14) at T0 (li L320), the heuristic behind the sensitivity cut; a stage cut "
             "by the budget has fewer than T0 updates",
             f"privacy (seed {seeds[0]}): {runs[0].privacy['statement']}")
    return ValidationReport(algorithm="mapa", seeds=seeds, claims=tuple(claims), table=tuple(table), runs=runs,
                            notes=notes, hypotheses=(*plan.hypotheses, staleness))


# --------------------------------------------------------------------------------------------
# Li et al.: the Monte-Carlo test vectors of the spec (TV-C8, TV-C9) on a known quadratic
# --------------------------------------------------------------------------------------------

#: The quadratic of spec li TV-C8/TV-C9 (§5.5): N = 10, L = 2, σ = 1, b = 4, τ = 3, λ = ΔS/ε = 0.05. The
#: spec does not print ‖x₁ − x*‖; R = 3 is the value for which R, G = LR = 6 and F₀ = LR²/2 = 9 reproduce all
#: four printed bounds (0.851; 2.592 / 2.784 / 1.836).
LI_QUADRATIC = {"dim": 10, "smoothness": 2.0, "noise_std": 1.0, "batch_size": 4, "max_staleness": 3,
                "noise_scale": 0.05, "distance": 3.0}
#: Per theorem: the spec's test vector, its horizon T and repetitions, and the printed values (as printed, so that
#: their rounding is known).
LI_MONTE_CARLO = {
    "4": {"vector": "TV-C8", "iterations": 400, "repetitions": 400, "empirical": "0.348",
          "bounds": {"Theorem 4": "0.851"}},
    "2": {"vector": "TV-C9", "iterations": 2000, "repetitions": 200, "empirical": "0.00995",
          "bounds": {"paper": "2.592", "paper_log": "2.784", "corrected": "1.836"}},
}
#: Per-sample clip G of the runs, far above every per-sample gradient norm (‖∇f(x)‖ + σ ≤ LR + σ = 7 here), so
#: clipping never binds (checked on every run); ε = ΔS/λ = (2G/b)/λ = 200 then gives the printed λ.
LI_QUADRATIC_CLIP = 20.0


def _half_unit(printed: str) -> float:
    """Half a unit of the last printed digit: the rounding of a printed number."""
    return 0.5 * 10.0 ** -len(printed.partition(".")[2])


def _printed_claim(name: str, ours: float, printed: str, source: str) -> Claim:
    return _within(name, ours, float(printed), _half_unit(printed), source,
                   f"printed {printed}: equal to its last digit")


def validate_li_monte_carlo(*, theorem: str = "4", repetitions: int = 40, iterations: int | None = None,
                            seed: int = 0, progress=None) -> ValidationReport:
    """Spec li TV-C8 (``theorem="4"``) or TV-C9 (``"2"``) re-run with AUDP on :data:`LI_QUADRATIC`.

    K = τ + 1 = 4 edges with equal constant compute times (cyclic: staleness min(t − 1, 3), li L401) on
    :func:`planner.simulate.quadratic.isotropic_quadratic` (x₁ = 0, ‖x₁ − x*‖ = 3, exact σ), the L2-Laplace
    noise of scale 0.05 (Δ_b = σ²/b + N(N+1)λ² = 0.525, li I-1). Theorem 4 (li L293-301): constant
    γ = 1/(2L(τ+1)), (1/T)Σ_{t=1}^{T} E‖∇f(x_t)‖²; Theorem 2 (li L231, variants of
    :func:`bounds.mapa.theorem2_bound`): Eq. (10) steps, (1/T)Σ_{t=2}^{T+1} E f(x_t) − f*, with R = max(3, the
    largest ‖x_t − x*‖ measured) and G = max(LR, the largest ‖∇f(x_t)‖ measured).

    Claims: the mean over ``repetitions`` runs plus three standard errors ≤ each bound; our bounds equal the
    printed ones to their last digit; and, at the spec's horizon, our mean ~= the spec's empirical value within
    three standard errors of the difference of the two means (the spec's estimated with our spread and its
    repetitions) plus its rounding.
    """
    entry = LI_MONTE_CARLO[check_choice("theorem", theorem, tuple(LI_MONTE_CARLO))]
    reps = check_int("repetitions", repetitions, low=2)
    steps = entry["iterations"] if iterations is None else check_int("iterations", iterations, low=1)
    first = check_int("seed", seed, low=0)
    q = LI_QUADRATIC
    tau, smoothness, batch = q["max_staleness"], q["smoothness"], q["batch_size"]
    problem = isotropic_quadratic(dim=q["dim"], smoothness=smoothness, distance=q["distance"],
                                  noise_std=q["noise_std"], clients=tau + 1)
    epsilon = li.sensitivity_from_gradient_bound(gradient_bound=LI_QUADRATIC_CLIP, batch_size=batch) / q["noise_scale"]
    seeds = tuple(range(first, first + reps))
    rule = "constant" if theorem == "4" else "eq10"
    runs = tuple(run_audp(problem=problem, iterations=steps, batch_size=batch, epsilon=epsilon,
                          clipping_norm=LI_QUADRATIC_CLIP, smoothness=smoothness, max_staleness=tau,
                          sigma=q["noise_std"], step_rule=rule, compute=Durations("constant", 1.0), seed=s,
                          eval_every=steps, progress=progress) for s in seeds)
    objective = Objective(problem)
    f_star = objective.value(problem.w_star)
    db = runs[0].config["delta_b"]
    staleness = _staleness_hypothesis(runs, tau)
    clipped = hypothesis("share of clipped per-sample gradients = 0", max(float(run.column("clipped_fraction").max())
                                                                          for run in runs), "<=", 0.0, "li L235")
    if theorem == "4":
        values = np.array([run.column("grad_norm_sq").mean() for run in runs])
        gamma = float(runs[0].rows[0]["learning_rate"])
        gap = objective.value(np.zeros(problem.model.dim)) - f_star
        results = {"Theorem 4": li.theorem4_bound(iterations=steps, learning_rate=gamma, initial_gap=gap, delta_b=db,
                                                  smoothness=smoothness, max_staleness=tau)}
        quantity = "(1/T) sum_t E||grad f(x_t)||^2"
        setting = f"gamma = {gamma:.6g}, F0 = f(x_1) - f* = {gap:.6g}"

        def predicted(horizon: int):
            return li.theorem4_bound(iterations=horizon, learning_rate=gamma, initial_gap=gap, delta_b=db,
                                     smoothness=smoothness, max_staleness=tau).value
    else:
        values = np.array([run.column("objective").mean() - f_star for run in runs])
        radius = max(q["distance"], *(float(run.column("distance").max()) for run in runs))
        gradient = max(smoothness * radius, math.sqrt(max(float(run.column("grad_norm_sq").max()) for run in runs)))
        results = {variant: li.theorem2_bound(iterations=steps, radius=radius, gradient_bound=gradient,
                                              smoothness=smoothness, max_staleness=tau, delta_b=db, variant=variant)
                   for variant in entry["bounds"]}
        quantity = "(1/T) sum_t E f(x_t) - f*"
        setting = f"Eq. (10) steps, R = {radius:.6g}, G = {gradient:.6g}, x_2..x_T+1"

        def predicted(horizon: int):
            value = li.theorem2_bound(iterations=horizon, radius=radius, gradient_bound=gradient, smoothness=smoothness,
                                      max_staleness=tau, delta_b=db).value
            return None if value is None else value + f_star
    mean, error = float(values.mean()), float(values.std(ddof=1) / math.sqrt(reps))
    upper = mean + STANDARD_ERRORS * error
    detail = (f"mean {mean:.6g} + {STANDARD_ERRORS:g} x standard error {error:.3g} over {reps} runs, T = {steps}, "
              f"{setting}, Delta_b = {db:.6g}")
    claims, hypotheses = [], [staleness, clipped]
    for label, result in results.items():
        name = label if theorem == "4" else f"Theorem 2 ({label})"
        claims.append(_bound_claim(f"{quantity} + {STANDARD_ERRORS:g} SE <= {name}", upper,
                                   _with(result, staleness, clipped), result.source, detail))
        hypotheses.extend(h for h in result.hypotheses if h not in hypotheses)
    notes = [f"spec li {entry['vector']}: {quantity} = {entry['empirical']} over {entry['repetitions']} runs, "
             f"T = {entry['iterations']}; ours {mean:.6g} +- {error:.3g} over {reps} runs, T = {steps}"]
    if steps == entry["iterations"]:
        for label, printed in entry["bounds"].items():
            value = results[label].value
            claims.append(_printed_claim(f"{label if theorem == '4' else f'Theorem 2 ({label})'} = spec's "
                                         f"{entry['vector']} bound", math.nan if value is None else value, printed,
                                         f"spec li {entry['vector']}"))
        spread = float(values.std(ddof=1))
        tolerance = (STANDARD_ERRORS * math.sqrt(error**2 + spread**2 / entry["repetitions"])
                     + _half_unit(entry["empirical"]))
        claims.append(_within(f"{quantity} ~= spec's {entry['vector']} empirical value", mean,
                              float(entry["empirical"]), tolerance, f"spec li {entry['vector']}",
                              f"{STANDARD_ERRORS:g} standard errors of the difference of the means (ours over {reps} "
                              f"runs, the spec's over {entry['repetitions']} with our spread) + its rounding"))
    else:
        notes.append(f"T = {steps} is not the spec's T = {entry['iterations']}: no comparison with its printed values")
    column = "grad_norm_sq" if theorem == "4" else "objective"
    table = _running_rows(runs, column, predicted)
    return ValidationReport(algorithm=f"li-monte-carlo-theorem{theorem}", seeds=seeds, claims=tuple(claims),
                            table=tuple(table), runs=runs, notes=tuple(notes), hypotheses=tuple(hypotheses))
