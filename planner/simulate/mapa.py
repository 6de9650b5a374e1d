"""AUDP and MAPA (Li et al., Sec. 4 L151-181 and Algorithm 1 L345-383): an edge-cloud asynchronous run.

K edges, each holding one client's data, run forever: pull the current model x_v (and, for MAPA, the current
sensitivity ΔS), compute the mean of b per-sample gradients drawn **with replacement** (li L91, L102), each
clipped to C = bΔS/2 (per sample, so that ΔS is the sensitivity of the mean: Remark 4 L343, erratum LI-8),
add Laplace-type noise with density ∝ exp(−ε_k‖η‖/ΔS) on R^N (Eq. (6) L166: direction uniform on the
sphere, radius ~ Gamma(N, ΔS/ε_k), E‖η‖² = N(N+1)(ΔS/ε_k)², erratum LI-1) and upload. Edge k computes for
a random time (:class:`~planner.simulate.engine.Durations`, one mean per edge: heterogeneous speeds as in
the paper's Fig. 2). The Cloud applies uploads first-in-first-out (li L92): update t (1-based) is
x_{t+1} = x_t − γ_t g̃ with staleness τ(t) = t − v (Fig. 2 L181: computed on x_2, applied at x_8 → τ = 6),
then sends x_{t+1} to that edge. ``tau_policy="drop"`` discards uploads with τ(t) > τ_max (Assumption 2,
L100, erratum LI-19); a dropped upload still counts in the privacy ledger.

Upload order (``upload_order``, :func:`run_mapa`): ``"random"`` draws the compute times as above, so the Cloud's
FIFO buffer (li L92) lets a fast edge upload more than ⌈T/K⌉ times. ``"round_robin"`` gives every edge the same
deterministic compute time (one unit, ``Durations("constant", 1.0)``; ties go to the lower edge index), so the edges
finish in turn, k(t) = (t − 1) mod K at the 1-based update t, and edge k makes ⌊T/K⌋ or ⌈T/K⌉ uploads: the count
of :func:`bounds.mapa.round_robin_uploads` that a plan's per-edge privacy assumes. Its staleness is measured, not
set: the "cyclic delayed method" of the paper's simulations (li L401), τ(t) = k on edge k's first upload and K − 1
after it.

Step sizes and sensitivities: AUDP (:func:`run_audp`) keeps ΔS = 2G/b with clip G (Theorem 1 L189) and
uses Eq. (10) (γ_t⁻¹ = L(τ_max+1) + √(Δ_b+1)√t, Theorem 2) or a constant γ (Theorem 4). MAPA
(:func:`run_mapa`) follows the stages of :func:`bounds.mapa.mapa_schedule` (γ_s, ΔS_s by iteration); an
upload carries the ΔS it was computed with, possibly an earlier stage's (the Cloud applies it anyway, as
Algorithm 1 does).

Records: one row per Cloud update t with ``grad_norm_sq`` ‖∇f(x_t)‖² before the update (Theorem 4 averages
t = 1..T), ``objective`` f(x_{t+1}) after it (Theorem 2's corrected bound averages x_2..x_{T+1}, I-9; both a pass
over all the data, so ``gradient_every`` = k computes them at x_t for t = 1, k + 1, 2k + 1, … and at each stage's
first update only, and records None elsewhere),
``edge``, ``stage``, ``learning_rate``, ``sensitivity`` of the applied upload, its ``noise_moment``
E‖η‖², ``clipped_fraction`` and, when the problem knows w*, ``distance`` ‖x_{t+1} − w*‖; f is the mean of
the clients' mean losses.

Privacy (:func:`mapa_ledger`): every upload is pure ε_k-DP for replace-one neighbouring mini-batches; the
ledger counts the uploads each edge actually made and composes them by basic composition (per edge: the
headline; over all uploads: the paper's Σ_t ε_{k(t)}, L387), advanced and optimal composition. The batches
are drawn with replacement, but the noise is Laplace-type (pure DP), not Gaussian: ``bounds.accounting``'s
with-replacement accountant (a mixture of Gaussians) does not apply, and the ledger says so instead of
stating an amplified ε.
"""

from __future__ import annotations

import heapq
import time as wallclock

import numpy as np

from fedplan.bounds import composition
from fedplan.bounds import mapa as li
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.simulate.adp2sgd import Objective
from fedplan.planner.simulate.engine import DEFAULT_COMPUTE, Durations, spawn_generators
from fedplan.planner.simulate.models import is_finite
from fedplan.planner.simulate.problem import Problem
from fedplan.planner.simulate.records import Diverged, RoundRecorder, SimulationResult

__all__ = ["AUDP_STEPS", "PRESETS", "TAU_POLICIES", "UPLOAD_ORDERS", "l2_laplace_noise", "mapa_ledger",
           "plan_for_problem", "run_audp", "run_mapa", "run_preset", "unit_logistic_constants"]

TAU_POLICIES = ("none", "drop")
AUDP_STEPS = ("eq10", "constant")
#: Which edge uploads at each Cloud update (module docstring): random compute times, or equal ones (edges in turn).
UPLOAD_ORDERS = ("random", "round_robin")
#: The compute time of every edge under ``upload_order="round_robin"``: equal and deterministic (li L401).
ROUND_ROBIN_COMPUTE = Durations("constant", 1.0)
SOURCE = "Li et al., AUDP (li L151-181) and MAPA (Algorithm 1, li L345-383)"


def l2_laplace_noise(rng: np.random.Generator, *, scale: float, dim: int) -> np.ndarray:
    """A draw of density ∝ exp(−‖η‖/λ) on R^N: uniform direction, radius ~ Gamma(N, λ) (li Eq. (6), spec R-1)."""
    direction = rng.standard_normal(dim)
    return rng.gamma(dim, scale) * direction / np.linalg.norm(direction)


def _edge_epsilons(epsilon, edges: int) -> np.ndarray:
    values = np.atleast_1d(np.asarray(epsilon, dtype=float))
    if values.size == 1:
        values = np.full(edges, float(values[0]))
    if values.shape != (edges,):
        raise ValueError(f"epsilon must be one number or one per edge ({edges}); got {values.size} values")
    for k, value in enumerate(values):
        check_real(f"epsilon[{k}]" if edges > 1 else "epsilon", float(value), low=0.0, low_open=True)
    return values


def _simulate(*, algorithm: str, problem: Problem, steps: int, batch: int, epsilons: np.ndarray, learning_rates,
              sensitivities, stages, max_staleness: int, tau_policy: str, compute: Durations, seed: int,
              eval_every: int, progress, config: dict, delta_slack: float, gradient_every: int = 1) -> SimulationResult:
    """The shared edge-cloud loop; ``learning_rates``/``sensitivities``/``stages`` are indexed by t − 1."""
    every = check_int("gradient_every", gradient_every, low=1)
    start = wallclock.perf_counter()
    edges = problem.n_clients
    model = problem.model
    dim = model.dim
    rngs = spawn_generators(seed, 3)
    batch_rng, noise_rng = rngs[:2]
    stream, means = compute.stream(rngs[2]), compute.means(edges)
    objective = Objective(problem)
    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    x = np.zeros(dim)
    queue: list[tuple[float, int]] = []
    pulled: list[tuple[int, np.ndarray, float]] = [(1, x, float(sensitivities[0]))] * edges
    for k in range(edges):
        heapq.heappush(queue, (means[k] * stream.draw(), k))
    uploads = np.zeros(edges, dtype=np.int64)
    dropped = 0
    t = 1
    now = 0.0
    diverged, message = False, None
    grad_norm_sq = float(np.sum(objective.gradient(x) ** 2))
    try:
        with np.errstate(all="ignore"):  # divergence is detected and reported, not warned about
            while t <= steps:
                now, k = heapq.heappop(queue)
                version, read, sensitivity = pulled[k]
                client = problem.clients[k]
                rows = batch_rng.integers(client.size, size=batch)
                X, y = client.X[rows], client.y[rows]
                Z = model.scores(X, read)
                R = model.residuals(Z, y)
                factors = model.clip_factors(X, Z, R, float(read @ read), batch * sensitivity / 2.0,
                                             client.row_sq_norms[rows])
                g = (((factors[:, None] * R).T @ X).ravel() + model.rho * float(factors.sum()) * read) / batch
                scale = sensitivity / epsilons[k]
                upload = g + l2_laplace_noise(noise_rng, scale=scale, dim=dim)
                uploads[k] += 1
                staleness = t - version
                if tau_policy == "drop" and staleness > max_staleness:
                    dropped += 1
                else:
                    gamma = float(learning_rates[t - 1])
                    x = x - gamma * upload
                    if not is_finite(x):
                        raise Diverged(f"the model stopped being finite at iteration {t}")
                    value = gradient = None
                    if t % every == 0 or (t < steps and stages[t] != stages[t - 1]):  # at x_{t+1}: module docstring
                        value, gradient = objective.value(x), objective.gradient(x)
                    recorder.record(round=t - 1, time=now, w=x, staleness=staleness,
                                    noise=float(np.linalg.norm(upload - g)), force=t == steps)
                    recorder.rows[-1].update(
                        grad_norm_sq=grad_norm_sq, objective=value, edge=k, stage=int(stages[t - 1]),
                        learning_rate=gamma, sensitivity=sensitivity,
                        noise_moment=li.noise_second_moment(scale=scale, model_dim=dim),
                        clipped_fraction=float(np.mean(factors < 1.0)))
                    if problem.w_star is not None:
                        recorder.rows[-1]["distance"] = float(np.linalg.norm(x - problem.w_star))
                    grad_norm_sq = None if gradient is None else float(gradient @ gradient)
                    t += 1
                pulled[k] = (t, x, float(sensitivities[min(t, steps) - 1]))
                heapq.heappush(queue, (now + means[k] * stream.draw(), k))
            final = recorder.finish(x)
    except Diverged as error:
        diverged, message = True, str(error)
        final = {"loss": None, "accuracy": None, "dist_sq": None}
    delays = [row["staleness"] for row in recorder.rows]
    config = {"source": SOURCE, **problem.describe(), "algorithm": algorithm, "iterations": steps,
              "batch_size": batch, "epsilon": epsilons.tolist(), "max_staleness": max_staleness,
              "tau_policy": tau_policy, "seed": seed, "eval_every": recorder.eval_every, "gradient_every": every,
              "uploads": uploads.tolist(),
              "dropped_uploads": dropped, **config}
    return SimulationResult(algorithm=algorithm, rows=tuple(recorder.rows), final=final,
                            privacy=mapa_ledger(uploads=uploads.tolist(), epsilon=epsilons.tolist(),
                                                delta_slack=delta_slack, iterations=steps),
                            virtual_time=now, wall_time_s=wallclock.perf_counter() - start, diverged=diverged,
                            divergence=message,
                            delays={"max_delay": max(delays, default=None),
                                    "mean_delay": float(np.mean(delays)) if delays else None,
                                    "violations": int(sum(d > max_staleness for d in delays))},
                            config=config)


def _common(problem: Problem, steps, batch_size, epsilon, max_staleness, tau_policy, seed):
    steps = check_int("iterations", steps, low=1)
    batch = check_int("batch_size", batch_size, low=1)
    return (steps, batch, _edge_epsilons(epsilon, problem.n_clients), check_int("max_staleness", max_staleness, low=0),
            check_choice("tau_policy", tau_policy, TAU_POLICIES), check_int("seed", seed, low=0))


def run_audp(*, problem: Problem, iterations: int, batch_size: int, epsilon, clipping_norm: float,
             smoothness: float, max_staleness: int, sigma: float, step_rule: str = "eq10",
             learning_rate: float | None = None, tau_policy: str = "none", compute: Durations = DEFAULT_COMPUTE,
             seed: int = 0, eval_every: int = 1, delta_slack: float = 1e-5, progress=None) -> SimulationResult:
    """AUDP (li L151-181): fixed sensitivity ΔS = 2G/b (per-sample clip G), Eq. (6) noise with ε_k per edge.

    ``step_rule="eq10"``: γ_t of Eq. (10) with Δ_b = σ²/b + N(N+1)(ΔS/min ε_k)² (the noise actually drawn);
    ``"constant"``: ``learning_rate`` (default Theorem 4's largest, 1/(2L(τ_max+1)), Eq. (13)). ``sigma``
    is the per-sample gradient standard deviation bound of Eq. (3); ``smoothness`` L.
    """
    steps, batch, epsilons, tau, policy, seed = _common(problem, iterations, batch_size, epsilon, max_staleness,
                                                        tau_policy, seed)
    clip = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    sensitivity = li.sensitivity_from_gradient_bound(gradient_bound=clip, batch_size=batch)
    db = li.delta_b(sigma=sigma, batch_size=batch, sensitivity=sensitivity, epsilon=float(epsilons.min()),
                    model_dim=problem.model.dim)
    rule = check_choice("step_rule", step_rule, AUDP_STEPS)
    if rule == "eq10":
        rates = np.array([li.audp_learning_rate(t=t, smoothness=smoothness, max_staleness=tau, delta_b=db)
                          for t in range(1, steps + 1)])
    else:
        gamma = (li.theorem4_max_learning_rate(smoothness=smoothness, max_staleness=tau) if learning_rate is None
                 else check_real("learning_rate", learning_rate, low=0.0, low_open=True))
        rates = np.full(steps, gamma)
    return _simulate(algorithm="audp", problem=problem, steps=steps, batch=batch, epsilons=epsilons,
                     learning_rates=rates, sensitivities=np.full(steps, sensitivity), stages=np.ones(steps, int),
                     max_staleness=tau, tau_policy=policy, compute=compute, seed=seed, eval_every=eval_every,
                     progress=progress, delta_slack=delta_slack,
                     config={"step_rule": rule, "clipping_norm": clip, "sensitivity": sensitivity, "delta_b": db,
                             "sigma": sigma, "smoothness": smoothness})


def run_mapa(*, problem: Problem, plan: li.MapaSchedule, epsilon, tau_policy: str = "none",
             upload_order: str = "random", compute: Durations | None = None, seed: int = 0, eval_every: int = 1,
             gradient_every: int = 1, progress=None) -> SimulationResult:
    """MAPA (li Algorithm 1) with the stages of ``plan`` (:func:`bounds.mapa.mapa_schedule` for these edges).

    ``epsilon`` is each edge's ε_k (one number or one per edge); the plan must have been made with the same
    ε (its min ε_k sets the noise moment), batch size, τ_max and ``num_edges`` = the problem's clients.

    ``upload_order`` (module docstring): ``"random"``, with ``compute`` durations (default
    :data:`~planner.simulate.engine.DEFAULT_COMPUTE`), or ``"round_robin"``, which sets equal deterministic compute
    times itself (``compute`` must then be None). ``gradient_every`` = k computes ‖∇f(x_t)‖² and f at every k-th
    update and each stage's first only (module docstring).
    """
    inputs = plan.inputs
    if inputs["num_edges"] != problem.n_clients:
        raise ValueError(f"the plan is for {inputs['num_edges']} edges but the problem has {problem.n_clients}")
    steps, batch, epsilons, tau, policy, seed = _common(problem, plan.iterations, inputs["batch_size"], epsilon,
                                                        inputs["max_staleness"], tau_policy, seed)
    order = check_choice("upload_order", upload_order, UPLOAD_ORDERS)
    if order == "round_robin":
        if compute is not None:
            raise ValueError(f"compute must be None with upload_order='round_robin' (round robin sets every edge's "
                             f"compute time to one unit, li L401); got {compute!r}")
        if policy == "drop" and problem.n_clients - 1 > tau:
            raise ValueError(f"tau_policy='drop' with upload_order='round_robin' needs K - 1 <= max_staleness (round "
                             f"robin's staleness is K - 1, so every upload after the first K would be dropped and the "
                             f"run never end); got K = {problem.n_clients}, max_staleness = {tau}: use "
                             "tau_policy='none'")
        compute = ROUND_ROBIN_COMPUTE
    if not np.isclose(epsilons.min(), min(np.atleast_1d(inputs["epsilon"]))):
        raise ValueError("epsilon must have the same smallest value as the plan's epsilon")
    stage_of = np.concatenate([np.full(stage.iterations, stage.index) for stage in plan.stages])
    rates = np.concatenate([np.full(stage.iterations, stage.learning_rate) for stage in plan.stages])
    sensitivities = np.concatenate([np.full(stage.iterations, stage.sensitivity) for stage in plan.stages])
    return _simulate(algorithm="mapa", problem=problem, steps=steps, batch=batch, epsilons=epsilons,
                     learning_rates=rates, sensitivities=sensitivities, stages=stage_of, max_staleness=tau,
                     tau_policy=policy, compute=compute or DEFAULT_COMPUTE, seed=seed, eval_every=eval_every,
                     progress=progress, delta_slack=plan.privacy.delta_slack, gradient_every=gradient_every,
                     config={"stages": len(plan.stages), "noise_model": plan.noise_model,
                             "update_rule": plan.update_rule, "theta": inputs["theta"], "upload_order": order})


#: Why the ledger states no with-replacement amplification (the accountant that models it is Gaussian-only).
WITH_REPLACEMENT_ACCOUNTANT = ("not applicable: the upload noise is Laplace-type (pure epsilon-DP, li Eq. (6)), not "
                               "Gaussian, so bounds.accounting's with_replacement accountant (a mixture of Gaussians, "
                               "bounds.sampling) does not apply to these with-replacement batches; no amplified "
                               "epsilon is stated")


def mapa_ledger(*, uploads, epsilon, delta_slack: float, iterations: int) -> dict:
    """Per-edge totals of the uploads made (each pure ε_k-DP, replace-one): basic, advanced, optimal composition.

    ``epsilon`` (headline, δ = 0) is the worst edge's n_k ε_k; ``advanced``/``optimal`` are (ε', δ') with
    δ' = ``delta_slack`` (Dwork & Roth Thm 3.20; Kairouz-Oh-Viswanath, exact for pure ε-DP mechanisms);
    ``paper_global`` is the paper's Σ_t ε_{k(t)} over all uploads (L387); ``round_robin_uploads`` is what the
    planner assumes (li L401).
    """
    counts = [check_int(f"uploads[{k}]", n, low=0) for k, n in enumerate(uploads)]
    eps = _edge_epsilons(epsilon, len(counts)).tolist()
    slack = check_real("delta_slack", delta_slack, low=0.0, high=1.0, low_open=True, high_open=True)
    basic = [composition.basic_composition(epsilons=[e] * n)[0] if n else 0.0 for n, e in zip(counts, eps,
                                                                                           strict=True)]
    advanced = [composition.advanced_composition(epsilon=e, delta=0.0, count=n, delta_slack=slack)[0] if n else 0.0
                for n, e in zip(counts, eps, strict=True)]
    optimal = [composition.optimal_composition_epsilon(epsilon=e, count=n, delta=slack) if n else 0.0
               for n, e in zip(counts, eps, strict=True)]
    worst = int(np.argmax(basic))
    paper = composition.basic_composition(epsilons=[e for n, e in zip(counts, eps, strict=True) for _ in range(n)])[0]
    best = min(advanced[worst], optimal[worst])
    return {
        "mechanism": "laplace-type (l2)", "epsilon": max(basic), "delta": 0.0, "worst_edge": worst,
        "accountant": "basic composition per edge", "per_upload_epsilon": eps, "uploads_per_edge": counts,
        "round_robin_uploads": list(li.round_robin_uploads(iterations=iterations, num_edges=len(counts))),
        "per_edge_basic": basic, "per_edge_advanced": advanced, "per_edge_optimal": optimal,
        "delta_slack": slack, "paper_global": paper,
        "sampling": li.SAMPLING, "neighboring_relation": li.NEIGHBORING_RELATION,
        "statement": (f"Every upload is pure epsilon_k-DP (replace-one mini-batches, {li.SAMPLING}). Per edge, over "
                      f"the uploads it made (worst edge {worst}: {counts[worst]} uploads): epsilon <= {max(basic):.6g} "
                      f"(basic composition, delta = 0), or epsilon <= {best:.6g} at delta = {slack:g} (advanced "
                      f"{advanced[worst]:.6g}, optimal {optimal[worst]:.6g}). The paper's global sum over all "
                      f"uploads (li L387) is {paper:.6g}. With-replacement sampling accountant: "
                      f"{WITH_REPLACEMENT_ACCOUNTANT}."),
        "with_replacement_accountant": WITH_REPLACEMENT_ACCOUNTANT,
    }


#: Named runs that take seconds: synthetic logistic data (unit rows) over 5 edges, the paper's τ_max = K.
PRESETS = {
    "mapa-fig2": {"algorithm": "mapa", "iterations": 4000, "epsilon": 5.0, "means": (1.0, 1.0, 2.0, 2.0, 4.0),
                  "tau_policy": "drop"},
    "audp-cyclic": {"algorithm": "audp", "iterations": 4000, "epsilon": 5.0, "means": 1.0, "tau_policy": "none"},
}
PRESET_DATA = {"n_samples": 2500, "n_features": 20, "edges": 5, "batch_size": 16, "theta": 0.5, "initial_clip": 1.0}


def unit_logistic_constants(problem: Problem) -> tuple[float, float, float]:
    """(L, σ, F₀) of the logistic loss without L2 term: L = max‖x‖²/4, σ ≤ 2 max‖x‖ (‖∇F(x,ξ) − ∇f(x)‖ ≤
    ‖∇F(x,ξ)‖ + ‖∇f(x)‖ ≤ 2 max‖x‖, Eq. (3)) and F₀ = f(0) ≥ f(0) − f* (f ≥ 0)."""
    data = problem.stacked
    if problem.model.kind != "logistic" or problem.model.rho != 0:
        raise ValueError("the closed-form constants need the logistic loss without regularization")
    return (problem.model.smoothness(data.X), 2.0 * float(np.sqrt(data.row_sq_norms.max())),
            problem.model.loss(data.X, data.y, np.zeros(problem.model.dim)))


def plan_for_problem(problem: Problem, *, epsilon, batch_size: int, iterations: int, theta: float = 0.5,
                     delta: float = 1e-3, initial_clip: float | None = 1.0) -> li.MapaSchedule:
    """MAPA's stages for ``problem`` (:func:`unit_logistic_constants`, τ_max = K as li L401, the L2-Laplace noise
    moment); ``initial_clip`` C₀ starts at ΔS₀ = 2C₀/b (li L442), ``None`` at Theorem 3's ΔS₀ (failure ``delta``)."""
    smoothness, sigma, gap = unit_logistic_constants(problem)
    return li.mapa_schedule(epsilon=epsilon, delta=delta, sigma=sigma, batch_size=batch_size, smoothness=smoothness,
                            max_staleness=problem.n_clients, theta=theta, iterations=iterations, initial_gap=gap,
                            num_edges=problem.n_clients, model_dim=problem.model.dim,
                            initial_sensitivity=None if initial_clip is None else 2.0 * initial_clip / batch_size)


def run_preset(name: str, *, seed: int = 0, progress=None) -> SimulationResult:
    """Run preset ``name`` (:data:`PRESETS`): ``mapa-fig2`` (MAPA, edges with exponential compute times of means
    1, 1, 2, 2, 4 as in li Fig. 2, uploads staler than τ_max = K dropped; start at the clip C₀ = 1 = max‖x‖, li
    L442) or ``audp-cyclic`` (AUDP with Eq. (10), equal constant compute times: the paper's cyclic delays, L401).
    """
    from fedplan.planner.simulate.adp2sgd import unit_norm_problem
    from fedplan.planner.simulate.data import load_dataset

    options = PRESETS[check_choice("preset", name, tuple(PRESETS))]
    data = load_dataset("synthetic", seed=seed, n_samples=PRESET_DATA["n_samples"],
                        n_features=PRESET_DATA["n_features"])
    edges, batch = PRESET_DATA["edges"], PRESET_DATA["batch_size"]
    problem = unit_norm_problem(dataset=data, clients=edges, seed=seed)
    steps = options["iterations"]
    common = {"epsilon": options["epsilon"], "tau_policy": options["tau_policy"],
              "compute": Durations("exponential" if options["algorithm"] == "mapa" else "constant",
                                   options["means"]),
              "seed": seed, "eval_every": max(1, steps // 50), "progress": progress}
    if options["algorithm"] == "audp":
        smoothness, sigma, _ = unit_logistic_constants(problem)
        result = run_audp(problem=problem, iterations=steps, batch_size=batch, clipping_norm=1.0,
                          smoothness=smoothness, max_staleness=edges, sigma=sigma, **common)
    else:
        plan = plan_for_problem(problem, epsilon=options["epsilon"], batch_size=batch, iterations=steps,
                                theta=PRESET_DATA["theta"], initial_clip=PRESET_DATA["initial_clip"])
        result = run_mapa(problem=problem, plan=plan, **common)
    result.config["preset"] = name
    return result
