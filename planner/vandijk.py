"""Plan a private federated run with van Dijk et al.'s increasing sample sizes, next to a tight accountant.

From (N_c, s_{0,c}, K or epochs, ε, σ or a σ range with a δ target, p) to the full per-round schedule
(s_{i,c}, q_i, η̄_i, σ), with:

* the paper's claim: (ε, δ) from the Theorem 4/6 factor (:func:`bounds.vandijk.select_parameters`);
* Theorem 3 evaluated directly on the realised sequence;
* the tight PLD and RDP ε of the very same realised schedule at the paper's δ (each round a
  Poisson-subsampled Gaussian with its own q_i, composed exactly);
* the constant-sample-size baseline (s_{0,c} per round, σ = 𝓑, ⌈K/s_{0,c}⌉ rounds) with the same numbers.

Privacy model of every number: Poisson sampling of each record with probability q_i per round,
add/remove-one neighbours, Gaussian noise N(0, σ²C²) added once per round to the sum of gradients
clipped to C (the paper's mechanism model, L845-851; its Algorithm 1 samples with replacement, which
these numbers do not cover).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fedplan.bounds import accounting
from fedplan.bounds.accounting import AccountingResult
from fedplan.bounds.validation import check_choice, check_real
from fedplan.planner.display import number_text, theorem_fields
from fedplan.planner.export import Schedule, package_versions
from fedplan.planner.schedule import with_gaussian_privacy

if TYPE_CHECKING:  # bounds.vandijk loads scipy.optimize: imported when a plan is made, so the CLI starts fast
    from fedplan.bounds import vandijk

STEP_RULES = ("inverse", "inverse-sqrt")
SAMPLING_NOTE = ("Poisson sampling with rate q_i = s_i/N_c per round (an idealisation: the paper's Algorithm 1 "
                 "samples s_i records with replacement)")
#: Grid points scanned over a σ range before bisecting (the budget 𝓑(σ) need not be monotone in σ).
SIGMA_SCAN_POINTS = 24
SIGMA_DIGITS = 4


#: The search for the nearest input with a plan (:func:`nearest_feasible`): its first step (of the log-distance
#: from the input), the precision of its bisection (log-distance) and the significant digits of its answer.
NEAREST_FIRST_STEP = 0.05
NEAREST_PRECISION = 1e-3
NEAREST_DIGITS = 3


class VacuousClaimError(ValueError):
    """The paper's bound claims a δ at which the schedule is (0, δ)-DP already: there is nothing to plan.

    ``reason`` says so in plain words (the message lists the inputs, for the command line).
    """

    def __init__(self, message: str, *, delta: float, epsilon: float):
        super().__init__(message)
        self.delta, self.epsilon = delta, epsilon

    def __reduce__(self):  # pickled whole: a page's plan computes in a child process and raises this in the server
        return functools.partial(VacuousClaimError, delta=self.delta, epsilon=self.epsilon), (str(self),)

    @property
    def reason(self) -> str:
        return (f"The paper's bound claims only δ = {number_text(self.delta, 3, up=True)} at ε = "
                f"{number_text(self.epsilon)}, a promise the schedule keeps even without noise: there is nothing to "
                f"plan.")


@dataclass(frozen=True)
class VanDijkPlan:
    """A van Dijk schedule with the paper's claim, direct Theorem 3 and tight accounting side by side."""

    selection: vandijk.Selection
    direct: vandijk.Theorem3Result
    tight_pld: AccountingResult | None
    tight_rdp: AccountingResult
    constant_pld: AccountingResult | None
    constant_rdp: AccountingResult
    matched_constant: dict
    step_sizes: tuple[float, ...] | None

    @property
    def realised_rounds(self) -> int:
        return len(self.selection.sizes)

    def rows(self) -> list[dict]:
        """One dict per round: sample size, sample rate, noise multiplier (and learning rate)."""
        sel = self.selection
        rows = []
        for index, size in enumerate(sel.sizes):
            row = {"sample_size": int(size), "sample_rate": size / sel.client_size, "noise_multiplier": sel.sigma}
            if self.step_sizes is not None:
                row["learning_rate"] = self.step_sizes[index]
            rows.append(row)
        return rows

    def headline(self) -> str:
        """The paper's numbers in its own terms (main text L221), with the realised rounds."""
        sel = self.selection
        return (f"{sel.variant} variant: T = {sel.rounds} rounds (realised {self.realised_rounds}), "
                f"s_i = ceil(N_c q (i+m)^p) with slope N_c q = {sel.slope:.5g}, m = {sel.m:.5g}; "
                f"budget B = {sel.budget:.4g}, so delta = {accounting.round_up(sel.delta, 4):.4g} at epsilon = "
                f"{sel.epsilon:g}; a constant size {sel.initial_size} needs {sel.constant_rounds} rounds; "
                f"aggregated noise sqrt(T) sigma = {sel.aggregated_noise:.0f} vs {sel.constant_aggregated_noise:.0f}.")

    def rounds_note(self) -> str:
        """Which rule gives the reported T and which the rounds run, in plain words (erratum I-21/I-33, L1539).

        The paper variant reports T = ⌈T_up⌉, T_up = ((p+1)K/(N_c q))^{1/(p+1)}, the rounds of N_c q i^p from i = 0;
        the schedule run, s_i = ⌈N_c q (i+m)^p⌉, starts at i + m and rounds each size up, so it reaches K sooner
        (Example 3: 195 against 183, L1669). The corrected variant reports the rounds run.
        """
        sel = self.selection
        run = self.realised_rounds
        counted = (f"the schedule s_i = ⌈N_c q (i+m)^p⌉ reaches K = {number_text(sel.grad_computations)} gradient "
                   f"computations after {run} round{'s' if run != 1 else ''}")
        if sel.rounds == run:
            return f"T = {run}: {counted}, and T counts the rounds run."
        return (f"The paper's T = {sel.rounds} is its estimate ⌈((p+1)K/(N_c q))^(1/(p+1))⌉ (L1539, erratum I-33), "
                f"which counts sizes N_c q i^p from i = 0. The schedule run starts at i + m with m = "
                f"{number_text(sel.m)} and rounds each size up, so {counted}; every accountant's ε is for those "
                f"{run} rounds. The paper's δ uses γ = m/T = {number_text(sel.gamma)} of its T; the rounds run have "
                f"m/T = {number_text(sel.m / run)}.")

    def statement(self) -> str:
        sel = self.selection
        tight = self.tight_pld or self.tight_rdp
        return (f"{self.headline()} {self.realised_rounds} rounds with sample sizes {sel.sizes[0]}..{sel.sizes[-1]} of "
                f"N_c = {sel.client_size} records and noise multiplier {sel.sigma:g}: the paper's bound "
                f"({sel.source}, variant {sel.variant}) claims (epsilon, delta) = ({sel.epsilon:g}, "
                f"{accounting.round_up(sel.delta, 4):g}); the tight {tight.accountant.upper()} accountant gives "
                f"epsilon = {accounting.round_up(tight.epsilon, 4):g} at the same delta. Assumes "
                f"{SAMPLING_NOTE}, add/remove-one neighbours, noise std = noise_multiplier x clipping norm added once "
                f"per round.")

    def schedule(self, *, with_privacy: bool = True) -> Schedule:
        """One row per round collapsed to change-points; ``with_privacy`` adds the tight accountant's privacy block
        (Poisson sampling at q_i = s_i/N_c, add/remove-one, at the paper's δ)."""
        sel = self.selection
        metadata = {
            "paper": "van Dijk et al., asynchronous FL with increasing sample sizes and DP",
            "variant": sel.variant, "case": sel.case, "p": sel.p, "client_size": sel.client_size,
            "grad_computations": sel.grad_computations, "q": sel.q, "m": sel.m, "gamma": sel.gamma,
            "epsilon_claimed": sel.epsilon, "delta": sel.delta, "budget": sel.budget,
            "tight_epsilon_pld": None if self.tight_pld is None else self.tight_pld.epsilon,
            "tight_epsilon_rdp": self.tight_rdp.epsilon,
            "neighboring_relation": "add_or_remove_one", "sampling": SAMPLING_NOTE,
            "cumulative_epsilon_csv": "the privacy block's accountant at the paper's delta, after each change-point",
            **theorem_fields(sel.hypotheses),
            "versions": package_versions(),
        }
        schedule = Schedule.from_rows(self.rows(), metadata=metadata, statement=self.statement())
        if not with_privacy:
            return schedule
        return with_gaussian_privacy(schedule, unit="example", sampling="poisson",
                                     neighboring_relation="add_or_remove_one", dataset_size=sel.client_size,
                                     delta=sel.delta)

    def summary(self) -> dict:
        """The JSON answer of ``fedplan vandijk select``."""
        sel = self.selection
        return {
            "variant": sel.variant, "case": sel.case, "sigma": sel.sigma, "epsilon": sel.epsilon, "p": sel.p,
            "r0": sel.r0, "r": sel.r, "q": sel.q, "slope": sel.slope, "m": sel.m, "rounds": sel.rounds,
            "realised_rounds": self.realised_rounds, "gamma": sel.gamma, "factor": sel.factor,
            "budget": sel.budget, "delta": sel.delta, "k_ratio": sel.k_ratio,
            "first_size": sel.sizes[0], "last_size": sel.sizes[-1],
            "aggregated_noise": sel.aggregated_noise,
            "constant_rounds": sel.constant_rounds, "constant_aggregated_noise": sel.constant_aggregated_noise,
            "theorem3_delta": self.direct.delta, "theorem3_branch": self.direct.branch,
            "tight_epsilon_pld": None if self.tight_pld is None else self.tight_pld.epsilon,
            "tight_epsilon_rdp": self.tight_rdp.epsilon,
            "constant_tight_epsilon_pld": None if self.constant_pld is None else self.constant_pld.epsilon,
            "constant_tight_epsilon_rdp": self.constant_rdp.epsilon,
            "matched_constant": self.matched_constant,
            "hypotheses": [h.to_dict() for h in sel.hypotheses],
            "hypotheses_hold": sel.valid, "notes": list(sel.notes),
            "passes": len(sel.passes),
            "neighboring_relation": "add_or_remove_one", "sampling": SAMPLING_NOTE,
            "statement": self.statement(),
        }


def parse_r0(text: str) -> float | str:
    """r0 as users type it: ``r0(sigma)`` or ``auto`` (the paper's function r0(σ)), ``1/e`` or a number in (0, 1/e].

    The number's range is checked where it is used (:func:`bounds.vandijk.select_parameters`, naming r0).
    """
    cleaned = text.strip().lower().replace(" ", "")
    if cleaned in ("r0(sigma)", "auto"):
        return "r0(sigma)"
    if cleaned == "1/e":
        return 1 / math.e
    try:
        return float(cleaned)
    except ValueError:
        raise ValueError(f"r0 must be 'r0(sigma)', '1/e' or a number in (0, 1/e]; got {text!r}") from None


def round_step_sizes(sizes, *, learning_rate: float, decay: float, rule: str) -> tuple[float, ...]:
    """η̄_i = η_t at t = Σ_{j<i} s_{j,c} with η_t = η0/(1+βt) or η0/(1+β√t) (Table 2 L1852-1857, L1910)."""
    learning_rate = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    decay = check_real("decay", decay, low=0.0)
    rule = check_choice("step_rule", rule, STEP_RULES)
    starts = np.concatenate(([0.0], np.cumsum(sizes, dtype=float)[:-1]))
    clock = starts if rule == "inverse" else np.sqrt(starts)
    with np.errstate(over="ignore"):  # β t past the largest float: η0/(1 + βt) is below 1e-300, and 0.0 here
        return tuple(float(v) for v in learning_rate / (1.0 + decay * clock))


def _tight(segments, delta: float, *, with_pld: bool, time_budget: float) -> tuple[AccountingResult | None,
                                                                                   AccountingResult]:
    rdp_result = accounting.get_epsilon(segments=segments, delta=delta, accountant="rdp")
    pld_result = (accounting.get_epsilon(segments=segments, delta=delta, accountant="pld", time_budget=time_budget)
                  if with_pld else None)
    return pld_result, rdp_result


def _runs(sizes, client_size: int, sigma: float) -> list[tuple[float, float, int]]:
    """Consecutive equal sizes merged into (q, σ, steps) segments."""
    return accounting.merged_segments((size / client_size, sigma, 1) for size in sizes)


def smallest_sigma(select: Callable[[float], vandijk.Selection], *, sigma_range: tuple[float, float],
                   target_delta: float) -> vandijk.Selection:
    """The selection at the smallest σ in ``sigma_range`` (to 4 digits) whose claimed δ is ≤ ``target_delta``.

    The paper's loop "if 𝓑 is not acceptable, try a larger σ" (L211). σ is scanned on a geometric
    grid, then bisected between the last failing and the first passing grid point; the returned
    selection's δ was computed and is ≤ the target.
    """
    low, high = (check_real("sigma_range", value, low=0.0, low_open=True) for value in sigma_range)
    if not low < high:
        raise ValueError(f"sigma_range must be (low, high) with low < high; got ({low:g}, {high:g})")
    grid = np.geomspace(low, high, SIGMA_SCAN_POINTS)
    meets = None
    failing = low
    for sigma in grid:
        try:
            candidate = select(float(sigma))
        except ValueError:
            failing = float(sigma)
            continue
        if candidate.delta <= target_delta:
            meets = candidate
            break
        failing = float(sigma)
    if meets is None:
        raise ValueError(f"no noise multiplier in [{low:g}, {high:g}] makes the paper's claim reach δ ≤ "
                         f"{target_delta:g}: raise the target ε, lower the compute (epochs or grad_computations) or "
                         "widen noise_multiplier_range (fedplan vandijk select)")
    lo, hi = failing, meets.sigma
    while hi - lo > hi * 10.0 ** (-SIGMA_DIGITS) and meets.sigma != low:
        middle = float(f"{(lo + hi) / 2:.{SIGMA_DIGITS + 1}g}")
        if not lo < middle < hi:
            break
        try:
            candidate = select(middle)
        except ValueError:
            lo = middle
            continue
        if candidate.delta <= target_delta:
            meets, hi = candidate, middle
        else:
            lo = middle
    return meets


def claim_needs_noise(selection: vandijk.Selection) -> bool:
    """Whether the paper's claimed δ is below one round's total variation q(2Φ(1/(2σ))−1) = q·erf(1/(2√2σ)) at the
    largest q_i (Poisson-subsampled Gaussian, add/remove-one): the composition's total variation is at least that,
    and it is the δ at ε = 0, so every accountant's ε at the claimed δ is then > 0 and the claim is not vacuous. A
    sufficient test (a claim can fail it and still need noise), in microseconds instead of an accounting."""
    largest = max(selection.sizes) / selection.client_size
    return largest * math.erf(1 / (2 * math.sqrt(2) * selection.sigma)) > selection.delta


def nearest_feasible(select: Callable[[float], vandijk.Selection], plan: Callable[[float], object], *,
                     start: float, end: float, integer: bool = False, time_budget: float = 2.0) -> float | None:
    """The value nearest ``start`` in the direction of ``end`` with a plan, to 3 significant digits rounded away
    from ``start``; None if none is found up to ``end`` or within ``time_budget`` seconds. The increasing-sizes
    page offers it as a one-click fix of a refused plan (the smallest σ, the largest K or p that works).

    ``select(value)`` is the paper's selection alone (2-20 ms; it raises ``ValueError`` where the m/T iteration
    diverges or (16) fails) and ``plan(value)`` the whole plan (0.2-3 s with RDP; it raises also on a vacuous claim,
    :class:`VacuousClaimError`, or where Theorem 3 refuses the sizes). Three boundaries are sought in turn, each
    from the last: where the selection first succeeds, where :func:`claim_needs_noise` first certifies its claim,
    and where the plan first succeeds. Each is found by galloping in log space (log-distance 0.05, 0.1, 0.2, …,
    capped at ``end``: at most ~13 points), then bisecting the last step to a log-distance of 10⁻³ (~10 points); the
    first boundary whose value, rounded away from ``start``, plans is the answer (the third is bisected with
    plans, so it is only searched when the first two do not plan, e.g. where Theorem 3 refuses the sizes).
    Every value is selected and planned at most once; an ``ArithmeticError`` at a probed value counts as no plan
    there (e.g. q underflowing to 0 at p = 0.0117 with r0 = 0.001 divides by zero in the selection). The
    certificate is sufficient, not necessary: a value a little nearer than the answer may plan with a weaker claim.
    Feasibility need not be monotone (the m/T iteration diverges on and off as p grows): the answer is the first
    feasible value of this grid, and a feasible island between two grid points may be missed. Integers
    (``integer``) are rounded away from ``start``.
    """
    deadline = time.monotonic() + time_budget
    up = end > start
    span = abs(math.log(end / start))
    seen: dict[tuple[str, float], object] = {}  # each value is selected and planned at most once

    def value_at(distance: float) -> float:
        value = start * math.exp(min(distance, span) if up else -min(distance, span))
        value = min(value, end) if up else max(value, end)
        return float(math.ceil(value - 1e-9) if up else math.floor(value + 1e-9)) if integer else value

    def outcome(kind: str, value: float) -> object:
        if (kind, value) not in seen:
            try:
                seen[kind, value] = (select if kind == "select" else plan)(value)
            except (ValueError, ArithmeticError) as error:  # a probed value the formulas cannot take: no plan
                seen[kind, value] = ValueError(str(error))
        return seen[kind, value]

    def selects(value: float) -> bool:
        return not isinstance(outcome("select", value), ValueError)

    def certified(value: float) -> bool:
        return selects(value) and claim_needs_noise(outcome("select", value))

    def plans(value: float) -> bool:
        return selects(value) and not isinstance(outcome("plan", value), ValueError)

    def rounded(value: float) -> float:
        scale = 10.0 ** (math.floor(math.log10(value)) - NEAREST_DIGITS + 1)
        shown = (math.ceil(value / scale - 1e-9) if up else math.floor(value / scale + 1e-9)) * scale
        shown = float(f"{shown:.{NEAREST_DIGITS}g}")
        return float(round(shown)) if integer else shown

    steps = [NEAREST_FIRST_STEP * 2.0**k for k in range(64) if NEAREST_FIRST_STEP * 2.0 ** (k - 1) < span]
    found = 0.0
    for test in (selects, certified, plans):
        if not test(value_at(found)):
            failing = found
            found = next((step for step in steps if step > failing and test(value_at(step))), None)
            if found is None or time.monotonic() > deadline:
                return None
            failing = max(step for step in (failing, *steps) if step < found)
            while found - failing > NEAREST_PRECISION and time.monotonic() < deadline:
                middle = (failing + found) / 2
                failing, found = (failing, middle) if test(value_at(middle)) else (middle, found)
        candidate = rounded(value_at(found))
        if (min(candidate, end) if up else max(candidate, end)) == candidate and plans(candidate):
            return candidate
    return value_at(found)


def select_vandijk(*, initial_size: int, client_size: int, epsilon: float, grad_computations: float | None = None,
                   epochs: float | None = None, sigma: float | None = None,
                   sigma_range: tuple[float, float] | None = None, delta: float | None = None, p: float = 1.0,
                   r0: float | str = "r0(sigma)", variant: str = "corrected", case: int = 1, k: float = 1.0,
                   max_passes: int | None = None) -> vandijk.Selection:
    """The paper's parameter selection (L211-219) for :func:`plan_vandijk`'s inputs, without the accounting.

    Give K as ``grad_computations`` (per client) or ``epochs`` = K/N_c. Give ``sigma``, or ``sigma_range`` with a
    target ``delta`` to take the smallest σ whose claimed δ meets it (:func:`smallest_sigma`).
    """
    from fedplan.bounds import vandijk

    if (grad_computations is None) == (epochs is None):
        raise ValueError("give exactly one of grad_computations (K per client) and epochs (K/N_c)")
    if grad_computations is None:
        grad_computations = check_real("epochs", epochs, low=0.0, low_open=True) * client_size

    def select(value: float) -> vandijk.Selection:
        return vandijk.select_parameters(initial_size=initial_size, client_size=client_size,
                                         grad_computations=grad_computations, p=p, epsilon=epsilon, sigma=value,
                                         r0=r0, case=case, k=k, variant=variant, max_passes=max_passes)

    if (sigma is None) == (sigma_range is None):
        raise ValueError("give exactly one of sigma and sigma_range")
    if sigma is not None:
        return select(sigma)
    if delta is None:
        raise ValueError("sigma_range needs a target delta")
    target = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    return smallest_sigma(select, sigma_range=sigma_range, target_delta=target)


def plan_vandijk(*, initial_size: int, client_size: int, epsilon: float, grad_computations: float | None = None,
                 epochs: float | None = None, sigma: float | None = None,
                 sigma_range: tuple[float, float] | None = None, delta: float | None = None,
                 p: float = 1.0, r0: float | str = "r0(sigma)", variant: str = "corrected", case: int = 1,
                 k: float = 1.0, max_passes: int | None = None, with_pld: bool = True,
                 time_budget: float = accounting.DEFAULT_TIME_BUDGET, learning_rate: float | None = None,
                 decay: float = 0.0, step_rule: str = "inverse") -> VanDijkPlan:
    """Plan with the paper's parameter selection (:func:`select_vandijk`) and account the realised schedule tightly.

    The tight ε values are at the paper's δ for this plan (``selection.delta``). A claim so weak that the schedule
    meets it without noise (ε = 0 at that δ) raises :class:`VacuousClaimError`.
    """
    from fedplan.bounds import vandijk

    selection = select_vandijk(initial_size=initial_size, client_size=client_size, epsilon=epsilon,
                               grad_computations=grad_computations, epochs=epochs, sigma=sigma,
                               sigma_range=sigma_range, delta=delta, p=p, r0=r0, variant=variant, case=case, k=k,
                               max_passes=max_passes)
    direct = vandijk.theorem3(sizes=selection.sizes, client_size=client_size, sigma=selection.sigma,
                              epsilon=selection.epsilon)
    increasing = _runs(selection.sizes, client_size, selection.sigma)
    tight_pld, tight_rdp = _tight(increasing, selection.delta, with_pld=with_pld, time_budget=time_budget)
    constant = [(initial_size / client_size, selection.budget, selection.constant_rounds)]
    constant_pld, constant_rdp = _tight(constant, selection.delta, with_pld=with_pld, time_budget=time_budget)
    steps = (None if learning_rate is None
             else round_step_sizes(selection.sizes, learning_rate=learning_rate, decay=decay, rule=step_rule))
    if (tight_pld or tight_rdp).epsilon == 0:
        raise VacuousClaimError(_vacuous_claim(selection, k=k, epochs=epochs), delta=selection.delta,
                           epsilon=selection.epsilon)
    matched = matching_constant_noise(selection, tight_pld or tight_rdp)
    return VanDijkPlan(selection=selection, direct=direct, tight_pld=tight_pld, tight_rdp=tight_rdp,
                       constant_pld=constant_pld, constant_rdp=constant_rdp, matched_constant=matched,
                       step_sizes=steps)


def noise_against_growth_exponent(plan: VanDijkPlan, *, grad_computations: float, p_max: float = 2.0,
                                  points: int = 240) -> tuple[list[dict], dict[str, list[float]]]:
    """Theorem 4's aggregated noise √T·σ_min against the growth exponent p in [0.01, ``p_max``] for the plan's s₀, m,
    N_c, ε, σ, γ and δ at K = ``grad_computations``, and the exponents p⁻/p⁺ where K crosses K⁻ and K⁺ (L193,
    L1151-1171). A point just after each p⁺ shows the ×1.21 jump. Rows: ``p``, ``case``, ``aggregated_noise``
    (None between K⁻ and K⁺, where Theorem 4 gives no bound). The increasing-sizes page's chart.

    The curve keeps the plan's m, so q = s₀/(N_c m^p) falls as p grows only for m > 1 (L1151): a plan with m ≤ 1
    (a small p) is refused with a ``ValueError`` that says so."""
    from fedplan.bounds import vandijk

    sel = plan.selection
    if sel.m <= 1:
        raise ValueError(f"the curve keeps this plan's offset m = {number_text(sel.m)} and needs m > 1, where "
                         f"q = s0/(N_c m^p) falls as p grows (L1151); raise the growth exponent p (m grows with p)")
    setting = {"initial_size": sel.initial_size, "offset": sel.m, "client_size": sel.client_size,
               "epsilon": sel.epsilon, "sigma": sel.sigma, "grad_computations": grad_computations, "gamma": sel.gamma}
    transitions = vandijk.transition_exponents(p_max=p_max, **setting)
    exponents = np.union1d(np.linspace(0.01, p_max, points), [p * (1 + 1e-9) for p in transitions["p_plus"]])
    curve = vandijk.aggregated_noise_curve(exponents=exponents, delta=sel.delta, **setting)
    rows = [{"p": point.p, "case": point.theorem.case, "aggregated_noise": point.aggregated_noise} for point in curve]
    return rows, transitions


def _vacuous_claim(selection: vandijk.Selection, *, k: float, epochs: float | None) -> str:
    """Why a selection whose claimed δ leaves the schedule (0, δ)-DP cannot be planned, in the inputs' names.

    Case 2 gets there when K* caps q so hard that K stays far below K⁺ (the case's hypothesis), more so for a
    large growth exponent: the budget 𝓑 = σ/F is then below 1 and δ = exp(−ε𝓑²/2) close to 1.
    """
    sel = selection
    inputs = [f"case {sel.case}", f"growth_exponent {sel.p:g}", f"noise_multiplier {sel.sigma:g}",
              f"epochs {epochs:g}" if epochs is not None else f"grad_computations {sel.grad_computations:.12g}"]
    if sel.case == 2:
        inputs.append(f"k_plus_multiple {k:g}")
    failed = "".join(f"; {h.name} fails ({h.detail})" for h in sel.hypotheses if not h.holds and h.name != "K >= K+")
    below_k_plus = sel.case == 2 and sel.k_ratio is not None and sel.k_ratio < 1
    remedy = (f"case 2 assumes K >= K+ and here K = {sel.k_ratio:.3g} K+: use case 1" if below_k_plus
              else "raise noise_multiplier or target_epsilon, or lower growth_exponent")
    return (f"nothing to plan: for {', '.join(inputs[:-1])} and {inputs[-1]} (initial_size {sel.initial_size}, "
            f"client_size {sel.client_size}) the paper's bound "
            f"claims only delta = {sel.delta:.3g} at target_epsilon {sel.epsilon:g} (budget B = {sel.budget:.3g}), "
            f"at which the schedule is already (0, delta)-DP{failed}; {remedy}")


def matching_constant_noise(selection: vandijk.Selection, target: AccountingResult) -> dict:
    """σ a constant-size baseline needs for the same tight ε as the increasing schedule (spec §9.3).

    Calibrated with ``target``'s accountant, so that its ε is ≤ the increasing schedule's. Returns
    both aggregated noises √T·σ: under tight accounting the paper's ~2× advantage largely disappears
    (Example 3: 108.2 increasing vs 124.7 constant with RDP, 99.7 with PLD).
    """
    calibrated = accounting.calibrate_noise_multiplier(
        target_epsilon=target.epsilon, target_delta=selection.delta,
        sample_rate=selection.initial_size / selection.client_size, steps=selection.constant_rounds,
        accountant=target.accountant)
    return {"accountant": calibrated.accountant, "epsilon": target.epsilon,
            "constant_noise_multiplier": calibrated.value,
            "constant_aggregated_noise": math.sqrt(selection.constant_rounds) * calibrated.value,
            "increasing_aggregated_noise": math.sqrt(len(selection.sizes)) * selection.sigma}
