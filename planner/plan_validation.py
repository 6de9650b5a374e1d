"""Validate exactly a planner's plan: its exported :class:`~fedplan.planner.schedule.Schedule` run on the backing
engine on a few seeds, its claims checked (``fedplan validate plan``, the planner page's "Validate this plan").

:func:`planner.validate.validate_vandijk_plan` and :func:`~planner.validate.validate_fedsgd_dpc` validate the
paper's parameters; here every number of the run comes from the plan's schedule, nothing is planned again:

* van Dijk et al. (recipe ``increasing-sizes``, :func:`validate_vandijk_schedule`): each round's sample size s_i,
  the noise multiplier σ the tight accountant calibrated (not the paper's σ), the sampling the plan accounted
  (``privacy["sampling"]``) over clients of the plan's N_c records (``privacy["dataset_size"]``), the step sizes of
  the schedule (or η_t = η0/(1 + βt) from ``learning_rate`` and ``decay`` where it has none: the plan does not
  choose them, van Dijk Table 2 L1852). The run's ledger accounts its releases by RDP at the plan's δ (an upper
  bound, fast and free of the PLD accountant's time budget, whose fallback under load would make the same releases
  read differently): the spent ε ≤ the RDP ε of the plan's schedule (the run made no more releases than planned),
  and the plan's own tight ε ≤ the budget (van Dijk Theorems 3, 4/6 bound privacy only); convergence at Lemma 3's
  rate (L725) is NO GUARANTEE, naming the hypotheses the run violates.
* Zhou et al. (recipe ``fedsgd-dpc``, :func:`validate_fedsgd_dpc_schedule`): the plan's T* rounds of b* clients with
  its Laplace scale, clipping ξ₁ and constants (its ``metadata["constants"]``, whose regularisation the model
  keeps), the theory's step sizes η_t = 2/(μ(t + γ)) (zhou Theorem 3, L298): E‖θ_t − θ*‖² against U(t, b*)
  (Theorems 3-4, L298, L314, the plan's bound at t = T*), the spent ε against the plan's.
* Damaskinos (recipe ``dpscd``, :func:`validate_dpscd_schedule`): DP-SCD (thesis Algorithm 1, L1313) for the plan's
  T iterations of batches of L = qN of its N examples, at the noise multiplier σ the tight accountant calibrated,
  with the sampling the plan accounted (Poisson, or fixed-size batches), on the logistic loss of the plan's binary
  data (λ = 0.01, the thesis's logistic preset): the spent ε ≤ the RDP ε of the plan's schedule, and the plan's
  tight ε ≤ the budget. Theorem 7's convergence recursion (L1498) is for the ridge loss: no convergence claim.
* Xu et al. (recipe ``adp2sgd``, :func:`validate_adp2sgd_schedule`): A(DP)²SGD (xu Algorithm 1, L102-113) for the
  plan's T iterations of its K workers (one per client, on a ring: the paper's communication ring, App. A L309),
  each update B of the worker's n₍₁₎ records without replacement at the plan's noise multiplier σ (noise std /
  clipping norm on the sum of the batch; Xu's z = σ/2), the workers in round robin (k^t = t mod K), so that each
  makes the plan's ⌈T/K⌉ updates (or ⌊T/K⌋), on the logistic loss of the plan's binary data with rows scaled to norm
  1 and clipping norm G = 1 (which then never binds). The run's ledger (the RDP ε of its busiest worker, WBK'19 Thm
  27) ≤ the same accountant's ε of the plan's ⌈T/K⌉ updates, and the plan's tight ε ≤ the budget; the average
  ‖∇F(θ^t)‖² against Theorem 1 (L147), NO GUARANTEE: the theorem draws k^t at random, independently (L125, L139).
* Li et al. (recipe ``mapa``, :func:`validate_mapa_schedule`): MAPA (li Algorithm 1, L345-383) for the plan's T Cloud
  updates of its K edges (one per client), with its stages (γ_s, ΔS_s by iteration) and per-upload ε as exported,
  the edges finishing in turn (equal deterministic compute times: k(t) = (t − 1) mod K, the paper's cyclic delays,
  L401), so that each makes the plan's ⌈T/K⌉ uploads (or ⌊T/K⌋), on the logistic loss of the plan's binary data with
  rows scaled to norm 1 (where L, σ and F₀ have closed-form bounds, :mod:`planner.validate_xu_li`). The run's ledger
  (its busiest edge's uploads by optimal composition, as the plan composed them) ≤ the plan's, and the plan's ε ≤ the
  budget; the mean ‖∇f(x_t)‖² of each stage against Theorem 4 (Eq. (14), L293) with the run's constants and the
  plan's τ_max, a guarantee only while the measured staleness K − 1 ≤ τ_max and no per-sample gradient is clipped.

Progress is reported per round over all seeds (:class:`SeedRounds`), so that a bar moves within the first seed.
"""

from __future__ import annotations

import numpy as np

from fedplan.bounds import accounting, composition
from fedplan.bounds import adp2sgd as xu
from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.bounds import mapa as li
from fedplan.bounds.theorem import Hypothesis
from fedplan.bounds.validation import check_int
from fedplan.planner.schedule import Schedule
from fedplan.planner.simulate.adp2sgd import run_adp2sgd
from fedplan.planner.simulate.data import Dataset
from fedplan.planner.simulate.dpscd import make_dual_problem, run_dpscd
from fedplan.planner.simulate.fedsgd_dpc import run_fedsgd_dpc
from fedplan.planner.simulate.graphs import make_graph, spectral_gap
from fedplan.planner.simulate.mapa import run_mapa, unit_logistic_constants
from fedplan.planner.simulate.problem import make_problem
from fedplan.planner.simulate.records import _accountant_for, merge_releases
from fedplan.planner.simulate.vandijk import SAMPLINGS as VANDIJK_SAMPLINGS
from fedplan.planner.simulate.vandijk import inputs_from_schedule, run_vandijk
from fedplan.planner.validate import (
    COMPOSITION_ROUNDING,
    ValidationReport,
    _claim,
    _curve_rows,
    _delay_rows,
    _lemma3_claim,
    _seeds,
    _spent_claim,
)
from fedplan.planner.validate_xu_li import (
    _binary_unit_problem,
    _bound_claim,
    _staleness_hypothesis,
    _with,
    theorem1_constants_text,
    theorem1_of_run,
    theorem1_problem,
    theorem4_stage_claims,
)
from fedplan.planner.vandijk import round_step_sizes

__all__ = ["ENGINES", "SeedRounds", "engine_of", "validate_adp2sgd_schedule", "validate_dpscd_schedule",
           "validate_fedsgd_dpc_schedule", "validate_mapa_schedule", "validate_schedule", "validate_vandijk_schedule"]

#: The recipes of :data:`planner.recipes.RECIPES` whose plan runs on an engine here, and the engine's name.
ENGINES = {"increasing-sizes": "van Dijk et al.'s Algorithms 1-4 (planner.simulate.vandijk)",
           "fedsgd-dpc": "Zhou et al.'s FedSGD-DPC (planner.simulate.fedsgd_dpc)",
           "dpscd": "Damaskinos's DP-SCD (planner.simulate.dpscd)",
           "adp2sgd": "Xu et al.'s A(DP)²SGD with its workers in round robin (planner.simulate.adp2sgd)",
           "mapa": "Li et al.'s MAPA with its edges in round robin (planner.simulate.mapa)"}
#: Points of a plan's loss and accuracy curves: the model is evaluated on all the data every T/EVALUATIONS iterations
#: (DP-SCD's, A(DP)²SGD's and MAPA's thousands of iterations are each far cheaper than an evaluation).
EVALUATIONS = 20
#: Iterations of an A(DP)²SGD or MAPA plan's run at which ‖∇F(θ^t)‖² is computed (every T/GRADIENTS-th): each is a
#: pass over all the data, which every iteration would make the default plans' 2 seeds take 40 s (A(DP)²SGD) or 55 s
#: (MAPA: f(x_t) as well) instead of seconds.
GRADIENTS = 200
#: The name of a plan's first privacy claim: the run spent no more than the plan's schedule by the plan's accountant.
SPENT_CLAIM = "spent epsilon <= the plan's schedule, same accountant"
#: The regularisation λ of a DP-SCD plan's run: the thesis's logistic preset (planner.simulate.dpscd.DPSCD_PRESETS).
DPSCD_REGULARIZATION = 0.01
#: The samplings a DP-SCD plan may account, and the engine's name for each.
DPSCD_SAMPLINGS = {"poisson": "poisson", "fixed_size": "fixed"}
#: The sampling an A(DP)²SGD plan may account: the engine draws B of a worker's records without replacement (xu L108).
ADP2SGD_SAMPLINGS = ("fixed_size",)
#: The clipping norm G of an A(DP)²SGD plan's run: its rows have norm 1, so every per-example logistic gradient has
#: norm ≤ 1 and clipping at G = 1 never binds (Theorem 2's G-Lipschitz f_i, xu L171).
ADP2SGD_CLIPPING_NORM = 1.0
#: Theorem 1's random worker (xu Algorithm 1 line 4, L107; Assumption 1.1's E over k, L125; Assumption 2.2, L139),
#: which a plan's run gives up for the plan's ⌈T/K⌉ updates per worker.
RANDOM_WORKER = Hypothesis(
    "k^t drawn at random, independently of the past (the expectation over k in Assumptions 1.1 and 2.1-2.2)", False,
    "the run's workers go in round robin, k^t = t mod K, so that each makes the plan's ceil(T/K) updates (or "
    "floor(T/K)); rho is the spectral gap of a uniformly random k^t", "xu L107, L125, L135, L139")


class SeedRounds:
    """``progress(done, total)`` in rounds over every seed: the engine's ``progress(rounds done)`` of the current seed
    shifted by the rounds of the seeds before it (:meth:`seed_done`, the validations' ``on_run``)."""

    def __init__(self, progress, rounds: int, seeds: int):
        self.progress, self.rounds, self.total = progress, rounds, rounds * seeds
        self.offset = 0

    def round_done(self, done: int) -> None:
        if self.progress is not None:
            self.progress(self.offset + done, self.total)

    def seed_done(self, done: int, total: int) -> None:
        self.offset = done * self.rounds
        self.round_done(0)


def engine_of(schedule: Schedule) -> str:
    """The recipe whose engine runs ``schedule``: ``increasing-sizes`` (per-round sample sizes and a Gaussian noise
    multiplier), ``fedsgd-dpc`` (clients per round and a Laplace scale), ``dpscd`` (a DP-SCD plan's sample rate,
    batch size and noise multiplier), ``adp2sgd`` (an A(DP)²SGD plan's, with Xu's z beside σ) or ``mapa`` (a MAPA
    plan's stages: stage, learning rate γ_s, sensitivity ΔS_s and batch size); ``ValueError`` for any other plan."""
    columns = set(schedule.change_points[0][1])
    recipe = schedule.metadata.get("recipe")
    if recipe == "dpscd" and {"sample_rate", "batch_size", "noise_multiplier"} <= columns:
        return "dpscd"
    if recipe == "adp2sgd" and {"sample_rate", "batch_size", "noise_multiplier", "noise_to_sensitivity"} <= columns:
        return "adp2sgd"
    if recipe == "mapa" and {"stage", "learning_rate", "sensitivity", "batch_size"} <= columns:
        return "mapa"
    if {"sample_size", "noise_multiplier"} <= columns and schedule.privacy.get("mechanism") == "gaussian":
        return "increasing-sizes"
    if {"clients_per_round", "laplace_scale"} <= columns:
        return "fedsgd-dpc"
    raise ValueError(f"schedule must be a plan of one of the recipes {', '.join(ENGINES)} (sample_size and "
                     "noise_multiplier, or clients_per_round and laplace_scale per round, or sample_rate, "
                     "batch_size and noise_multiplier with metadata recipe = dpscd, or those and "
                     "noise_to_sensitivity with metadata recipe = adp2sgd, or stage, learning_rate, sensitivity and "
                     "batch_size with metadata recipe = mapa); got the columns "
                     f"{', '.join(sorted(columns))}: no engine runs this plan")


def _each_seed(seeds, run, progress: SeedRounds):
    runs = []
    for seed in seeds:
        runs.append(run(seed))
        progress.seed_done(len(runs), len(seeds))
    return tuple(runs)


def _planned_clients(clients: int, planned: int, why: str) -> None:
    """Refuse ``clients`` other than the plan's ``planned`` (``why``: what the plan made for that many)."""
    if check_int("clients", clients, low=1) != planned:
        raise ValueError(f"clients must be the plan's {planned} ({why} {planned} clients); got {clients}: give the "
                         "plan's clients")


def _clients_of_the_plan(dataset: Dataset, clients: int, client_size: int) -> None:
    examples = dataset.X_train.shape[0]
    if examples // clients != client_size:
        raise ValueError(f"clients must split the plan's {examples} examples into its clients of N_c = {client_size} "
                         f"records; got clients = {clients} ({examples // clients} records each): give the plan's "
                         "clients")


def _executed_sampling(privacy: dict, executed, engine: str) -> str:
    """The sampling a plan accounted (its privacy block), refused unless the ``engine`` executes it (``executed``)."""
    sampling = privacy.get("sampling")
    if sampling not in executed:
        raise ValueError(f"sampling must be one the {engine} engine executes ({', '.join(executed)}) to validate this "
                         f"plan; the plan accounts {sampling!r}: plan again with one of them")
    return sampling


def _privacy_claims(runs, planned_epsilon: float, privacy: dict, accountant: str, *,
                    by: str = "bounds.accounting") -> tuple:
    """A plan's two privacy claims: the runs' ε of their executed releases ≤ ``planned_epsilon`` (the plan's
    schedule by the same ``accountant``, the function ``by``: the run made no more releases than planned), and the
    plan's own ε ≤ its budget (its privacy block)."""
    delta, sampling = privacy["delta"], privacy["sampling"]
    where = f"both {accountant.upper()} at delta = {delta:.4g}, {sampling} sampling executed and accounted"
    return (
        _spent_claim(SPENT_CLAIM, runs, planned_epsilon, f"{by} on the executed releases vs the plan's schedule",
                     where),
        _budget_claim(privacy),
    )


def _budget_claim(privacy: dict):
    """The plan's own ε (its privacy block) ≤ its budget."""
    return _claim("the plan's epsilon <= the budget", privacy["epsilon"], privacy["target_epsilon"], "<=",
                  f"the plan's privacy block ({privacy['accountant']}, {privacy['bound']})",
                  f"{privacy['accountant'].upper()} ({privacy['bound']}) of the same releases at delta = "
                  f"{privacy['delta']:.4g}")


def _full_passes(steps: int, first: int) -> tuple[int, str]:
    """Every how many of a run's ``steps`` iterations the full gradient is computed (:data:`GRADIENTS` of them), and
    which t that makes from the ``first`` (0 or 1, the paper's numbering), for a claim's detail."""
    every = max(1, steps // GRADIENTS)
    return every, ("every iteration" if every == 1 else
                   f"t = {first}, {first + every}, {first + 2 * every}, ... (every {every}th iteration)")


def validate_vandijk_schedule(*, schedule: Schedule, dataset: Dataset, clients: int, clipping_norm: float,
                              learning_rate: float, decay: float = 0.0, step_rule: str = "inverse", seeds=(0,),
                              progress=None, **run_options) -> ValidationReport:
    """Run an increasing-sizes plan's schedule on ``seeds`` (module docstring); ``dataset`` is the plan's data (all
    of it trains: accuracy is on the training data) over ``clients`` of the plan's N_c records each.

    ``learning_rate``, ``decay`` and ``step_rule`` give η̄_i (:func:`~planner.vandijk.round_step_sizes`) where the
    schedule has no ``learning_rate``. ``progress(done, total)`` is called per round over all seeds.
    """
    seeds = _seeds(seeds)
    privacy = schedule.privacy
    sampling = _executed_sampling(privacy, VANDIJK_SAMPLINGS, "van Dijk")
    client_size = int(privacy["dataset_size"])
    _clients_of_the_plan(dataset, clients, client_size)
    rows = schedule.rows()
    sizes = [int(row["sample_size"]) for row in rows]
    if "learning_rate" not in rows[0]:
        steps = round_step_sizes(sizes, learning_rate=learning_rate, decay=decay, rule=step_rule)
        schedule = Schedule(rounds=schedule.rounds, change_points=tuple(
            (index, {**row, "learning_rate": step}) for index, (row, step) in enumerate(zip(
                [{key: value for key, value in row.items() if key != "round"} for row in rows], steps, strict=True))),
            metadata=schedule.metadata, statement=schedule.statement, privacy=privacy)
    problem = make_problem(dataset=dataset, clients=clients, seed=seeds[0], scheme="sizes",
                           sizes=[client_size] * clients, with_optimum=False)
    inputs = inputs_from_schedule(schedule, problem.client_sizes)
    delta, relation = privacy["delta"], privacy["neighboring_relation"]
    accountant, _ = _accountant_for(sampling, relation, "rdp")
    counter = SeedRounds(progress, schedule.rounds, len(seeds))
    runs = _each_seed(seeds, lambda seed: run_vandijk(
        problem=problem, **inputs, clipping_norm=clipping_norm, seed=seed, delta=delta, accountant=accountant,
        sampling=sampling, progress=counter.round_done, **run_options), counter)
    planned = accounting.get_epsilon(
        segments=merge_releases([(row["sample_rate"], row["noise_multiplier"]) for row in rows]), delta=delta,
        accountant=accountant, sampling=sampling, neighboring_relation=relation,
        dataset_size=None if sampling == "poisson" else client_size)
    claims = (*_privacy_claims(runs, planned.epsilon, privacy, accountant), _lemma3_claim(runs, sizes, clients))
    table = _curve_rows(runs, "accuracy", None) + _curve_rows(runs, "loss", None) + _delay_rows(runs[0])
    notes = (f"The plan's schedule ran as exported: {schedule.rounds} rounds, s_i = {min(sizes)}..{max(sizes)}, "
             f"noise multiplier {inputs['noise_multiplier'][0]:g}, {clients} clients of N_c = {client_size}; all "
             "the plan's data train, so accuracy is on the training data.",
             f"The run's epsilon is the {accountant.upper()} upper bound of its releases, which are the plan's: their "
             f"{privacy['accountant'].upper()} ({privacy['bound']}) epsilon is the plan's {privacy['epsilon']:.6g} at "
             f"delta = {delta:.4g}.")
    return ValidationReport(algorithm="vandijk-plan", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            notes=notes)


def validate_fedsgd_dpc_schedule(*, schedule: Schedule, dataset: Dataset, clients: int, seeds=(0,), progress=None,
                                 **run_options) -> ValidationReport:
    """Run a fedsgd-dpc plan's schedule on ``seeds`` (module docstring) over ``clients`` of ``dataset``, the plan's
    data: E‖θ_t − θ*‖² per round against U(t, b*) with the plan's constants and noise, the spent ε against the
    plan's. ``progress(done, total)`` is called per round over all seeds."""
    seeds = _seeds(seeds)
    constants = schedule.metadata["constants"]
    _planned_clients(clients, constants["clients"], "its constants and noise are for")
    rows = schedule.rows()
    b = int(rows[0]["clients_per_round"])
    scales = [float(row["laplace_scale"]) for row in rows]
    zproblem = zhou.Problem(
        num_clients=constants["clients"], model_dim=constants["dim"],
        client_sizes=tuple(float(size) for size in constants["client_sizes"]), strong_convexity=constants["mu"],
        smoothness=constants["lam"], gradient_bound=constants["G"], heterogeneity=constants["Gamma"],
        initial_distance=constants["Y0"], local_gradient_std=tuple(constants["Lambda_i"]))
    problem = make_problem(dataset=dataset, clients=clients, seed=seeds[0], model=constants["model"],
                           regularization=constants["regularization"], with_optimum=True)
    steps = [zhou.step_size(problem=zproblem, t=t) for t in range(schedule.rounds)]
    counter = SeedRounds(progress, schedule.rounds, len(seeds))
    runs = _each_seed(seeds, lambda seed: run_fedsgd_dpc(
        problem=problem, rounds=schedule.rounds, clients_per_round=b, step_sizes=steps, mechanism="laplace",
        clipping_norm=constants["xi1"], noise_scale=scales, selection="uniform", seed=seed,
        progress=counter.round_done, **run_options), counter)
    per_client = np.asarray(schedule.metadata["noise"]["scale"], dtype=float)  # Laplace variance 2s² (zhou L298)
    noise = zhou.aggregated_noise_variance(problem=zproblem, variances=2.0 * per_client**2, clients_per_round=b)

    def bound_at(t: float):
        return zhou.bound_terms(problem=zproblem, rounds=t, clients_per_round=b, noise_variance=noise, sample_rate=1.0)

    final = bound_at(schedule.rounds)
    mean_final = float(np.mean([run.final["dist_sq"] for run in runs]))
    claims = (
        _claim("E||theta_T - theta*||^2 <= U(T, b)", mean_final, final.total, "<=", final.source,
               f"mean over {len(seeds)} seeds, the plan's T = {schedule.rounds}, b = {b}",
               hypotheses=final.hypotheses),
        _spent_claim("spent epsilon <= the plan's epsilon", runs, schedule.privacy["epsilon"],
                     "basic composition on the replies made vs the plan's privacy block"),
    )
    table = _curve_rows(runs, "dist_sq", lambda index: bound_at(index + 1).total)
    notes = (f"The plan's schedule ran as exported: T = {schedule.rounds} rounds of b = {b} clients, Laplace scale "
             f"{scales[0]:.4g}, clipping xi1 = {constants['xi1']:.4g}, the plan's constants (U(T, b) = "
             f"{final.total:.5g}).",)
    return ValidationReport(algorithm="fedsgd-dpc-plan", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            notes=notes, hypotheses=tuple(final.hypotheses))


def validate_dpscd_schedule(*, schedule: Schedule, dataset: Dataset, clipping_norm: float, seeds=(0,),
                            progress=None, evaluations: int = EVALUATIONS) -> ValidationReport:
    """Run a dpscd plan's schedule on ``seeds`` (module docstring) over ``dataset``, the plan's N examples (all
    training, a binary task). ``progress(done, total)`` is called per iteration over all seeds."""
    seeds = _seeds(seeds)
    privacy = schedule.privacy
    sampling = _executed_sampling(privacy, DPSCD_SAMPLINGS, "DP-SCD")
    examples = int(privacy["dataset_size"])
    if dataset.X_train.shape[0] != examples:
        raise ValueError(f"the data must be the plan's {examples} examples; got {dataset.X_train.shape[0]}: give the "
                         "plan's data")
    if dataset.task != "binary":
        raise ValueError(f"dataset must be a binary task to validate a DP-SCD plan (its run trains a logistic model); "
                         f"{dataset.name!r} is {dataset.task}: plan on binary data")
    (_, values), = schedule.change_points
    batch, sigma, steps = int(values["batch_size"]), float(values["noise_multiplier"]), schedule.rounds
    problem = make_dual_problem(dataset=dataset, loss="logistic", regularization=DPSCD_REGULARIZATION)
    delta, relation = privacy["delta"], privacy["neighboring_relation"]
    counter = SeedRounds(progress, steps, len(seeds))
    runs = _each_seed(seeds, lambda seed: run_dpscd(
        problem=problem, batch_size=batch, steps=steps, clipping_norm=clipping_norm, noise_multiplier=sigma,
        seed=seed, sampling=DPSCD_SAMPLINGS[sampling], eval_every=max(1, steps // evaluations), delta=delta,
        accountant="rdp", progress=counter.round_done), counter)
    planned = accounting.get_epsilon(sample_rate=batch / examples, noise_multiplier=sigma, steps=steps, delta=delta,
                                     accountant="rdp", sampling=sampling, neighboring_relation=relation,
                                     dataset_size=None if sampling == "poisson" else examples)
    claims = _privacy_claims(runs, planned.epsilon, privacy, "rdp")
    table = _curve_rows(runs, "loss", None)  # the primal objective P(theta) on the plan's data
    notes = (f"The plan's schedule ran as exported: T = {steps} iterations of batches of L = {batch} of N = {examples}"
             f" examples ({sampling} sampling), noise multiplier {sigma:g}, clipping norm C = {clipping_norm:g}, on "
             f"the logistic loss with lambda = {DPSCD_REGULARIZATION:g}; the loss curve is the primal objective on "
             "all the plan's data.",
             "Theorem 7's convergence recursion (Damaskinos L1498) is for the ridge loss: this run is checked for "
             "privacy only.")
    return ValidationReport(algorithm="dpscd-plan", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            notes=notes)


def validate_adp2sgd_schedule(*, schedule: Schedule, dataset: Dataset, clients: int, learning_rate: float,
                              seeds=(0,), progress=None) -> ValidationReport:
    """Run an adp2sgd plan's schedule on ``seeds`` (module docstring) over ``dataset``, the plan's data (a binary task,
    all of it training, rows scaled to norm 1), split into the plan's ``clients``, one worker each.

    ``learning_rate`` is η̄, the step on the mean gradient (xu L112 with η = η̄/B; the plan does not choose it).
    ``progress(done, total)`` is called per iteration over all seeds.
    """
    seeds = _seeds(seeds)
    privacy, metadata = schedule.privacy, schedule.metadata
    _executed_sampling(privacy, ADP2SGD_SAMPLINGS, "A(DP)²SGD")
    workers, steps, client_size = int(metadata["workers"]), int(metadata["iterations"]), int(privacy["dataset_size"])
    _planned_clients(clients, workers, "its per-worker epsilon is for one worker on each of its")
    if workers < 3:
        raise ValueError(f"clients must be >= 3 to validate an adp2sgd plan (its workers gossip on a ring, xu App. A "
                         f"L309); got {clients}: plan with 3 clients or more")
    _clients_of_the_plan(dataset, clients, client_size)
    (_, values), = schedule.change_points
    batch, sigma = int(values["batch_size"]), float(values["noise_multiplier"])
    problem = _binary_unit_problem(dataset, clients, seeds[0])
    graph = make_graph(topology="ring", workers=clients, seed=seeds[0])
    delta = privacy["delta"]
    counter = SeedRounds(progress, steps, len(seeds))
    every, sampled = _full_passes(steps, 0)
    runs = _each_seed(seeds, lambda seed: run_adp2sgd(
        problem=problem, graph=graph, steps=steps, batch_size=batch, learning_rate=learning_rate,
        noise_to_sensitivity=sigma / 2, clipping_norm=ADP2SGD_CLIPPING_NORM, staleness="fixed", max_staleness=0,
        worker_order="round_robin", seed=seed, delta=delta, eval_every=max(1, steps // EVALUATIONS),
        gradient_every=every, progress=counter.round_done), counter)
    setting = xu.Setting(workers=workers, examples_per_worker=client_size, batch_size=batch, steps=steps, delta=delta,
                         worker_steps=schedule.rounds)
    planned = xu.tight_epsilon(setting=setting, noise_to_sensitivity=sigma / 2, sampling="per_worker")
    topology = xu.Topology(workers=workers, rho=spectral_gap(graph))
    constants = theorem1_problem(problem)
    theorem1 = theorem1_of_run(constants=constants, topology=topology, config=runs[0].config, staleness=0)(steps)
    simulated = float(np.mean([np.nanmean(run.column("grad_norm_sq")) for run in runs]))
    claims = (*_privacy_claims(runs, planned.epsilon, privacy, "rdp", by="bounds.adp2sgd.tight_epsilon"),
              _bound_claim("(1/T) sum_t E||grad F(theta^t)||^2 <= Theorem 1", simulated, _with(theorem1, RANDOM_WORKER),
                           theorem1.source, f"mean over {len(seeds)} seeds and over {sampled}, T = {steps}, "
                           f"eta_bar = {learning_rate:g}, "
                           f"tau = 0, rho = {topology.rho:.6g}, terms "
                           + ", ".join(f"{name} {value:.4g}" for name, value in theorem1.terms.items())))
    table = _curve_rows(runs, "accuracy", None) + _curve_rows(runs, "loss", None)
    updates = runs[0].config["worker_updates"]
    notes = (f"The plan's schedule ran as exported: T = {steps} iterations of K = {workers} workers in round robin "
             f"({min(updates)} to {max(updates)} updates each; the plan's {schedule.rounds}), each update B = {batch} "
             f"of the worker's N_c = {client_size} records without replacement at noise multiplier {sigma:g} (noise "
             f"std / clipping norm on the sum of the batch; Xu's z = {sigma / 2:g}), on a ring, with no staleness, "
             f"learning rate eta_bar = {learning_rate:g} (the plan does not choose it). The rows are scaled to norm 1, "
             f"so clipping at G = {ADP2SGD_CLIPPING_NORM:g} never binds; all the plan's data train, so accuracy is on "
             "the training data.",
             f"The run's epsilon is the RDP upper bound of its busiest worker's releases (the engine's ledger: "
             f"{planned.accountant}), which are the plan's: their {privacy['accountant'].upper()} ({privacy['bound']}) "
             f"epsilon is the plan's {privacy['epsilon']:.6g} at delta = {delta:.4g}, the RDP bound "
             f"{planned.epsilon / privacy['epsilon']:.3g} times that.",
             f"Theorem 1 (xu L147) with {theorem1_constants_text(constants)}: it draws the active worker at random, "
             "independently (L125, L139), and a run that keeps the plan's updates per worker takes them in turn, so "
             "its bound is no guarantee here, whatever the numbers.")
    return ValidationReport(algorithm="adp2sgd-plan", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            notes=notes, hypotheses=(*theorem1.hypotheses, RANDOM_WORKER))


def _mapa_plan(schedule: Schedule) -> li.MapaSchedule:
    """A mapa plan's stages as exported (its ``metadata["stages"]``, γ_s and ΔS_s as computed by
    :func:`bounds.mapa.mapa_schedule`, whose ``p`` the export names ``P``), with its inputs, hypotheses and notes;
    the round-robin totals are :func:`bounds.mapa.composition_totals` of its inputs (nothing is planned again)."""
    metadata = schedule.metadata
    inputs = metadata["inputs"]
    stages = tuple(li.Stage(**{key: value for key, value in row.items() if key != "P"}, p=row["P"])
                   for row in metadata["stages"])
    return li.MapaSchedule(
        stages=stages, privacy=li.composition_totals(epsilon=inputs["epsilon"], iterations=inputs["iterations"],
                                                     num_edges=inputs["num_edges"], delta_slack=inputs["delta_slack"]),
        inputs=inputs, noise_model=metadata["noise_model"], update_rule=metadata["update_rule"],
        p_reference=metadata["p_reference"], hypotheses=tuple(Hypothesis(**row) for row in metadata["hypotheses"]),
        notes=tuple(metadata["notes"]))


def validate_mapa_schedule(*, schedule: Schedule, dataset: Dataset, clients: int, seeds=(0,),
                           progress=None) -> ValidationReport:
    """Run a mapa plan's schedule on ``seeds`` (module docstring) over ``dataset``, the plan's data (a binary task
    with the plan's N features, all of it training, rows scaled to norm 1), split into the plan's ``clients``, one
    edge each. ``progress(done, total)`` is called per Cloud update over all seeds."""
    seeds = _seeds(seeds)
    privacy, plan = schedule.privacy, _mapa_plan(schedule)
    edges, steps, dim = plan.inputs["num_edges"], plan.iterations, plan.inputs["model_dim"]
    _planned_clients(clients, edges, "its per-upload epsilon and stages are for one edge on each of its")
    if privacy["accountant"] != "optimal":
        raise ValueError(f"the plan's privacy accountant must be 'optimal' (the mapa recipe's composition of an edge's "
                         f"uploads); got {privacy['accountant']!r}: plan with the mapa recipe")
    if dataset.X_train.shape[1] != dim:
        raise ValueError(f"dataset must have the plan's N = {dim} features (its noise moment is for a model in R^N); "
                         f"{dataset.name!r} has {dataset.X_train.shape[1]}: give the plan's data")
    problem = _binary_unit_problem(dataset, clients, seeds[0])
    smoothness, sigma, gap = unit_logistic_constants(problem)
    per_upload, releases, delta = privacy["epsilon_per_release"], privacy["releases"], privacy["delta"]
    counter = SeedRounds(progress, steps, len(seeds))
    every, sampled = _full_passes(steps, 1)
    runs = _each_seed(seeds, lambda seed: run_mapa(
        problem=problem, plan=plan, epsilon=per_upload, upload_order="round_robin", seed=seed,
        eval_every=max(1, steps // EVALUATIONS), gradient_every=every, progress=counter.round_done), counter)
    planned = composition.optimal_composition_epsilon(epsilon=per_upload, count=releases, delta=delta)
    spent = max(max(run.privacy["per_edge_optimal"]) for run in runs)
    busiest = max(max(run.privacy["uploads_per_edge"]) for run in runs)
    tau = plan.inputs["max_staleness"]
    staleness = _staleness_hypothesis(runs, tau)
    theorem4, stages = theorem4_stage_claims(
        plan.stages, runs, sigma=sigma, batch_size=plan.inputs["batch_size"], smoothness=smoothness,
        max_staleness=tau, initial_gap=gap, staleness=staleness,
        sampled=f" (mean over {len(seeds)} seeds and {sampled}" + (", and the stage's first)" if every > 1 else ")"))
    claims = (_claim(SPENT_CLAIM, spent, planned, "<=", "bounds.composition.optimal_composition_epsilon (Kairouz et "
                     "al.) of the busiest edge's uploads vs the plan's", f"{busiest} uploads vs the plan's {releases} "
                     f"at epsilon = {per_upload:.6g} each, delta = {delta:.4g}",
                     slack=COMPOSITION_ROUNDING * planned),
              _budget_claim(privacy), *theorem4)
    table = _curve_rows(runs, "accuracy", None) + _curve_rows(runs, "loss", None) + stages
    updates = runs[0].config["uploads"]
    notes = (f"The plan's schedule ran as exported: T = {steps} Cloud updates of K = {edges} edges in turn (equal "
             f"compute times, the paper's cyclic delays, li L401: {min(updates)} to {max(updates)} uploads each; the "
             f"plan's {releases}), each a mean of b = {plan.inputs['batch_size']} per-sample gradients drawn with "
             f"replacement, clipped at C_s = b Delta S_s / 2, with L2-Laplace noise at the plan's per-upload epsilon "
             f"{per_upload:.6g}, through its {len(plan.stages)} stages (gamma_s, Delta S_s as exported). The rows are "
             "scaled to norm 1; all the plan's data train, so accuracy is on the training data.",
             f"The run's epsilon is its busiest edge's uploads composed as the plan composed them (optimal "
             f"composition at delta = {delta:.4g}), for the paper's neighbouring mini-batches; the plan's is "
             f"{privacy['epsilon']:.6g} of a budget {privacy['target_epsilon']:g}.",
             f"Theorem 4 (li Eq. (14), L293) with this run's constants: L = {smoothness:.4g}, sigma <= {sigma:.4g}, "
             f"F0 <= f(0) = {gap:.4g} (the plan assumed the paper's L = {plan.inputs['smoothness']:g}, sigma = "
             f"{plan.inputs['sigma']:g}, F0 = {plan.inputs['initial_gap']:g}) and the plan's tau_max = {tau}; round "
             f"robin's staleness is K - 1 = {edges - 1}.")
    return ValidationReport(algorithm="mapa-plan", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            notes=notes, hypotheses=(*plan.hypotheses, staleness))


def validate_schedule(*, schedule: Schedule, dataset: Dataset, clients: int, seeds, progress=None,
                      **options) -> ValidationReport:
    """The validation of ``schedule`` by the engine of its recipe (:func:`engine_of`); ``options`` (clipping_norm,
    learning_rate, decay, step_rule) go to the van Dijk engine, the clipping norm alone to DP-SCD's, the learning rate
    alone to A(DP)²SGD's (fedsgd-dpc and mapa run their plan's)."""
    engine = engine_of(schedule)
    if engine == "increasing-sizes":
        return validate_vandijk_schedule(schedule=schedule, dataset=dataset, clients=clients, seeds=seeds,
                                         progress=progress, **options)
    if engine == "dpscd":
        return validate_dpscd_schedule(schedule=schedule, dataset=dataset, seeds=seeds, progress=progress,
                                       clipping_norm=options["clipping_norm"])
    if engine == "adp2sgd":
        return validate_adp2sgd_schedule(schedule=schedule, dataset=dataset, clients=clients, seeds=seeds,
                                         progress=progress, learning_rate=options["learning_rate"])
    if engine == "mapa":
        return validate_mapa_schedule(schedule=schedule, dataset=dataset, clients=clients, seeds=seeds,
                                      progress=progress)
    return validate_fedsgd_dpc_schedule(schedule=schedule, dataset=dataset, clients=clients, seeds=seeds,
                                        progress=progress)
