"""One ε-first entry point over every planning recipe, for the app's planner page.

A user states a privacy budget (ε, δ), a data set split over clients and a compute budget (passes
over the data); :func:`plan` runs one recipe and answers with the same :class:`RecipeResult` shape
whatever the paper: headline numbers (rounds, noise, aggregated noise, ε claimed by the paper's bound
and by the tight accountant), every hypothesis checked, a :class:`planner.export.Schedule` ready for
export, and the privacy statement behind the numbers. The recipes themselves live in their own
modules (:mod:`planner.vandijk`, :mod:`planner.fedsgd_dpc`, ...); this module only maps the common
request onto each one's inputs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import brentq

from fedplan.bounds import accounting, pld
from fedplan.bounds import adp2sgd as xu
from fedplan.bounds.composition import best_composition, optimal_composition_epsilon
from fedplan.bounds.fedsgd_dpc import Problem
from fedplan.bounds.references import cite
from fedplan.bounds.sampling import mechanism
from fedplan.bounds.theorem import Hypothesis, all_hold
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.adp2sgd import plan_adp2sgd
from fedplan.planner.display import accountant_label, number_text
from fedplan.planner.dpscd import plan_dpscd
from fedplan.planner.estimate import estimate_constants
from fedplan.planner.export import Schedule
from fedplan.planner.fedsgd_dpc import plan_fedsgd_dpc
from fedplan.planner.mapa import plan_mapa
from fedplan.planner.vandijk import claim_needs_noise, nearest_feasible, plan_vandijk, select_vandijk

#: How a plan chooses its noise: calibrated by the tight accountant for the sampling that runs (default), or the
#: paper's own rule (its bound's σ, its per-upload ε).
NOISE_CHOICES = ("tight", "paper")


@dataclass(frozen=True)
class RecipeInputs:
    """The common, ε-first question: budget, data, clients, compute and batch size.

    ``batch_size`` is van Dijk's initial sample size s₀ and every other recipe's mini-batch. ``noise`` picks the
    answer: ``"tight"`` calibrates σ (or the per-upload ε) so that the tight ε of what runs is within 1 % below
    the target; ``"paper"`` runs the paper's own σ. ``sampling`` (None: the recipe's own) is how records join a
    step in the run; the Gaussian recipes account it.
    """

    target_epsilon: float
    target_delta: float
    X: np.ndarray
    y: np.ndarray
    clients: int
    epochs: float
    batch_size: int = 16
    dataset: str = "data"
    noise: str = "tight"
    sampling: str | None = None

    def __post_init__(self) -> None:
        check_real("target_epsilon", self.target_epsilon, low=0.0, low_open=True)
        check_real("target_delta", self.target_delta, low=0.0, high=1.0, low_open=True, high_open=True)
        check_int("clients", self.clients, low=1, high=self.examples)
        check_real("epochs", self.epochs, low=0.0, low_open=True)
        check_int("batch_size", self.batch_size, low=1, high=self.client_size)
        check_choice("noise", self.noise, NOISE_CHOICES)

    @property
    def examples(self) -> int:
        return int(self.X.shape[0])

    @property
    def client_size(self) -> int:
        """Records per client, N_c = ⌊N / clients⌋ (the smallest share of an even split)."""
        return self.examples // self.clients


@dataclass(frozen=True)
class EpsilonCurve:
    """ε after ``rounds`` (rising; the last is the whole run) by the accountant of the headline ε, ``label``
    (:func:`~fedplan.planner.display.accountant_label`), over rounds counted as ``unit`` says (``axis``: their
    plural, a chart's axis title)."""

    rounds: tuple[int, ...]
    epsilons: tuple[float, ...]
    label: str
    unit: str = "round"
    axis: str = "rounds run"


@dataclass(frozen=True)
class RecipeResult:
    """A recipe's answer in the common shape the planner page shows; ``notes`` say in plain words what is unusual
    about it (a single round, a bound that promises nothing)."""

    recipe: str
    source: str
    headline: dict
    hypotheses: tuple[Hypothesis, ...]
    schedule: Schedule
    statement: str
    epsilon_curve: EpsilonCurve | None = None
    notes: tuple[str, ...] = ()

    @property
    def hypotheses_hold(self) -> bool:
        return all_hold(self.hypotheses)


#: A tight plan that leaves more than this share of the budget unused says why (σ at the end of its range).
UNUSED_NOTE = 0.01
#: Relative error allowed in the tight ε of the paper's σ, which is shown for comparison only.
COMPARISON_TOLERANCE = 5e-3


@dataclass(frozen=True)
class GaussianRun:
    """What a Gaussian recipe runs: phases ``(sample_rate, steps)``, and how records are sampled."""

    phases: tuple[tuple[float, int], ...]
    sampling: str
    neighboring_relation: str
    dataset_size: int
    unit: str = "example"

    def segments(self, noise_multiplier: float) -> list[tuple[float, float, int]]:
        return [(q, noise_multiplier, steps) for q, steps in self.phases]

    def model(self) -> dict:
        return {"sampling": self.sampling, "neighboring_relation": self.neighboring_relation,
                "dataset_size": self.dataset_size}


def _merged_phases(rates) -> tuple[tuple[float, int], ...]:
    return tuple((float(q), steps) for q, _, steps in accounting.merged_segments((rate, 1.0, 1) for rate in rates))


def tight_gaussian(run: GaussianRun, *, target_epsilon: float, target_delta: float, noise: str = "tight",
                   paper_noise_multiplier: float | None = None,
                   paper_claimed_epsilon: float | None = None) -> tuple[float, dict, dict]:
    """The noise multiplier to run, the headline fields that compare it with the paper's, and the privacy block.

    With ``noise="tight"`` σ is calibrated over the run's phases by the tight accountant for its sampling
    (ε ≤ target, computed and re-checked); with ``"paper"`` the paper's σ runs. Either way the tight ε of both σ
    is reported with the share of the budget each leaves unused.
    """
    target, delta = target_epsilon, target_delta
    # one time budget for the comparison and the calibration together: a with_replacement plan of 200 sample
    # sizes spent 9 s on the paper's σ and then 30 s more on its own calibration
    deadline = time.monotonic() + accounting.DEFAULT_TIME_BUDGET
    paper_tight = None
    if paper_noise_multiplier is not None:
        # a comparison, not a guarantee to run: an upper bound within 0.5 % of tight is enough (one PLD build)
        paper_tight = accounting.get_epsilon(delta=delta, segments=run.segments(paper_noise_multiplier),
                                             relative_tolerance=COMPARISON_TOLERANCE, **run.model())
    if noise == "paper":
        if paper_tight is None:
            raise ValueError("noise=paper: the paper's bound gives no noise multiplier for this target; use "
                             "noise=tight")
        sigma, spent = paper_noise_multiplier, paper_tight
    else:
        calibration = accounting.calibrate_noise_multiplier(target_epsilon=target, target_delta=delta,
                                                            phases=run.phases, **run.model(),
                                                            time_budget=max(1.0, deadline - time.monotonic()))
        sigma = calibration.value
        spent = accounting.get_epsilon(delta=delta, segments=run.segments(sigma), **run.model())
        while spent.epsilon > target:  # re-checked by the accountant `fedplan epsilon` runs (its own spacing)
            sigma = accounting.round_up(sigma * (1 + 1e-5), accounting.CALIBRATION_DIGITS)
            spent = accounting.get_epsilon(delta=delta, segments=run.segments(sigma), **run.model())
    fields = {
        "noise": noise, "noise_multiplier": sigma, "tight_epsilon": spent.epsilon,
        "tight_accountant": f"{spent.accountant} ({spent.bound}): {spent.source}",
        "epsilon_label": accountant_label(spent.accountant, spent.bound),
        "unused_budget": 1 - spent.epsilon / target, "sampling": run.sampling,
        "neighboring_relation": run.neighboring_relation, "guarantee": _GUARANTEE[run.unit],
        "paper_noise_multiplier": paper_noise_multiplier, "paper_claimed_epsilon": paper_claimed_epsilon,
        "paper_tight_epsilon": None if paper_tight is None else paper_tight.epsilon,
        "paper_unused_budget": None if paper_tight is None else 1 - paper_tight.epsilon / target,
    }
    if noise == "tight" and fields["unused_budget"] > UNUSED_NOTE:
        fields["note"] = _unused_note(fields["unused_budget"], sigma, calibration)
    privacy = {"mechanism": "gaussian", "unit": run.unit, **run.model(), "client_sample_rate": None,
               "delta": delta, "epsilon": spent.epsilon, "accountant": spent.accountant, "bound": spent.bound,
               "target_epsilon": target}
    return sigma, fields, privacy


def _unused_note(unused: float, sigma: float, calibration) -> str:
    """Why a calibrated σ leaves more than :data:`UNUSED_NOTE` of the budget unused, in plain words: the tight PLD
    calibration fell back to another accountant (its reason), σ is at the end of its range (the calibration's
    ``range_note``), or the tight ε jumps past the target just below σ."""
    share = f"The tight ε is {100 * unused:.1f} % below the target"
    if calibration.range_note:  # σ at the end of its range: no accountant would give a smaller one
        note = calibration.range_note
        return f"{share}: {note[0].lower() + note[1:] if note[1:2].islower() else note}"
    if calibration.fallback_reason:
        busy = (" Planning again when the server is less busy may give a smaller σ."
                if "time budget" in calibration.fallback_reason else "")
        return (f"{share}: σ = {sigma:g} is the {accountant_label(calibration.accountant, calibration.bound)} "
                f"calibration ({calibration.fallback_reason}).{busy}")
    return f"{share}: the tight ε jumps past the target just below σ = {sigma:g}, the smallest σ it certifies."


def _budget(request: RecipeInputs) -> dict:
    return {"target_epsilon": request.target_epsilon, "target_delta": request.target_delta, "noise": request.noise}


_GUARANTEE = {"example": "per example (record-level)", "client": "per client (user-level)",
              "batch": "per mini-batch (the paper's relation)"}


def _laplace_privacy(*, unit: str, relation: str, per_release: float, releases: int, delta: float, epsilon: float,
                     accountant: str, target: float) -> dict:
    return {"mechanism": "laplace", "unit": unit, "sampling": "none", "neighboring_relation": relation,
            "delta": delta, "epsilon": epsilon, "accountant": accountant, "bound": "tight",
            "target_epsilon": target, "epsilon_per_release": per_release, "releases": releases}


def _with_run(schedule: Schedule, sigma: float, privacy: dict, statement: str) -> Schedule:
    """The recipe's schedule with the noise multiplier that runs and its privacy block."""
    points = tuple((start, {**values, "noise_multiplier": sigma}) for start, values in schedule.change_points)
    return Schedule(rounds=schedule.rounds, change_points=points, metadata=schedule.metadata,
                    statement=statement, privacy=privacy)


def _run_statement(fields: dict, rounds: int) -> str:
    paper = ""
    if fields["paper_noise_multiplier"] is not None:
        paper = (f" The paper's own σ = {fields['paper_noise_multiplier']:.6g} has tight ε = "
                 f"{fields['paper_tight_epsilon']:.4g} and leaves {100 * fields['paper_unused_budget']:.1f} % of the "
                 "budget unused.")
    return (f"Run {rounds} rounds at noise multiplier σ = {fields['noise_multiplier']:.6g} ({fields['noise']}): "
            f"tight ε = {fields['tight_epsilon']:.6g} {fields['guarantee']}, sampling {fields['sampling']}, "
            f"{fields['neighboring_relation']} neighbours ({100 * fields['unused_budget']:.2f} % of the budget "
            f"unused).{paper}")


#: The σ range of the paper's loop "if 𝓑 is not acceptable, try a larger σ" (vandijk L211) in the planner's recipe.
VANDIJK_SIGMA_RANGE = (1.2, 200.0)


def _vandijk_selection(request: RecipeInputs, *, p: float = 1.0, variant: str = "corrected"):
    """The paper's parameter selection for the request (vandijk L211-219): the smallest σ in
    :data:`VANDIJK_SIGMA_RANGE` whose claimed δ at the target ε meets the target δ, r0 = 1/e; ``ValueError`` if none."""
    return select_vandijk(initial_size=request.batch_size, client_size=request.client_size,
                          epsilon=request.target_epsilon, epochs=request.epochs, sigma_range=VANDIJK_SIGMA_RANGE,
                          delta=request.target_delta, p=p, r0=1 / math.e, variant=variant)


def _no_increasing_schedule(request: RecipeInputs) -> str:
    """Why the increasing-sizes recipe has no plan, in the request's own fields (the page's boxes, the CLI's flags)."""
    low, high = VANDIJK_SIGMA_RANGE
    return (f"no increasing-sizes plan: no noise multiplier σ in [{low:g}, {high:g}] gives an increasing schedule "
            f"whose claimed δ is ≤ target_delta = {request.target_delta:g} at target_epsilon = "
            f"{request.target_epsilon:g} with batch_size = {request.batch_size} (the initial sample size s₀), "
            f"epochs = {request.epochs:g} and clients = {request.clients} ({request.client_size} records each) "
            f"({cite('vandijk', 'parameter selection', 'L211-219')}); lower batch_size, clients or epochs, raise "
            "target_epsilon, or choose another recipe")


#: Where the search for the nearest increasing-sizes plan goes along each input: (field, end, whole number); the
#: epochs end is a hundredth of the request's.
_NEAREST_ENDS = (("clients", 1, True), ("batch_size", 1, True), ("epochs", None, False),
                 ("target_epsilon", None, False))


def nearest_increasing_sizes(request: RecipeInputs, *, largest_epsilon: float,
                             time_budget: float = 4.0) -> dict[str, int | float]:
    """For a request with no increasing-sizes plan: the nearest value of each of clients, batch_size, epochs (down)
    and target_epsilon (up to ``largest_epsilon``) with one, the others held, by
    :func:`~fedplan.planner.vandijk.nearest_feasible` (3 significant digits, within ``time_budget`` seconds each).
    A value is taken where the paper's selection exists and its claim needs noise
    (:func:`~fedplan.planner.vandijk.claim_needs_noise`: a claim the schedule meets without noise has nothing to
    plan); an input with none in reach is left out."""
    found = {}
    for name, end, integer in _NEAREST_ENDS:
        start = getattr(request, name)
        end = {"epochs": start / 100, "target_epsilon": largest_epsilon}.get(name, end)
        if start == end:
            continue

        def select(value, name=name, integer=integer):
            return _vandijk_selection(replace(request, **{name: int(value) if integer else value}))

        def needs_noise(value, select=select):
            if not claim_needs_noise(select(value)):
                raise ValueError("the claim holds without noise")

        value = nearest_feasible(select, needs_noise, start=start, end=end, integer=integer, time_budget=time_budget)
        if value is not None and value != start:  # a refusal of another kind: this input is not the cause
            found[name] = int(value) if integer else value
    return found


def plan_increasing_sizes(request: RecipeInputs, *, p: float = 1.0, variant: str = "corrected") -> RecipeResult:
    """van Dijk et al.: the paper's sample sizes s_i (its σ: the smallest whose claimed δ at ε meets the target,
    r0 = 1/e, the paper's choice), run at the σ the tight accountant calibrates over those sizes (``noise="tight"``)
    or at the paper's σ. Each client samples its own N_c records; the guarantee is per example."""
    try:
        paper = _vandijk_selection(request, p=p, variant=variant)
    except ValueError:
        raise ValueError(_no_increasing_schedule(request)) from None
    plan = plan_vandijk(initial_size=request.batch_size, client_size=request.client_size,
                        epsilon=request.target_epsilon, epochs=request.epochs, sigma=paper.sigma, p=p, r0=1 / math.e,
                        variant=variant, with_pld=False)
    sel = plan.selection
    run = GaussianRun(phases=_merged_phases(size / sel.client_size for size in sel.sizes),
                      sampling=request.sampling or "poisson", neighboring_relation="add_or_remove_one",
                      dataset_size=sel.client_size)
    sigma, fields, privacy = tight_gaussian(run, **_budget(request), paper_noise_multiplier=sel.sigma,
                                            paper_claimed_epsilon=sel.epsilon)
    headline = {
        "rounds": plan.realised_rounds, **fields, "aggregated_noise": math.sqrt(plan.realised_rounds) * sigma,
        "claimed_epsilon": sel.epsilon, "claimed_delta": sel.delta,
        "first_sample_size": int(sel.sizes[0]), "last_sample_size": int(sel.sizes[-1]),
        "constant_size_rounds": sel.constant_rounds,
    }
    statement = f"{_run_statement(fields, plan.realised_rounds)} The paper: {plan.statement()}"
    return RecipeResult(recipe="increasing-sizes", source=sel.source, headline=headline, hypotheses=sel.hypotheses,
                        schedule=_with_run(plan.schedule(with_privacy=False), sigma, privacy, statement),
                        statement=statement, epsilon_curve=epsilon_curve(run, sigma, request))


#: Points of the ε-after-rounds curve of a one-phase run (each one PLD self-composition, ~0.1 s).
CURVE_POINTS = 8


def epsilon_curve(run: GaussianRun, sigma: float, request: RecipeInputs, *, unit: str = "round",
                  axis: str = "rounds run") -> EpsilonCurve | None:
    """ε after rounds of ``run`` at noise ``sigma`` by the very accountant, spacing and tolerance of the headline ε
    (:func:`tight_gaussian`, whose answer is memoised), so that the curve ends at the headline's number.

    A run of several phases gets ε after each phase (one PLD composition, prefix by prefix:
    :func:`~fedplan.bounds.accounting.epsilon_after_each_segment`); a one-phase run ε after :data:`CURVE_POINTS`
    evenly spaced rounds, a PLD answer at the headline's spacing (pessimistic: an upper bound at any spacing), an
    RDP or exact one by :func:`~fedplan.bounds.accounting.epsilon_curve`. None where the headline ε is 0 (no curve
    to draw)."""
    options = {"delta": request.target_delta, **run.model(),
               "relative_tolerance": COMPARISON_TOLERANCE if request.noise == "paper" else
               pld.DEFAULT_RELATIVE_TOLERANCE}
    segments = run.segments(sigma)
    if len(segments) > 1:
        whole, values = accounting.epsilon_after_each_segment(segments=segments, **options)
        rounds = np.cumsum([steps for _, _, steps in segments]).tolist()
    else:
        whole = accounting.get_epsilon(segments=segments, **options)
        (rate, _, total), = segments
        rounds = sorted({max(1, round(total * k / CURVE_POINTS)) for k in range(1, CURVE_POINTS + 1)})
        if whole.accountant == "pld":
            found = mechanism(run.sampling, run.neighboring_relation)
            values = [found.pld_epsilon([(rate, sigma, steps)], request.target_delta, whole.pld_spacing,
                                        run.dataset_size) for steps in rounds[:-1]]
        else:
            values = accounting.epsilon_curve(sample_rate=rate, noise_multiplier=sigma, steps=rounds[:-1],
                                              delta=request.target_delta, **run.model())
        values = [*values, whole.epsilon]
    if whole.epsilon == 0:
        return None
    return EpsilonCurve(rounds=tuple(int(r) for r in rounds), epsilons=tuple(float(v) for v in values),
                        label=accountant_label(whole.accountant, whole.bound), unit=unit, axis=axis)


def plan_fedsgd_dpc_recipe(request: RecipeInputs, *, regularization: float = 1e-3) -> RecipeResult:
    """Zhou et al.: T* and b* for per-client Laplace ε, constants estimated from the data (logistic model)."""
    check_int("clients", request.clients, low=2, high=request.examples)  # ω₀'s (N − b)/(N − 1) needs N ≥ 2 (zhou L298)
    constants = estimate_constants(X=request.X, y=request.y, model="logistic", regularization=regularization,
                                   clients=request.clients)
    plan = plan_fedsgd_dpc(problem=Problem(**constants.fedsgd_problem_kwargs()), mechanism="laplace",
                           epsilon=request.target_epsilon, clipping_norm=constants.xi1, constants=constants.to_dict())
    choice = plan.choice
    if not choice.rounds:
        raise ValueError(f"FedSGD-DPC's optimum is T* = 0 rounds at target_epsilon = {request.target_epsilon:g} over "
                         f"{request.clients} clients: the Laplace noise outweighs what any round gains (zhou Solution "
                         "3, L365); raise target_epsilon or use fewer clients")
    if request.sampling is not None:
        raise ValueError(f"sampling={request.sampling} does not apply to fedsgd-dpc: every Laplace reply uses the "
                         "client's full data (q = 1, zhou L250)")
    replies = math.ceil(choice.replies)
    per_reply = request.target_epsilon / replies
    headline = {
        "rounds": choice.rounds, "clients_per_round": choice.clients_per_round,
        "laplace_scale": plan.noise.get("scale"), "replies_per_client": choice.replies, "noise": request.noise,
        "claimed_epsilon": request.target_epsilon, "claimed_delta": 0.0,
        "paper_claimed_epsilon": request.target_epsilon,
        "tight_epsilon": request.target_epsilon, "unused_budget": 0.0, "paper_tight_epsilon": request.target_epsilon,
        "paper_unused_budget": 0.0, "guarantee": _GUARANTEE["example"], "sampling": "none (full local data, q = 1)",
        "neighboring_relation": "replace_one or add_or_remove_one",
        "tight_accountant": "pure ε (basic composition is exact at δ = 0): the paper's answer spends all of it",
        "epsilon_label": "pure ε, exact",
        "bound": choice.bound,
    }
    schedule = plan.schedule()
    schedule = Schedule(rounds=schedule.rounds, change_points=schedule.change_points, metadata=schedule.metadata,
                        statement=schedule.statement,
                        privacy=_laplace_privacy(unit="example", relation="add_or_remove_one", per_release=per_reply,
                                                 releases=replies, delta=0.0,
                                                 epsilon=request.target_epsilon, accountant="basic",
                                                 target=request.target_epsilon))
    return RecipeResult(recipe="fedsgd-dpc", source=choice.source, headline=headline, hypotheses=choice.hypotheses,
                        schedule=schedule, statement=plan.statement(),
                        notes=_zhou_notes(choice, request, constants.Y0))


def _zhou_notes(choice, request: RecipeInputs, initial_distance: float) -> tuple[str, ...]:
    """Plain words for a degenerate FedSGD-DPC optimum: a single round (T* = 1: each further round is one more
    Laplace reply per client, so each reply gets a smaller share of ε and more noise, zhou Theorem 3's ω₁ ∝ T², L298),
    and a bound U(T*, b*) that is not below the starting distance Y₀ = ‖θ₀ − θ*‖² (L254): no progress promised."""
    notes = []
    if choice.rounds == 1:
        notes.append(f"A single round: at ε = {number_text(request.target_epsilon)} over {request.clients} clients, "
                     "Zhou et al.'s bound is smallest when the clients reply once. Every further round is one more "
                     "noisy reply per client, so each reply gets a smaller share of ε and more noise, and that costs "
                     "more than the round gains. For more rounds, raise the privacy budget ε or use fewer clients.")
    if choice.bound >= initial_distance:
        notes.append(f"The bound after the run, E‖θ_T − θ*‖² ≤ {number_text(choice.bound, up=True)}, is not below the "
                     f"starting distance ‖θ₀ − θ*‖² = {number_text(initial_distance)} estimated from the data: the "
                     "paper promises no progress for this plan.")
    return tuple(notes)


def plan_dpscd_recipe(request: RecipeInputs) -> RecipeResult:
    """DP-SCD (Damaskinos ch. 6) over all N examples: the σ the tight accountant calibrates for the sampling that
    runs (``noise="tight"``) or the authors' MA128 σ (``"paper"``), each with the other beside it."""
    plan = plan_dpscd(target_epsilon=request.target_epsilon, target_delta=request.target_delta,
                      examples=request.examples, batch_size=request.batch_size, epochs=request.epochs,
                      accountant="ma128", compare=False)
    calibration = plan.calibration
    run = GaussianRun(phases=((calibration.sample_rate, calibration.steps),), sampling=request.sampling or "poisson",
                      neighboring_relation="add_or_remove_one", dataset_size=request.examples)
    sigma, fields, privacy = tight_gaussian(run, **_budget(request),
                                            paper_noise_multiplier=calibration.noise_multiplier,
                                            paper_claimed_epsilon=calibration.epsilon)
    headline = {
        "rounds": calibration.steps, **fields, "aggregated_noise": math.sqrt(calibration.steps) * sigma,
        "claimed_epsilon": calibration.epsilon, "claimed_delta": request.target_delta,
        "sample_rate": calibration.sample_rate, "batch_size": request.batch_size,
    }
    statement = f"{_run_statement(fields, calibration.steps)} The paper: {plan.statement()}"
    return RecipeResult(recipe="dpscd", source=calibration.source, headline=headline,
                        hypotheses=calibration.hypotheses,
                        schedule=_with_run(plan.schedule(with_privacy=False), sigma, privacy, statement),
                        statement=statement, epsilon_curve=epsilon_curve(run, sigma, request))


def _steps_for_epochs(request: RecipeInputs) -> int:
    """Iterations that process ``epochs`` passes over all N examples with one batch per iteration."""
    steps = math.floor(request.epochs * request.examples / request.batch_size)
    if steps < 1:
        raise ValueError(f"epochs = {request.epochs:g} over N = {request.examples} examples gives no full batch of "
                         f"{request.batch_size}; raise epochs or lower batch_size")
    return steps


def plan_adp2sgd_recipe(request: RecipeInputs) -> RecipeResult:
    """Xu et al. A(DP)²SGD: one worker per client, T = ⌊epochs·N/B⌋ iterations.

    What runs: each worker samples B of its n₍₁₎ records without replacement per update (``fixed_size``), for
    ⌈T/K⌉ updates, replace-one neighbours (the paper's relation); no credit is taken for the random choice of the
    worker. Noise: ``noise_multiplier`` is fedplan's (and Opacus's) σ = noise std / clipping norm on the *sum*
    of the batch's clipped gradients, i.e. 2z for Xu's z (noise 2Gz/B on the averaged gradient, xu L518); Xu's z
    is ``noise_to_sensitivity``. The paper's z is Theorem 2's when it certifies the target, else none.
    """
    setting = xu.Setting(workers=request.clients, examples_per_worker=request.client_size,
                         batch_size=request.batch_size, steps=_steps_for_epochs(request), delta=request.target_delta)
    paper = plan_adp2sgd(setting=setting, target_epsilon=request.target_epsilon, noise_source="auto")
    paper_sigma = 2 * paper.noise_to_sensitivity if paper.feasible else None
    run = GaussianRun(phases=((setting.batch_size / setting.smallest_dataset, setting.worker_steps),),
                      sampling=request.sampling or "fixed_size", neighboring_relation="replace_one",
                      dataset_size=setting.smallest_dataset)
    sigma, fields, privacy = tight_gaussian(run, **_budget(request), paper_noise_multiplier=paper_sigma,
                                            paper_claimed_epsilon=paper.certificate.epsilon if paper.feasible else None)
    headline = {
        "rounds": setting.steps, "worker_updates": setting.worker_steps, **fields,
        "noise_to_sensitivity": sigma / 2, "aggregated_noise": math.sqrt(setting.steps) * sigma,
        "claimed_epsilon": fields["paper_claimed_epsilon"], "claimed_delta": setting.delta,
        "paper_model_tight_epsilon": paper.tight.epsilon,
    }
    statement = (f"{_run_statement(fields, setting.steps)} noise_multiplier is noise std / clipping norm on the sum "
                 f"of a worker's B clipped gradients; Xu's z = noise_multiplier / 2 = {sigma / 2:.6g}. The paper: "
                 f"{paper.statement()}")
    worker_schedule = paper.schedule(with_privacy=False)  # one worker's updates, noise_multiplier = 2z
    points = tuple((start, {key: value for key, value in values.items() if key != "noise_std"} |
                    {"noise_to_sensitivity": sigma / 2}) for start, values in worker_schedule.change_points)
    worker_schedule = Schedule(rounds=worker_schedule.rounds, change_points=points,
                               metadata={**worker_schedule.metadata, "recipe": "adp2sgd"},
                               statement=worker_schedule.statement)
    return RecipeResult(recipe="adp2sgd", source=xu.SOURCE, headline=headline, hypotheses=tuple(paper.hypotheses),
                        schedule=_with_run(worker_schedule, sigma, privacy, statement), statement=statement,
                        epsilon_curve=epsilon_curve(run, sigma, request, unit="update of one worker",
                                                                  axis="updates of one worker"))


def _mapa_upload_epsilon(target_epsilon: float, uploads: int, delta: float, *, optimal: bool) -> float:
    """The largest per-upload ε whose per-edge total over ``uploads`` is ≤ the target: by the optimal composition
    (Kairouz et al.; ``optimal=True``) or by the best classical one (basic or advanced at δ; the paper's)."""
    def total(epsilon: float) -> float:
        if optimal:
            return optimal_composition_epsilon(epsilon=epsilon, count=uploads, delta=delta)
        return best_composition(epsilon=epsilon, delta=0.0, count=uploads, delta_slack=delta)[0]

    def excess(epsilon: float) -> float:
        return total(epsilon) - target_epsilon

    upper = target_epsilon / uploads * 2
    while excess(upper) < 0:  # basic composition can be the best, then the root is target/uploads exactly
        upper *= 2
    root = brentq(excess, target_epsilon / uploads / 2, upper, xtol=1e-15, rtol=1e-14)
    while excess(root) > 0:
        root = math.nextafter(root, 0.0)
    return root


def plan_mapa_recipe(request: RecipeInputs) -> RecipeResult:
    """Li et al. MAPA: one edge per client, T = ⌊epochs·N/b⌋ uploads, per-upload ε from the per-edge budget.

    The paper's privacy is per upload; ``noise="tight"`` takes the largest per-upload ε whose *optimal*
    composition over ⌈T/edges⌉ round-robin uploads is ≤ ε (less noise per upload), ``"paper"`` the largest whose
    classical total (basic or advanced) is. Both assume round-robin uploads: with edges of unequal speed the
    busiest edge uploads more than ⌈T/edges⌉ times (the simulation shows it) and its ε is larger. The relation is
    the paper's neighbouring mini-batches (unit "batch"). Paper settings otherwise (σ = 30, L = 10, θ = 0.5,
    τ = 5, Theorem 3 failure probability 1e-3), F₀ = 100 (the paper gives none), corrected noise model with the
    data's dimension.
    """
    if request.sampling is not None:
        raise ValueError(f"sampling={request.sampling} does not apply to mapa: its Laplace guarantee per upload "
                         "takes no credit for sampling")
    steps = _steps_for_epochs(request)
    uploads = math.ceil(steps / request.clients)
    delta = request.target_delta
    paper_upload = _mapa_upload_epsilon(request.target_epsilon, uploads, delta, optimal=False)
    tight_upload = _mapa_upload_epsilon(request.target_epsilon, uploads, delta, optimal=True)
    per_upload = tight_upload if request.noise == "tight" else paper_upload
    plan = plan_mapa(epsilon=per_upload, delta=1e-3, sigma=30.0, batch_size=request.batch_size, smoothness=10.0,
                     max_staleness=5, theta=0.5, iterations=steps, initial_gap=100.0, num_edges=request.clients,
                     noise_model="corrected", model_dim=int(request.X.shape[1]), delta_slack=delta)
    privacy = plan.result.privacy
    most = max(privacy.uploads_per_edge)
    spent = optimal_composition_epsilon(epsilon=per_upload, count=most, delta=delta)
    paper_spent = optimal_composition_epsilon(epsilon=paper_upload, count=most, delta=delta)
    headline = {
        "rounds": steps, "stages": len(plan.result.stages), "noise": request.noise, "per_upload_epsilon": per_upload,
        "paper_per_upload_epsilon": paper_upload, "claimed_epsilon": privacy.best_epsilon,
        "claimed_delta": privacy.best_delta, "tight_epsilon": spent,
        "unused_budget": 1 - spent / request.target_epsilon, "paper_tight_epsilon": paper_spent,
        "paper_unused_budget": 1 - paper_spent / request.target_epsilon,
        "paper_claimed_epsilon": request.target_epsilon,
        "guarantee": _GUARANTEE["batch"], "sampling": "none (Laplace per upload)",
        "neighboring_relation": "neighbouring mini-batches (the paper's)",
        "tight_accountant": (f"optimal composition (Kairouz et al.) of {most} uploads per edge, for neighbouring "
                             "mini-batches (the paper's relation; per record up to b times more, since batches are "
                             "drawn with replacement); assumes round-robin uploads (edges of equal speed)"),
        "epsilon_label": "optimal composition",
    }
    statement = (f"Per-upload ε = {per_upload:.6g} ({request.noise}): {most} uploads per edge compose to ε = "
                 f"{spent:.6g} at δ = {delta:g} (optimal composition), {100 * headline['unused_budget']:.2f} % of the "
                 f"budget unused; the paper's per-upload ε = {paper_upload:.6g} composes to {paper_spent:.6g} "
                 f"({100 * headline['paper_unused_budget']:.1f} % unused). {plan.statement()}")
    schedule = plan.schedule()
    schedule = Schedule(rounds=schedule.rounds, change_points=schedule.change_points,
                        metadata={**schedule.metadata, "recipe": "mapa"}, statement=statement,
                        privacy=_laplace_privacy(unit="batch", relation="replace_one", per_release=per_upload,
                                                 releases=most, delta=delta,
                                                 epsilon=spent, accountant="optimal", target=request.target_epsilon))
    return RecipeResult(recipe="mapa", source=plan.result.source, headline=headline,
                        hypotheses=tuple(plan.result.hypotheses), schedule=schedule, statement=statement)


#: Recipe name → (title, function of a RecipeInputs).
RECIPES: dict[str, tuple[str, Callable[[RecipeInputs], RecipeResult]]] = {
    "increasing-sizes": ("van Dijk et al.: increasing sample sizes", plan_increasing_sizes),
    "fedsgd-dpc": ("Zhou et al.: optimal T and b (FedSGD-DPC)", plan_fedsgd_dpc_recipe),
    "dpscd": ("Damaskinos: DP-SCD noise calibration", plan_dpscd_recipe),
    "adp2sgd": ("Xu et al.: A(DP)²SGD closed-form noise", plan_adp2sgd_recipe),
    "mapa": ("Li et al.: MAPA stage schedule", plan_mapa_recipe),
}


#: The fields of the ``fedplan plan`` request each recipe reads besides the budget ε and the data; the planner page
#: shows only these (DP-SCD plans over all N examples, so it has no clients; Zhou's pure-ε Laplace plan has no δ,
#: sampling or noise choice, and its T* and b* replace the compute budget and batch).
RECIPE_INPUTS: dict[str, tuple[str, ...]] = {
    "increasing-sizes": ("target_delta", "clients", "epochs", "batch_size", "noise", "sampling"),
    "fedsgd-dpc": ("clients",),
    "dpscd": ("target_delta", "epochs", "batch_size", "noise", "sampling"),
    "adp2sgd": ("target_delta", "clients", "epochs", "batch_size", "noise", "sampling"),
    "mapa": ("target_delta", "clients", "epochs", "batch_size", "noise"),
}


def plan(recipe: str, request: RecipeInputs) -> RecipeResult:
    """Run the named recipe (a key of :data:`RECIPES`) on the request."""
    if recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {sorted(RECIPES)}; got {recipe!r}")
    return RECIPES[recipe][1](request)
