"""van Dijk et al.'s increasing sample sizes: r0(σ), the paper's parameter selection and the schedule export.

``fedplan vandijk r0|select|schedule`` run these. :class:`VandijkPlanInputs` holds the inputs of one plan (the
paper's selection with the tight accounting of the realised schedule, :func:`planner.vandijk.plan_vandijk`);
``select`` reports it, ``schedule`` writes it, and ``validate vandijk`` simulates it.

    fedplan vandijk r0 --noise-multiplier 3 --growth-exponent 1
    fedplan vandijk select --initial-size 16 --client-size 10000 --grad-computations 25000 --noise-multiplier 8 \\
        --target-epsilon 1 --r0 1/e --variant paper
    fedplan vandijk schedule --initial-size 16 --client-size 10000 --epochs 2.5 --noise-multiplier 8 \\
        --target-epsilon 1 --r0 1/e --out plan.csv

``--variant paper`` with the paper's inputs prints its Examples 1, 3, 4 and 5 (Appendix D.3.2): e.g. Example 1 is
``--initial-size 16 --client-size 50000 --epochs 100 --noise-multiplier 3 --target-epsilon 2 --r0 0.0110``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from fedplan.bounds import rdp
from fedplan.bounds.theorem import VARIANTS
from fedplan.bounds.validation import check_real
from fedplan.planner.export import FORMATS, check_schedule_file, write_schedule
from fedplan.planner.tasks.accounting import noise_multiplier_field, target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import OneOf, Report, Request, choice, count, flag, real, text
from fedplan.planner.vandijk import STEP_RULES, VanDijkPlan, parse_r0, plan_vandijk

# bounds.vandijk loads scipy.optimize, which the command line should not pay for at every start: its limits are
# restated here (a test checks that they agree) and σ ≥ SIGMA_FLOOR, defined there, is checked in check().
#: bounds.vandijk.MAX_EXPONENT: the largest growth exponent p.
MAX_GROWTH_EXPONENT = 10.0
#: bounds.vandijk.MIN_GROWTH_EXPONENT: the smallest growth exponent of an increasing schedule.
MIN_GROWTH_EXPONENT = 0.01
#: bounds.vandijk.R0_MAX: the largest r0 Theorems 3 and 6 allow (L929, L1081).
R0_MAX = 1 / math.e


def growth_exponent_field(*, low_open: bool = True):
    """p in [0, 10] where p = 0 (constant rates) is meaningful, else in [0.01, 10]: the schedule's offset
    m = (s₀/(N_c q))^(1/p) overflows for a smaller p (bounds.vandijk.MIN_GROWTH_EXPONENT)."""
    return real(1.0, help="growth exponent p of the sample rates q_i = q (i+m)^p (L191)",
                low=MIN_GROWTH_EXPONENT if low_open else 0.0, high=MAX_GROWTH_EXPONENT, deprecated=("--p",))


def check_noise_multiplier_for_r0(noise_multiplier: float) -> None:
    """r0(σ) is computed for σ ≥ 0.1 (bounds.vandijk.SIGMA_FLOOR): refused by name below it. The paper's σ ≥ 1.137
    (L191, L1339) is a hypothesis: below it the numbers say "no guarantee"."""
    from fedplan.bounds.vandijk import SIGMA_FLOOR

    check_real("noise_multiplier", noise_multiplier, low=SIGMA_FLOOR)


@dataclass(frozen=True, kw_only=True)
class VandijkR0(Request):
    """r0(σ) by the fixed-point iteration of the proof of Theorem 6."""

    command: ClassVar = ("vandijk", "r0")
    summary: ClassVar = "r0(σ) by the fixed point of the proof of Theorem 6"

    noise_multiplier: float = real(..., help="noise multiplier σ = noise std / clipping norm, σ ≥ 0.1; the paper "
                                   "proves r0(σ) for σ ≥ 1.137 (L1339), below it: no guarantee",
                                   low=rdp.MIN_NOISE_MULTIPLIER, high=rdp.MAX_NOISE_MULTIPLIER,
                                   deprecated=("--sigma",))
    growth_exponent: float = growth_exponent_field(low_open=False)
    offset_ratio: float = real(0.0, help="bound γ on m/T, the offset m of q_i = q (i+m)^p over the rounds T "
                               "(the paper's iteration uses 0, L1305)", low=0.0, deprecated=("--gamma",))

    def check(self) -> None:
        check_noise_multiplier_for_r0(self.noise_multiplier)

    def run(self, *, progress=None) -> Report:
        from fedplan.bounds import vandijk as paper

        result = paper.r0_of_sigma(sigma=self.noise_multiplier, p=self.growth_exponent, gamma=self.offset_ratio)
        values = {"sigma": result.sigma, "p": result.p, "gamma": result.gamma, "r0": result.r0, "r": result.r,
                  "alpha": result.alpha, "u0": result.u0, "u1": result.u1, "iterations": result.iterations,
                  "hypotheses": [h.to_dict() for h in result.hypotheses], "notes": list(result.notes),
                  "statement": f"r0({result.sigma:g}) = {result.r0:.6g} for p = {result.p:g} ({result.source}): "
                               f"{result.guarantee}"}
        return Report(values=values, result=result)


@dataclass(frozen=True, kw_only=True)
class VandijkPlanInputs(Request):
    """The inputs of one van Dijk plan: the client, the work K, the claim's ε, σ (or a σ range), p, r0, the case.

    :meth:`plan` runs the paper's parameter selection (L211-219) and accounts the realised schedule tightly.
    """

    one_of: ClassVar = (OneOf(("grad_computations", "epochs")), OneOf(("noise_multiplier", "noise_multiplier_range")))

    initial_size: int = count(..., help="initial sample size s_{0,c}: records of the first round (L191)", low=1,
                              deprecated=("--s0",))
    client_size: int = count(..., help="records per client N_c", low=2, deprecated=("--n-c",))
    grad_computations: int | None = count(None, help="gradient computations K of one client over all rounds "
                                          "(L1075)", low=1, deprecated=("-K",))
    epochs: float | None = real(None, help="K/N_c instead of grad_computations", low=0.0, low_open=True)
    target_epsilon: float = target_epsilon_field(help="ε of the paper's (ε, δ) claim", deprecated=("--epsilon",))
    noise_multiplier: float | None = noise_multiplier_field()
    noise_multiplier_range: tuple[float, float] | None = real(
        None, help="LOW HIGH: search the smallest noise_multiplier in this range whose claimed δ meets "
        "target_delta (L211)", low=0.0, low_open=True, multiple=True, metavar="SIGMA", deprecated=("--sigma-range",))
    target_delta: float | None = target_delta_field(None, help="target δ in (0, 1), with noise_multiplier_range",
                                                    deprecated=("--delta",))
    growth_exponent: float = growth_exponent_field()
    r0: str = text("r0(sigma)", help="r0(sigma) (the paper's function of σ), 1/e or a number in (0, 1/e] (L929); "
                   "variant paper takes r0(sigma) and numbers ≤ (√3−1)/16 = 0.0458 as the paper's r0(σ), with "
                   "Theorem 4's closed forms (L1335)")
    variant: str = choice("corrected", help="corrected (errata applied, hypotheses on the realised sequence) or "
                          "paper (reproduces the printed examples)", choices=VARIANTS)
    case: int = count(1, help="1: K ≤ K⁻ (Theorem 4), 2: K ≥ K⁺ (Theorem 6, L1121)", low=1, high=2)
    k_plus_multiple: float = real(1.0, help="case 2: K may reach this multiple k ≥ 1 of K⁺", low=1.0,
                                  deprecated=("--k",))
    max_passes: int | None = count(None, help="stop the m/T iteration after this many passes (default: one for "
                                   "variant paper with Theorem 4's closed forms in case 1, as the paper's Examples 1, "
                                   "2, 4; else until it settles, at most 100)", low=1, high=1000)
    no_pld: bool = flag(help="skip the tight PLD accountant (RDP only, faster)")

    def r0_value(self) -> float | str:
        return parse_r0(self.r0)

    def check(self) -> None:
        r0 = self.r0_value()
        if r0 != "r0(sigma)":
            check_real("r0", r0, low=0.0, high=R0_MAX, low_open=True)
        elif self.noise_multiplier is not None:
            check_noise_multiplier_for_r0(self.noise_multiplier)
        if self.initial_size >= self.client_size:
            raise ValueError(f"initial_size must be below client_size ({self.client_size}); got {self.initial_size}")
        if self.grad_computations is not None and self.grad_computations < self.initial_size:
            raise ValueError(f"grad_computations must be at least initial_size ({self.initial_size}); got "
                             f"{self.grad_computations}")
        if self.epochs is not None and self.epochs * self.client_size < self.initial_size:
            raise ValueError(f"epochs must be at least initial_size/client_size = "
                             f"{self.initial_size / self.client_size:g}; got {self.epochs:g}")
        if self.noise_multiplier_range is not None:
            bounds = self.noise_multiplier_range
            if len(bounds) != 2 or not bounds[0] < bounds[1]:
                raise ValueError("noise_multiplier_range must be two values LOW HIGH with LOW < HIGH; got "
                                 f"{' '.join(f'{value:g}' for value in bounds)}")
            if self.target_delta is None:
                raise ValueError("noise_multiplier_range needs target_delta (the δ the smallest noise_multiplier "
                                 "must meet)")
        elif self.target_delta is not None:
            raise ValueError("target_delta goes with noise_multiplier_range; with noise_multiplier the δ is the "
                             "paper's claim for it")
        if self.case == 1 and self.k_plus_multiple != 1:
            raise ValueError(f"k_plus_multiple applies to case 2; got {self.k_plus_multiple:g} with case 1")

    def selection_arguments(self) -> dict:
        """The keyword arguments of :func:`~fedplan.planner.vandijk.select_vandijk` (the paper's selection alone)."""
        return dict(initial_size=self.initial_size, client_size=self.client_size, epsilon=self.target_epsilon,
                    grad_computations=self.grad_computations, epochs=self.epochs, sigma=self.noise_multiplier,
                    sigma_range=self.noise_multiplier_range, delta=self.target_delta, p=self.growth_exponent,
                    r0=self.r0_value(), variant=self.variant, case=self.case, k=self.k_plus_multiple,
                    max_passes=self.max_passes)

    def plan(self, **extra) -> VanDijkPlan:
        """The paper's selection and the tight ε of its realised schedule; ``extra``: learning_rate, decay,
        step_rule (the per-round step sizes of a schedule)."""
        return plan_vandijk(**self.selection_arguments(), with_pld=not self.no_pld, **extra)


@dataclass(frozen=True, kw_only=True)
class VandijkSelect(VandijkPlanInputs):
    """The paper's parameter selection (case 1 or 2) with the tight ε of the result."""

    command: ClassVar = ("vandijk", "select")
    summary: ClassVar = "parameter selection (case 1 or 2) with the tight ε of the result"

    def run(self, *, progress=None) -> Report:
        plan = self.plan()
        return Report(values=plan.summary(), result=plan)


@dataclass(frozen=True, kw_only=True)
class VandijkSchedule(VandijkPlanInputs):
    """The per-round schedule of a plan, written to CSV, JSON or YAML."""

    command: ClassVar = ("vandijk", "schedule")
    summary: ClassVar = "write the per-round schedule to CSV, JSON or YAML"

    out: str = text(..., help=f"output file ({', '.join(FORMATS)})", metavar="FILE")
    learning_rate: float | None = real(None, help="η0 of the per-iteration step size η_t (Table 2, L1852)",
                                       low=0.0, low_open=True)
    decay: float = real(0.0, help="β of η_t = η0/(1+βt) or η0/(1+β√t)", low=0.0)
    step_rule: str = choice("inverse", help="inverse: η_t = η0/(1+βt), inverse-sqrt: η0/(1+β√t)",
                            choices=STEP_RULES)

    def check(self) -> None:
        check_schedule_file(self.out)  # a bad file name or folder is refused before the (slow) accounting
        super().check()
        if self.learning_rate is None and (self.decay != 0 or self.step_rule != "inverse"):
            raise ValueError("decay and step_rule shape the learning rate: give learning_rate too")

    def run(self, *, progress=None) -> Report:
        plan = self.plan(learning_rate=self.learning_rate, decay=self.decay, step_rule=self.step_rule)
        path = write_schedule(plan.schedule(), self.out)
        summary = plan.summary()
        summary["statement"] = f"wrote {plan.realised_rounds} rounds to {path}. " + summary["statement"]
        return Report(values={"out": str(path), **summary}, result=plan)


TASKS = (VandijkR0, VandijkSelect, VandijkSchedule)
