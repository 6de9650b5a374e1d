"""Check a plan by simulation: run R seeds and compare what happened with what the bounds predicted.

Every claim is a :class:`Claim` (simulated value, predicted value, relation, verdict, source): PASS, FAIL, NO
GUARANTEE (a hypothesis of the theorem behind the prediction fails: the bound proves nothing, whichever side the
simulation fell) or NOT ACCOUNTED; only PASS counts as passed. The report also carries a plot-ready table
(one row per round and quantity: simulated mean and quantiles over the seeds next to the prediction). Three
validations:

* :func:`validate_vandijk_plan`: a :class:`planner.vandijk.VanDijkPlan` (with step sizes) run on data split
  into clients of the plan's N_c: the ε spent by the executed schedule against the planned tight ε and the
  paper's claimed ε. The plan's theorems (3, 4/6) are privacy theorems; a convergence rate would come from
  Lemma 3, whose hypotheses are checked on the run (the empirical delays τ̂(t) against its envelope
  √(t/ln t·(1 − 1/ln t)); t ≥ T_0, which cannot be evaluated): that claim is NO GUARANTEE, naming them.
  A validation executes the sampling its plan accounted: the plan's tight ε is the Poisson-subsampled
  Gaussian's, so the engine runs ``sampling="poisson"``. Asked for ``sampling="with_replacement"`` (the
  paper's Algorithm 1), the spent ε is compared with the with-replacement ε of the same schedule
  (``bounds.accounting``, N = N_c); where the accountant refuses, the claim is "not accounted" (never PASS).
* :func:`validate_theorem5`: van Dijk's Theorem 5 recipe (s_i = Θ(i/ln i), its η̄_i and τ(t), the exact wait
  rule): E‖w_T − w*‖² against the Theorem 5 bound (and the lower bound N/(2μ²t) for reference) and
  τ̂(t) ≤ τ(t) (Theorem 1 / Definition 1).
* :func:`validate_fedsgd_dpc`: Zhou et al.'s FedSGD-DPC with constants estimated on the same split:
  E‖θ_T − θ*‖² against U(T, b) (Theorem 3/4; the per-round curve is the theorem's bound at t with the
  noise of the horizon T), and the spent ε against the per-client target.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from fedplan.bounds import accounting
from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.bounds import vandijk_sequences as sequences
from fedplan.bounds.theorem import Hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.estimate import estimate_constants
from fedplan.planner.fedsgd_dpc import plan_fedsgd_dpc
from fedplan.planner.simulate.data import Dataset
from fedplan.planner.simulate.fedsgd_dpc import run_fedsgd_dpc
from fedplan.planner.simulate.problem import Problem, make_problem
from fedplan.planner.simulate.records import SimulationResult, _accountant_for, merge_releases, sampling_description
from fedplan.planner.simulate.vandijk import SAMPLINGS as VANDIJK_SAMPLINGS
from fedplan.planner.simulate.vandijk import inputs_from_schedule, run_vandijk

__all__ = ["Claim", "ValidationReport", "validate_fedsgd_dpc", "validate_theorem5", "validate_vandijk_plan"]

QUANTILES = (0.1, 0.5, 0.9)


@dataclass(frozen=True)
class Claim:
    """One prediction checked against the simulation: ``simulated <relation> predicted``.

    ``not_accounted`` holds the reason when an ε of the claim could not be accounted (the accountant refused
    the executed sampling): such a claim is neither PASS nor a number, and never passes. ``failing_hypotheses``
    names the hypotheses (``name: numbers``) of the theorem behind ``predicted`` that fail: the theorem then
    guarantees nothing, so the claim is NO GUARANTEE, whichever side of the bound the simulation fell (the
    detail keeps the numbers), and never passes.
    """

    name: str
    simulated: float | None
    predicted: float | None
    relation: str
    passed: bool
    detail: str
    source: str
    not_accounted: str | None = None
    failing_hypotheses: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL``, ``NO GUARANTEE`` (a hypothesis of the bound's theorem fails) or ``NOT ACCOUNTED``."""
        if self.not_accounted is not None:
            return "NOT ACCOUNTED"
        if self.failing_hypotheses:
            return "NO GUARANTEE"
        return "PASS" if self.passed else "FAIL"

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "failing_hypotheses": list(self.failing_hypotheses),
                "verdict": self.verdict}


#: Relative floating-point slack of a spent-ε claim: a budget split into R equal replies and composed back sums to
#: the target only up to rounding (20 Laplace replies of ε/20 at ε = 1 sum to 1.0000000000000002).
COMPOSITION_ROUNDING = 1e-12


def _claim(name: str, simulated, predicted, relation: str, source: str, detail: str = "", *,
           hypotheses=(), slack: float = 0.0) -> Claim:
    """``simulated <relation> predicted`` (``<=`` up to ``slack``); ``hypotheses`` are those of the theorem behind
    ``predicted``: one that fails makes the claim NO GUARANTEE (not passed), with the failing hypotheses and their
    numbers in the detail."""
    failing = tuple(f"{h.name}: {h.detail}" for h in hypotheses if not h.holds)
    caveat = f"no guarantee, failing hypotheses: {'; '.join(failing)}" if failing else ""
    if simulated is None or predicted is None:
        text = "; ".join(part for part in (detail or "not available", caveat) if part)
        return Claim(name, simulated, predicted, relation, False, text, source, failing_hypotheses=failing)
    holds = {"<=": simulated <= predicted + slack, ">=": simulated >= predicted,
             "==": simulated == predicted}[relation]
    rounding = (f"equal up to floating-point rounding ({simulated!r} vs {predicted!r})"
                if predicted < simulated <= predicted + slack else "")
    text = "; ".join(part for part in (f"{simulated:.6g} {relation} {predicted:.6g}", rounding, detail, caveat)
                     if part)
    return Claim(name, float(simulated), float(predicted), relation, bool(holds) and not failing, text, source,
                 failing_hypotheses=failing)


def _not_accounted(run: SimulationResult) -> str | None:
    """The ledger's reason when it could not account the executed sampling (its ε is then None), else None."""
    return run.privacy.get("not_accounted") if run.epsilon is None else None


def _spent_claim(name: str, runs, predicted, source: str, detail: str = "", *,
                 predicted_not_accounted: str | None = None, hypotheses=()) -> Claim:
    """The worst spent ε over ``runs`` against ``predicted`` (``<=``).

    A run whose ledger could not account its sampling, or a prediction the accountant refused
    (``predicted_not_accounted``), gives a "not accounted" claim with the reason: not PASS, no number invented.
    A run without noise (ε None, not DP) fails with its ledger's statement. ``hypotheses`` are those of the
    theorem behind ``predicted`` (a paper's claimed ε), as in :func:`_claim`.
    """
    reasons = [reason for reason in map(_not_accounted, runs) if reason is not None]
    if reasons or predicted_not_accounted is not None:
        reason = (f"spent: {reasons[0]}" if reasons else f"predicted: {predicted_not_accounted}")
        spent = None if reasons else max(run.epsilon for run in runs if run.epsilon is not None)
        text = f"not accounted: {reason}" + (f"; {detail}" if detail else "")
        return Claim(name, spent, None if predicted is None else float(predicted), "<=", False, text, source,
                     not_accounted=reason)
    missing = [run for run in runs if run.epsilon is None]
    if missing:
        return _claim(name, None, predicted, "<=", source, missing[0].privacy.get("statement", "not available"),
                      hypotheses=hypotheses)
    return _claim(name, max(run.epsilon for run in runs), predicted, "<=", source, detail, hypotheses=hypotheses,
                  slack=COMPOSITION_ROUNDING * abs(predicted) if predicted is not None else 0.0)


@dataclass(frozen=True)
class ValidationReport:
    """Claims with their verdicts, a plot-ready table and the runs behind them.

    The report passes only when every claim is PASS: a claim whose theorem's hypotheses fail (NO GUARANTEE) or
    whose ε could not be accounted (NOT ACCOUNTED) is not counted as passed; ``verdicts`` counts each kind.
    """

    algorithm: str
    seeds: tuple[int, ...]
    claims: tuple[Claim, ...]
    table: tuple[dict, ...]
    runs: tuple[SimulationResult, ...]
    notes: tuple[str, ...] = ()
    hypotheses: tuple[Hypothesis, ...] = ()

    @property
    def passed(self) -> bool:
        return all(claim.verdict == "PASS" for claim in self.claims)

    @property
    def verdicts(self) -> dict[str, int]:
        """How many claims have each verdict (PASS, FAIL, NO GUARANTEE, NOT ACCOUNTED), in the claims' order."""
        counts: dict[str, int] = {}
        for claim in self.claims:
            counts[claim.verdict] = counts.get(claim.verdict, 0) + 1
        return counts

    def statement(self) -> str:
        """One line per claim (its verdict, the numbers, the source), then the notes."""
        lines = [f"{claim.verdict}  {claim.name}: {claim.detail} ({claim.source})" for claim in self.claims]
        return "\n".join(lines + list(self.notes))

    def summary(self, *, full: bool) -> dict:
        """The CLI answer: everything (``full``, for ``--json``) or passed, the verdicts, seeds and the statement."""
        if not full:
            return {"passed": self.passed, "verdicts": self.verdicts, "seeds": list(self.seeds),
                    "statement": self.statement()}
        return {**self.to_dict(), "statement": self.statement()}

    def to_dict(self) -> dict:
        return {"algorithm": self.algorithm, "seeds": list(self.seeds), "passed": self.passed,
                "verdicts": self.verdicts, "claims": [claim.to_dict() for claim in self.claims],
                "table": list(self.table), "notes": list(self.notes),
                "hypotheses": [h.to_dict() for h in self.hypotheses],
                "runs": [run.to_dict(with_records=False) for run in self.runs]}


def _seeds(seeds) -> tuple[int, ...]:
    values = tuple(check_int(f"seeds[{i}]", seed, low=0) for i, seed in enumerate(seeds))
    if not values:
        raise ValueError("seeds must hold at least one seed")
    return values


def _curve_rows(runs, quantity: str, predicted, *, clock=None) -> list[dict]:
    """Per round: mean and quantiles of ``quantity`` over the runs, next to ``predicted(round)``."""
    columns = np.array([run.column(quantity) for run in runs])
    rows = []
    for index in range(columns.shape[1]):
        values = columns[:, index]
        if not np.all(np.isfinite(values)):
            continue
        row = {"round": index, "quantity": quantity, "mean": float(values.mean())}
        row.update({f"q{int(100 * level)}": float(np.quantile(values, level)) for level in QUANTILES})
        if clock is not None:
            row["t"] = int(clock[index])
        row["predicted"] = None if predicted is None else predicted(index)
        rows.append(row)
    return rows


def _mean_final(runs, key: str) -> float | None:
    values = [run.final.get(key) for run in runs]
    return None if any(value is None for value in values) else float(np.mean(values))


def _split_at_size(dataset: Dataset, clients: int, client_size: int, seed: int, **options) -> tuple[Problem, str]:
    """Clients of exactly ``client_size`` examples when the data allow, else an iid split (and a note)."""
    if clients * client_size <= dataset.X_train.shape[0]:
        return make_problem(dataset=dataset, clients=clients, seed=seed, scheme="sizes",
                            sizes=[client_size] * clients, **options), ""
    problem = make_problem(dataset=dataset, clients=clients, seed=seed, **options)
    return problem, (f"the data hold fewer than {clients} x {client_size} training examples: clients have "
                     f"{min(problem.client_sizes)}..{max(problem.client_sizes)} examples, so the spent epsilon "
                     "is computed with these sizes")


def _each_seed(seeds: tuple[int, ...], run, on_run) -> tuple[SimulationResult, ...]:
    """``run(seed)`` for every seed in order, calling ``on_run(done, total)`` after each (for progress bars)."""
    runs = []
    for seed in seeds:
        runs.append(run(seed))
        if on_run is not None:
            on_run(len(runs), len(seeds))
    return tuple(runs)


def validate_vandijk_plan(*, plan, dataset: Dataset, clients: int, clipping_norm: float, seeds=(0, 1, 2),
                          accountant: str = "rdp", sampling: str = "poisson", on_run=None,
                          **run_options) -> ValidationReport:
    """Run a van Dijk plan (it must carry step sizes: ``plan_vandijk(..., learning_rate=...)``) on R seeds.

    The runs execute the sampling the plan accounted: ``sampling="poisson"`` (default), so the spent ε is
    compared with the plan's tight ε (Poisson-subsampled Gaussian, RDP or PLD as ``accountant``).
    ``sampling="with_replacement"`` runs the paper's Algorithm 1 (s_{i,c} uniform draws from the N_c records)
    and compares its ledger with the with-replacement ε of the same schedule (``bounds.accounting``,
    ``dataset_size=N_c``; PLD, as there is no RDP bound); an ε the accountant refuses makes the claim
    "not accounted". ``on_run(done, total)``, if given, is called after each seed's run.
    """

    seeds = _seeds(seeds)
    sampling = check_choice("sampling", sampling, VANDIJK_SAMPLINGS)
    if plan.step_sizes is None:
        raise ValueError("the plan has no step sizes: plan it with learning_rate (and decay) to simulate it")
    selection = plan.selection
    problem, note = _split_at_size(dataset, clients, selection.client_size, seeds[0], with_optimum=False)
    inputs = inputs_from_schedule(plan.schedule(), problem.client_sizes)
    runs = _each_seed(seeds, lambda seed: run_vandijk(problem=problem, **inputs, clipping_norm=clipping_norm, seed=seed,
                                                      delta=selection.delta, accountant=accountant, sampling=sampling,
                                                      **run_options),
                      on_run)
    planned, refused, used = _planned_epsilon(plan, accountant, sampling)
    accounted = f"{sampling} sampling executed and accounted"
    claims = [
        _spent_claim("spent epsilon <= planned tight epsilon", runs, planned,
                     "bounds.accounting on the executed schedule vs the plan's",
                     f"both at delta = {selection.delta:.4g}, {used.upper()}, {accounted}",
                     predicted_not_accounted=refused),
        _spent_claim("spent epsilon <= the paper's claimed epsilon", runs, selection.epsilon,
                     selection.source, accounted, hypotheses=selection.hypotheses),
    ]
    claims.append(_lemma3_claim(runs, selection.sizes, clients))
    table = _curve_rows(runs, "accuracy", None) + _curve_rows(runs, "loss", None) + _delay_rows(runs[0])
    executed = (f"executed sampling: {sampling_description(sampling)}, N_c = {selection.client_size}; "
                + ("the plan's tight epsilon assumes this sampling (Poisson, q_i = s_i/N_c)" if sampling == "poisson"
                   else "compared with the with_replacement epsilon of the plan's schedule (the plan's own tight "
                        "epsilon assumes Poisson sampling)"))
    return ValidationReport(algorithm="vandijk", seeds=seeds, claims=tuple(claims), table=tuple(table), runs=runs,
                            notes=tuple(n for n in (executed, note) if n), hypotheses=tuple(selection.hypotheses))


def _planned_epsilon(plan, accountant: str, sampling: str) -> tuple[float | None, str | None, str]:
    """(planned ε, reason it is not accounted or None, accountant used) of the plan's schedule under ``sampling``.

    Poisson: the plan's own tight ε (RDP, or PLD when asked and computed). with_replacement: the same
    schedule (q_i = s_i/N_c, σ) accounted with ``sampling="with_replacement"``, N = N_c, by the accountant the
    run's ledger uses (PLD where RDP is asked: no RDP bound exists).
    """
    if sampling == "poisson":
        tight = plan.tight_rdp if accountant == "rdp" else (plan.tight_pld or plan.tight_rdp)
        return tight.epsilon, None, tight.accountant
    selection = plan.selection
    relation = "add_or_remove_one"
    segments = merge_releases([(row["sample_rate"], row["noise_multiplier"]) for row in plan.rows()])
    try:
        used, _ = _accountant_for(sampling, relation, accountant)
        answer = accounting.get_epsilon(segments=segments, delta=selection.delta, accountant=used, sampling=sampling,
                                        neighboring_relation=relation, dataset_size=selection.client_size)
    except ValueError as error:
        return None, str(error), accountant
    return answer.epsilon, None, answer.accountant


def _delay_rows(run: SimulationResult) -> list[dict]:
    rows = []
    for row in run.delay_quantiles:
        envelope = sequences.delay_envelope(t=row["t"]) if row["t"] > math.e else None
        rows.append({"quantity": "delay", **row, "envelope": envelope})
    return rows


#: Lemma 3's t ≥ T_0: T_0 = exp[2√Δ(1 + (L + μ)α/μ)] needs Leblond et al.'s sparsity Δ, which the paper never
#: defines (vandijk L715, erratum I-13), so no finite run can be shown to satisfy it.
T0_HYPOTHESIS = Hypothesis("t >= T_0", False, "T_0 = exp[2 sqrt(Delta) (1 + (L + mu) alpha/mu)] cannot be evaluated: "
                           "the sparsity Delta is never defined (erratum I-13)", "vandijk L715")


def delay_hypothesis(runs, sizes, clients: int) -> Hypothesis:
    """Lemma 3's delay hypothesis τ(t) ≤ √(t/ln t·(1 − 1/ln t)) (vandijk Lemma 3, L725; (14) L707) checked on the
    runs: each logged bin's largest delay τ̂ against the envelope at the bin's last t > e; the detail names the
    worst bin and the plan's per-client sizes s_i that make the delays (a round's computations of all clients)."""
    worst = max(((row["tau_hat_q100"] - sequences.delay_envelope(t=row["t"]), row) for run in runs
                 for row in run.delay_quantiles if row["t"] > math.e), key=lambda item: item[0], default=None)
    name = "tau_hat(t) <= sqrt(t/ln t (1 - 1/ln t)) for every logged t > e"
    source = "vandijk Lemma 3, L725, (14) L707"
    if worst is None:
        return Hypothesis(name, False, "no delay was logged after t = e", source)
    excess, row = worst
    envelope = sequences.delay_envelope(t=row["t"])
    holds = excess <= 0
    detail = (f"largest tau_hat = {row['tau_hat_q100']:.6g} at t = {row['t']} against {envelope:.4g}"
              + ("" if holds else f": {clients} client(s) compute s_i = {min(sizes)}..{max(sizes)} gradients each "
                 "per round and a delay spans rounds of all clients' computations, while the envelope grows as "
                 "sqrt(t/ln t)"))
    return Hypothesis(name, bool(holds), detail, source)


def _lemma3_claim(runs, sizes, clients: int) -> Claim:
    """Convergence at Lemma 3's rate (vandijk L725): no number and no guarantee here, with the hypotheses that the
    run violates (:func:`delay_hypothesis`) or that cannot be checked (:data:`T0_HYPOTHESIS`) named."""
    return _claim("E||w_t - w*||^2 <= Lemma 3's rate", None, None, "<=", "vandijk Lemma 3, L725",
                  "the plan's theorems bound privacy only; Lemma 3 is the paper's convergence rate for delays "
                  "within its envelope", hypotheses=(delay_hypothesis(runs, sizes, clients), T0_HYPOTHESIS))


def validate_theorem5(*, dataset: Dataset, clients: int, rounds: int, d: int = 1, m: int | None = None,
                      alpha: float = 36.0, seeds=(0, 1, 2), **run_options) -> ValidationReport:
    """van Dijk's Theorem 5 recipe on R seeds: E‖w_T − w*‖² vs the Theorem 5 bound, τ̂ vs τ.

    The global sizes s_i of Theorem 5 are split as s_{i,c} = ⌈s_i/n⌉; the round step sizes, M_0, M_1 and
    τ(t) are Theorem 5's with μ, L of the problem (L = max‖x‖²/4 + ρ for logistic); N = 2 mean‖∇f(w*; ξ)‖².
    """

    seeds = _seeds(seeds)
    rounds = check_int("rounds", rounds, low=1)
    problem = make_problem(dataset=dataset, clients=clients, seed=seeds[0])
    X, y = dataset.X_train, dataset.y_train
    mu, L = problem.model.strong_convexity(X), problem.model.smoothness(X)
    m = m if m is not None else sequences.smallest_offset_for_first_size(d=d, target=2 * clients)
    steps = sequences.theorem5_round_step_sizes(mu=mu, d=d, m=m, L=L, alpha=check_real("alpha", alpha, low=0.0,
                                                                                         low_open=True),
                                                 rounds=rounds)
    global_sizes = sequences.theorem5_sequence(d=d, m=m, rounds=rounds)
    sizes = -(-global_sizes // clients)
    M0, M1 = sequences.theorem5_M0(m=m), sequences.theorem5_M1(d=d, L=L, alpha=alpha, mu=mu, m=m)

    def tau(t):
        return sequences.theorem5_tau(t=t, M0=M0, M1=M1)

    runs = tuple(run_vandijk(problem=problem, sizes=sizes, step_sizes=np.asarray(steps.step_sizes),
                             wait_rule="exact", tau=tau, seed=seed, **run_options) for seed in seeds)
    noise = problem.model.gradient_noise_at_optimum(X, y, problem.w_star)
    clock = np.cumsum(sizes * clients)
    total = int(clock[-1])
    bound = sequences.theorem5_rate_bound(t=total, N=noise, mu=mu, M0=M0, M1=M1)
    violations = sum(run.delays["violations"] for run in runs)
    claims = (
        _claim("E||w_T - w*||^2 <= Theorem 5 bound", _mean_final(runs, "dist_sq"), bound.value, "<=", bound.source,
               f"mean over {len(seeds)} seeds at t = {total}", hypotheses=bound.hypotheses + steps.hypotheses),
        _claim("computations with tau_hat(t) > tau(t)", float(violations), 0.0, "<=",
               "vandijk Theorem 1, Definition 1 (L73, L127)", "exact wait rule"),
    )

    def predicted(index: int) -> float:
        t = float(clock[index])
        return sequences.theorem5_rate_bound(t=t, N=noise, mu=mu, M0=M0, M1=M1).value

    table = _curve_rows(runs, "dist_sq", predicted, clock=clock)
    for row in table:
        row["lower_bound"] = sequences.lower_bound_rate(t=row["t"], N=noise, mu=mu)
    table += _delay_rows(runs[0])
    return ValidationReport(algorithm="vandijk-theorem5", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            hypotheses=tuple(bound.hypotheses) + tuple(steps.hypotheses),
                            notes=(f"m = {m}, d = {d}, s_i = {global_sizes[0]}..{global_sizes[-1]}, "
                                   f"mu = {mu:.4g}, L = {L:.4g}, N = {noise:.4g}",))


def validate_fedsgd_dpc(*, dataset: Dataset, clients: int, mechanism: str, epsilon: float,
                        clipping_norm: float | None = None, delta: float = 1e-5, sample_rate: float = 0.5,
                        rounds: int | None = None, clients_per_round: int | None = None, max_rounds: int = 200,
                        selection: str = "round_robin", seeds=(0, 1, 2), accountant: str = "rdp", on_run=None,
                        **run_options) -> ValidationReport:
    """Zhou et al.'s FedSGD-DPC on R seeds: E‖θ_T − θ*‖² vs U(T, b), spent ε vs the per-client target.

    The constants (μ, λ, G, Γ, Y₀, ξ₁, ξ₂, Λ_i) are estimated on the same split
    (:func:`planner.estimate.estimate_constants`); without ``rounds``/``clients_per_round`` the planner's
    optimum (T*, b*) is used. The clipping norm defaults to the estimated ξ₁ (Laplace) or ξ₂ (Gaussian),
    so that clipping does not bind at the points where the constants were measured. ``on_run(done, total)``,
    if given, is called after each seed's run.
    """

    seeds = _seeds(seeds)
    problem = make_problem(dataset=dataset, clients=clients, seed=seeds[0], with_optimum=False)
    constants = estimate_constants(X=dataset.X_train, y=dataset.y_train, model=problem.model.kind,
                                   regularization=problem.model.rho, client_indices=problem.indices)
    problem = dataclasses.replace(problem, w_star=np.array(constants.theta_star))
    zproblem = zhou.Problem(**constants.fedsgd_problem_kwargs())
    clip = clipping_norm if clipping_norm is not None else (constants.xi1 if mechanism == "laplace"
                                                            else constants.xi2)
    rate = sample_rate if mechanism == "gaussian" else 1.0
    notes = []
    if rounds is None or clients_per_round is None:
        plan = plan_fedsgd_dpc(problem=zproblem, mechanism=mechanism, epsilon=epsilon, clipping_norm=clip,
                               delta=delta if mechanism == "gaussian" else None,
                               sample_rate=rate if mechanism == "gaussian" else None, max_rounds=max_rounds,
                               accountant=accountant)
        if not plan.choice.rounds and rounds is None:
            raise ValueError(f"rounds must be given at target_epsilon = {epsilon:g}: the planner's optimum is T = 0 "
                             "rounds (the noise term dominates U(T, b)); give rounds to simulate a run anyway, or "
                             "raise target_epsilon")
        rounds = rounds or int(plan.choice.rounds)
        clients_per_round = clients_per_round or int(plan.choice.clients_per_round)
        notes.append(f"planner optimum: T = {plan.choice.rounds}, b = {plan.choice.clients_per_round}")
    rounds = check_int("rounds", rounds, low=1)
    steps = [zhou.step_size(problem=zproblem, t=t) for t in range(rounds)]
    runs = _each_seed(seeds, lambda seed: run_fedsgd_dpc(
        problem=problem, rounds=rounds, clients_per_round=clients_per_round, step_sizes=steps, mechanism=mechanism,
        clipping_norm=clip, sample_rate=rate, epsilon=epsilon, delta=delta, selection=selection, seed=seed,
        accountant=accountant, **run_options), on_run)
    per_client = np.asarray(runs[0].config["noise_per_client"])
    sizes = np.asarray(problem.client_sizes, dtype=float)
    variances = 2.0 * per_client**2 if mechanism == "laplace" else (per_client * clip / (rate * sizes)) ** 2
    noise = zhou.aggregated_noise_variance(problem=zproblem, variances=variances, clients_per_round=clients_per_round)

    def bound_at(t: float):
        return zhou.bound_terms(problem=zproblem, rounds=t, clients_per_round=clients_per_round,
                                noise_variance=noise, sample_rate=rate)

    final_bound = bound_at(rounds)
    claims = (
        _claim("E||theta_T - theta*||^2 <= U(T, b)", _mean_final(runs, "dist_sq"), final_bound.total, "<=",
               final_bound.source, f"mean over {len(seeds)} seeds, T = {rounds}, b = {clients_per_round}",
               hypotheses=final_bound.hypotheses),
        _spent_claim("spent epsilon <= per-client target", runs, epsilon,
                     "bounds.accounting / basic composition on the replies made"),
    )
    table = _curve_rows(runs, "dist_sq", lambda index: bound_at(index + 1).total)
    return ValidationReport(algorithm="fedsgd-dpc", seeds=seeds, claims=claims, table=tuple(table), runs=runs,
                            notes=tuple(notes), hypotheses=tuple(final_bound.hypotheses))

