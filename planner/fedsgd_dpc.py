"""Plan FedSGD-DPC (Zhou et al.): how many rounds T and clients per round b, from constants or from data.

From (raw constants, or a data set split over N clients → :func:`planner.estimate.estimate_constants`),
the per-client privacy target and the mechanism to T*, b*, the bound U(T*, b*), the noise each client
adds and the bound curve U(T, b*). Every Laplace answer (free, fixed b or fixed T) carries the paper's
rounding rule and the exact integer optimum side by side: ``variant="paper"`` answers with the rule, which
is what Table I prints (zhou L467-472, errata Z-6, Z-9), ``"corrected"`` with the exact optimum. It also
gives the regime of the Laplace solution and the hypotheses that fail.

Privacy model: Laplace (pure ε, full local data per reply, replace-one or add/remove-one) or Gaussian
(Poisson sampling of local examples at rate q, add/remove-one); see :mod:`bounds.fedsgd_dpc`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.bounds.theorem import all_hold
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.display import theorem_fields
from fedplan.planner.export import Schedule, package_versions

if TYPE_CHECKING:
    from fedplan.planner.estimate import ProblemConstants

MECHANISMS = ("laplace", "gaussian")
CURVE_POINTS = 60


@dataclass(frozen=True)
class FedSGDPlan:
    """T*, b*, the bound and its provenance for one problem and privacy target.

    ``choice`` is the variant's answer. With the Laplace mechanism ``paper_choice`` (the paper's rounding
    rule) and ``exact_choice`` (the exact integer optimum of the variant's U) are both given in every mode,
    and ``choice`` is one of them: the rule for ``variant="paper"``, the exact optimum for ``"corrected"``.
    """

    mechanism: str
    choice: zhou.Choice
    paper_choice: zhou.Choice | None
    exact_choice: zhou.Choice | None
    regime: zhou.LaplaceRegime | None
    noise: dict
    curve: tuple[tuple[int, float], ...]
    constants: dict

    def summary(self) -> dict:
        choice = self.choice
        hypotheses = list(choice.hypotheses)
        return {
            "mechanism": self.mechanism, "T_star": choice.rounds, "b_star": choice.clients_per_round,
            "bound": choice.bound, "replies_per_client": choice.replies, "method": choice.method,
            "variant": choice.variant, "notes": list(choice.notes),
            "paper_rule": _point(self.paper_choice), "exact_optimum": _point(self.exact_choice),
            "regime": None if self.regime is None else {
                "regime": self.regime.regime, "margin": self.regime.margin,
                "critical_epsilon": self.regime.critical_epsilon,
                "continuous_T": self.regime.rounds, "continuous_b": self.regime.clients_per_round},
            "noise": self.noise, "constants": self.constants,
            "hypotheses": [h.to_dict() for h in hypotheses], "hypotheses_hold": all_hold(hypotheses),
            "statement": self.statement(),
        }

    def schedule(self) -> Schedule:
        """T* rounds of b* clients; a round's noise is the largest per-client noise (scale, or σ with Gaussian).

        Every client's own noise is in the metadata; a Laplace plan's privacy block states the record-level pure ε of
        the client with the largest guarantee, by basic composition over the most replies a client makes (zhou
        Theorem 1, L196-202). Raises ``ValueError`` when T* = 0 or T* = ∞ (nothing to run).
        """
        choice = self.choice
        if not 0 < choice.rounds < math.inf:
            raise ValueError(f"T* = {choice.rounds}: there is no schedule to export (see the notes: {choice.notes})")
        row = {"clients_per_round": choice.clients_per_round, "mechanism": self.mechanism}
        if self.mechanism == "laplace":
            row["laplace_scale"] = max(self.noise["scale"])
        elif choice.noise_multipliers:
            row["noise_multiplier"] = max(choice.noise_multipliers)
        metadata = {
            "paper": "Zhou et al., optimal numbers of queries and replies (FedSGD-DPC)", "variant": choice.variant,
            "method": choice.method, "bound": choice.bound, "replies_per_client": choice.replies,
            "noise": self.noise, "constants": self.constants,
            "sampling": zhou.LAPLACE_SAMPLING if self.mechanism == "laplace" else zhou.GAUSSIAN_SAMPLING,
            "neighboring_relation": (zhou.LAPLACE_RELATION if self.mechanism == "laplace"
                                     else zhou.GAUSSIAN_RELATION),
            **theorem_fields(choice.hypotheses), "versions": package_versions(),
        }
        privacy = None
        if self.mechanism == "laplace":
            epsilon, releases = max(self.noise["epsilon_guaranteed"]), max(self.noise["max_replies"])
            privacy = {"mechanism": "laplace", "unit": "example", "sampling": "none",
                       "neighboring_relation": "replace_one", "delta": 0.0, "epsilon": epsilon, "accountant": "basic",
                       "bound": "upper bound", "target_epsilon": None, "epsilon_per_release": epsilon / releases,
                       "releases": releases}
        return Schedule(rounds=int(choice.rounds), change_points=((0, row),), metadata=metadata,
                        statement=self.statement(), privacy=privacy)

    def statement(self) -> str:
        choice = self.choice
        model = (zhou.LAPLACE_SAMPLING + "; " + zhou.LAPLACE_RELATION if self.mechanism == "laplace"
                 else zhou.GAUSSIAN_SAMPLING + "; " + zhou.GAUSSIAN_RELATION)
        return (f"Run T = {choice.rounds} rounds with b = {choice.clients_per_round} clients each: Zhou et al.'s "
                f"bound on E||theta_T - theta*||^2 is {choice.bound:.6g} ({choice.method}, variant "
                f"{choice.variant}); each client replies at most {choice.replies:g} times. Privacy model: {model}.")


def _point(choice: zhou.Choice | None) -> dict | None:
    """(T, b) and U of a choice, as the summary shows it beside the answer."""
    if choice is None:
        return None
    return {"T": choice.rounds, "b": choice.clients_per_round, "bound": choice.bound}


def _laplace_choices(problem: zhou.Problem, constants: zhou.LaplaceConstants, *, max_rounds, fix_b, fix_T,
                     variant) -> tuple[zhou.Choice, zhou.Choice]:
    """(the paper's rounding rule, the exact integer optimum) of the variant's U in the requested mode.

    Free: b ∈ {1, N} at ⌊T*(b)⌋ (L364-367) against the best (T, b); fixed b: ⌊T*(b)⌋ (Eq. (6), L322)
    against the best T; fixed T: ⌈b*(T)⌉ clipped to [1, N] (L336) against the best b. These roundings
    reproduce all 24 entries of Table I (L467-472; errata Z-6, Z-9).
    """
    if fix_b is None and fix_T is None:
        return (zhou.laplace_paper_choice(constants=constants, max_rounds=max_rounds, variant=variant),
                zhou.laplace_exact_choice(constants=constants, max_rounds=max_rounds, variant=variant))
    if fix_b is not None:
        found = zhou.optimal_rounds(constants=constants, clients_per_round=fix_b, max_rounds=max_rounds,
                                    variant=variant)
        points = ((found.paper, fix_b, found.bound_paper, "paper rule: T = floor(T*(b)) (Eq. (6), Table I)"),
                  (found.best, fix_b, found.bound_best, "exact integer T for fixed b"))
    else:
        found = zhou.optimal_clients(constants=constants, rounds=fix_T, variant=variant)
        points = ((fix_T, found.paper, found.bound_paper, "paper rule: b = ceil(b*(T)) in [1, N] (L336, Table I)"),
                  (fix_T, found.best, found.bound_best, "exact integer b for fixed T"))
    rule, exact = (_fixed(rounds, clients, bound, problem, variant, method, found.source, constants.hypotheses)
                   for rounds, clients, bound, method in points)
    return rule, exact


def _laplace(problem: zhou.Problem, *, epsilon, clipping_norm, max_rounds, fix_b, fix_T, variant):
    constants = zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=clipping_norm)
    regime = zhou.laplace_regime(constants=constants)
    paper, exact = _laplace_choices(problem, constants, max_rounds=max_rounds, fix_b=fix_b, fix_T=fix_T,
                                    variant=variant)
    choice = exact
    if variant == "paper":
        choice = paper
        if (exact.rounds, exact.clients_per_round) != (paper.rounds, paper.clients_per_round):
            choice = replace(paper, notes=(*paper.notes, (
                f"the exact integer optimum is (T, b) = ({exact.rounds}, {exact.clients_per_round}) with U = "
                f"{exact.bound:.6g} (the paper rule's U = {paper.bound:.6g})")))
    noise = {"scale": [], "epsilon_guaranteed": [], "max_replies": []}
    if choice.rounds > 0:
        noises = {}  # one draw per distinct (d_i, ε_i): N equal clients cost one call, not N
        for size, eps in zip(problem.client_sizes, np.broadcast_to(epsilon, (problem.num_clients,)), strict=True):
            if (size, float(eps)) not in noises:
                noises[size, float(eps)] = zhou.laplace_noise(
                    rounds=int(choice.rounds), clients_per_round=choice.clients_per_round,
                    num_clients=problem.num_clients, client_size=size, epsilon=float(eps), clipping_norm=clipping_norm,
                    variant=variant)
            drawn = noises[size, float(eps)]
            noise["scale"].append(drawn.scale)
            noise["epsilon_guaranteed"].append(drawn.epsilon_guaranteed)
            noise["max_replies"].append(drawn.max_replies)
    curve = tuple((int(t), float(zhou.laplace_bound(constants=constants, rounds=int(t),
                                                    clients_per_round=choice.clients_per_round, variant=variant)))
                  for t in _curve_rounds(choice.rounds))
    constants_dict = {"C1": constants.C1, "C2": constants.C2, "C3": constants.C3, "gamma": constants.gamma}
    return choice, paper, exact, regime, noise, curve, constants_dict


def _fixed(rounds, clients, bound, problem, variant, method, source, hypotheses) -> zhou.Choice:
    replies = zhou.replies_per_client(rounds=int(rounds), clients_per_round=int(clients),
                                      num_clients=problem.num_clients, variant=variant)
    return zhou.Choice(rounds=int(rounds), clients_per_round=int(clients), bound=float(bound), replies=replies,
                       method=method, variant=variant, notes=(), hypotheses=tuple(hypotheses), source=source)


def _curve_rounds(rounds: float) -> np.ndarray:
    """T values of the bound curve: 0, a geometric grid to 3·T*, and T* itself."""
    top = max(10, int(3 * rounds)) if math.isfinite(rounds) else 1000
    marked = [rounds] if math.isfinite(rounds) else []
    return np.unique(np.concatenate(([0], np.geomspace(1, top, CURVE_POINTS).astype(int), marked))).astype(int)


def _gaussian(problem: zhou.Problem, *, epsilon, delta, clipping_norm, sample_rate, c2, max_rounds, accountant):
    if c2 is not None:
        constants = zhou.gaussian_constants(problem=problem, epsilon=epsilon, delta=delta, clipping_norm=clipping_norm,
                                            sample_rate=sample_rate, c2=c2)
        choice = zhou.gaussian_choice(constants=constants, max_rounds=max_rounds)
        curve_b = choice.clients_per_round
        curve = tuple((int(t), float(zhou.gaussian_bound(constants=constants, rounds=int(t),
                                                         clients_per_round=curve_b)))
                      for t in _curve_rounds(choice.rounds))
        return choice, {"mode": "paper Eq. (5) with assumed c2"}, curve, {
            "E1": constants.E1, "E2": constants.E2, "E3": constants.E3, "gamma": constants.gamma}
    if not math.isfinite(max_rounds):
        raise ValueError("max_rounds must be a finite integer for the Gaussian mechanism with accountant noise "
                         "(give --max-rounds, or --c2 for the paper's Eq. (5))")
    choice = zhou.gaussian_accountant_choice(problem=problem, epsilon=epsilon, delta=delta,
                                             clipping_norm=clipping_norm, sample_rate=sample_rate,
                                             max_rounds=int(max_rounds), accountant=accountant)
    return choice, {"mode": f"{accountant} accountant", "noise_multipliers": list(choice.noise_multipliers)}, (), {}


def estimate_problem(dataset: str, *, clients: int, model: str = "logistic", regularization: float = 1e-3,
                     seed: int = 0, iid: bool = True) -> tuple[zhou.Problem, ProblemConstants]:
    """Zhou et al.'s constants estimated from a LIBSVM file split over ``clients`` (zhou L369-372).

    The split is :func:`planner.datasets.split_clients` with ``seed`` (by sorted label when ``iid`` is false).
    Returns the :class:`bounds.fedsgd_dpc.Problem` and every estimate (ξ₁, ξ₂, the methods) behind it.
    """
    from fedplan.planner.datasets import load_libsvm  # scipy.optimize and sparse: loaded only for a data set
    from fedplan.planner.estimate import estimate_constants

    features, labels = load_libsvm(dataset)
    estimated = estimate_constants(X=features, y=labels, model=model, regularization=regularization,
                                   clients=clients, seed=seed, iid=iid)
    return zhou.Problem(**estimated.fedsgd_problem_kwargs()), estimated


def plan_fedsgd_dpc(*, problem: zhou.Problem, mechanism: str, epsilon, clipping_norm: float, delta=None,
                    sample_rate: float | None = None, c2: float | None = None, max_rounds: float = math.inf,
                    fix_b: int | None = None, fix_T: int | None = None, variant: str = "corrected",
                    accountant: str = "rdp", constants: dict | None = None) -> FedSGDPlan:
    """T*, b* and the bound for one mechanism (zhou Sec. V-B Laplace, Sec. VI-B Gaussian).

    Laplace: over (T, b), or over T for ``fix_b``, or over b for ``fix_T``, the exact integer optimum
    (``variant="corrected"``; never worse than the paper rule, which is reported too) or the paper's rounding
    rule as Table I prints it (``variant="paper"``, zhou L467-472; the exact optimum of the printed U is
    reported too). Gaussian: with ``c2`` the paper's Eq. (5) solution (b* = N, T* = T_max or 0); without it
    the exhaustive search with accountant-calibrated noise (needs a finite ``max_rounds``). ``clipping_norm``
    is ξ₁ (Laplace, L1) or ξ₂ (Gaussian, L2).
    """
    mechanism = check_choice("mechanism", mechanism, MECHANISMS)
    if fix_b is not None and fix_T is not None:
        raise ValueError("give at most one of fix_b and fix_T")
    if fix_b is not None:
        fix_b = check_int("fix_b", fix_b, low=1, high=problem.num_clients)
    if fix_T is not None:
        fix_T = check_int("fix_T", fix_T, low=1)
    if max_rounds != math.inf:
        max_rounds = check_int("max_rounds", max_rounds, low=0)
    paper = exact = regime = None
    if mechanism == "laplace":
        choice, paper, exact, regime, noise, curve, derived = _laplace(
            problem, epsilon=epsilon, clipping_norm=clipping_norm, max_rounds=max_rounds, fix_b=fix_b, fix_T=fix_T,
            variant=variant)
    else:
        if fix_b is not None or fix_T is not None:
            raise ValueError("fix_b/fix_T apply to the Laplace mechanism; the Gaussian optimum has b* = N "
                             "and T* at a boundary (zhou L418-419)")
        if delta is None or sample_rate is None:
            raise ValueError("the Gaussian mechanism needs delta in (0, 1) and sample_rate in (0, 1)")
        choice, noise, curve, derived = _gaussian(problem, epsilon=epsilon, delta=delta, clipping_norm=clipping_norm,
                                                  sample_rate=sample_rate, c2=c2, max_rounds=max_rounds,
                                                  accountant=accountant)
    return FedSGDPlan(mechanism=mechanism, choice=choice, paper_choice=paper, exact_choice=exact, regime=regime,
                      noise=noise, curve=curve, constants={**(constants or {}), **derived})


def laplace_landscape(*, problem: zhou.Problem, epsilon, clipping_norm: float, rounds, clients_per_round=None,
                      variant: str = "corrected") -> list[dict]:
    """U(T, b) for the given T values and the given b values (default b = 1..N) (zhou L354), one dict per cell, for
    a heat map."""
    values = [check_int("rounds", t, low=0) for t in rounds]
    if not 1 <= len(values) <= 1000:
        raise ValueError(f"rounds must hold 1 to 1000 values; got {len(values)}")
    clients = range(1, problem.num_clients + 1) if clients_per_round is None else [
        check_int("clients_per_round", b, low=1, high=problem.num_clients) for b in clients_per_round]
    constants = zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=clipping_norm)
    return [{"T": t, "b": b, "U": zhou.laplace_bound(constants=constants, rounds=t, clients_per_round=b,
                                                     variant=variant)}
            for b in clients for t in values]


def landscape_clients(*, num_clients: int, marked: int, points: int = 40) -> list[int]:
    """The b values of a heat map of U(T, b): every b = 1..N when N ≤ ``points``, else ``points`` of them spread
    geometrically from 1 to N, with ``marked`` (the answer's b) among them."""
    num_clients = check_int("num_clients", num_clients, low=2)
    marked = check_int("marked", marked, low=1, high=num_clients)
    if num_clients <= points:
        return list(range(1, num_clients + 1))
    spread = np.geomspace(1, num_clients, check_int("points", points, low=2)).round().astype(int)
    return sorted({*spread.tolist(), marked})


#: The largest ε :func:`smallest_epsilon_to_train` tries: a per-client ε beyond it protects nothing.
LARGEST_USEFUL_EPSILON = 1e6


def smallest_epsilon_to_train(*, problem: zhou.Problem, clipping_norm: float, epsilon: float, fix_b: int | None = None,
                              variant: str = "corrected", digits: int = 3) -> float | None:
    """The smallest per-client ε above ``epsilon`` (an ε at which T* = 0), rounded *up* to ``digits`` significant
    digits, at which the Laplace answer (T*, b*) of :func:`plan_fedsgd_dpc` (free, or with ``fix_b``) has T* ≥ 1;
    None if T* = 0 for every ε up to :data:`LARGEST_USEFUL_EPSILON`.

    ε enters U(T, b) only through C₂ ∝ Σ 1/ε_i² (zhou L356), and U(0, b) does not depend on it, so a larger ε never
    turns T* ≥ 1 into T* = 0: the ε with T* ≥ 1 form an interval [ε₀, ∞), found by bisection on log ε.
    """
    def trains(value: float) -> bool:
        constants = zhou.laplace_constants(problem=problem, epsilon=value, clipping_norm=clipping_norm)
        rule, exact = _laplace_choices(problem, constants, max_rounds=math.inf, fix_b=fix_b, fix_T=None,
                                       variant=variant)
        return (rule if variant == "paper" else exact).rounds >= 1

    low = check_real("epsilon", epsilon, low=0.0, low_open=True, high=LARGEST_USEFUL_EPSILON)
    digits = check_int("digits", digits, low=1, high=12)
    if trains(low):
        raise ValueError(f"epsilon must be an ε at which T* = 0; got {low:g}, where T* >= 1")
    high = LARGEST_USEFUL_EPSILON
    if not trains(high):
        return None
    while high / low > 1 + 10.0 ** -(digits + 1):
        middle = math.sqrt(low * high)
        low, high = (low, middle) if trains(middle) else (middle, high)
    exponent = math.floor(math.log10(high)) - digits + 1
    return float(f"{math.ceil(high / 10.0**exponent)}e{exponent}")
