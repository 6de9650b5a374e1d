"""Validations: ``fedplan validate vandijk|theorem5|fedsgd-dpc`` run a plan on several seeds and check its claims.

    fedplan validate theorem5 --n-samples 2000 --clients 2 --rounds 8 --seeds 0 1 --json
    fedplan validate fedsgd-dpc --dataset synthetic --clients 10 --mechanism gaussian --target-epsilon 20 --json
    fedplan validate vandijk --initial-size 16 --client-size 2000 --epochs 1 --noise-multiplier 8 \\
        --target-epsilon 1 --clients 5

Each answer is a :class:`~fedplan.planner.validate.ValidationReport`: the claims (simulated against predicted,
PASS/FAIL with margins), a table of curves and the runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from fedplan.planner.plan_validation import SeedRounds
from fedplan.planner.tasks.accounting import target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import Report, Request, choice, count, real
from fedplan.planner.tasks.simulate import (
    DataSource,
    claims_report,
    clients_field,
    clipping_norm_field,
    learning_rate_field,
    sample_rate_field,
    seeds_field,
)
from fedplan.planner.tasks.vandijk import VandijkPlanInputs
from fedplan.planner.validate import validate_fedsgd_dpc, validate_theorem5, validate_vandijk_plan
from fedplan.planner.vandijk import STEP_RULES


@dataclass(frozen=True, kw_only=True)
class _Validation(DataSource, Request):
    """Data over ``clients``, runs on ``seeds``; the first seed splits the data."""

    progress_unit: ClassVar = "seeds"

    clients: int = clients_field()
    seeds: tuple[int, ...] = seeds_field()


@dataclass(frozen=True, kw_only=True)
class ValidateVandijk(_Validation, VandijkPlanInputs):
    """A van Dijk plan run on several seeds: the spent ε against the planned one, the delays against Lemma 3."""

    command: ClassVar = ("validate", "vandijk")
    summary: ClassVar = "a van Dijk plan: spent vs planned epsilon, delays vs Lemma 3"
    progress_unit: ClassVar = "rounds"

    learning_rate: float = learning_rate_field(0.15, help="η0 of the step size η_t = η0/(1+βt) (Table 2, L1852)")
    decay: float = real(0.001, help="β of η_t = η0/(1+βt) or η0/(1+β√t)", low=0.0)
    step_rule: str = choice("inverse", help="inverse: η_t = η0/(1+βt), inverse-sqrt: η0/(1+β√t)",
                            choices=STEP_RULES)
    clipping_norm: float = clipping_norm_field(0.1, help="per-example clipping norm C (ℓ2)")
    test_fraction: float = real(0.05, help="share of the data held out for testing, in [0, 1)", low=0.0, high=1.0,
                                high_open=True)
    clients: int = clients_field(5)

    def planned_updates(self) -> tuple[int, str]:
        """Each seed runs the plan's K gradient computations on each client (grad_computations, else epochs × N_c):
        the up-front count behind the time limit and the page's time estimate."""
        per_client = self.grad_computations or math.ceil(self.epochs * self.client_size)
        given = (f"grad_computations={self.grad_computations}" if self.grad_computations
                 else f"epochs={self.epochs:g} × client_size={self.client_size}")
        runs = self.clients * len(self.seeds)
        return per_client * runs, f"{given} × clients={self.clients} × {len(self.seeds)} seeds"

    def run(self, *, progress=None) -> Report:
        """Progress is per round over all seeds (a bar moves within the first seed, :class:`SeedRounds`)."""
        plan = self.plan(learning_rate=self.learning_rate, decay=self.decay, step_rule=self.step_rule)
        counter = SeedRounds(progress, plan.realised_rounds, len(self.seeds))
        return claims_report(validate_vandijk_plan(plan=plan, dataset=self.data(self.seeds[0]), clients=self.clients,
                                                   clipping_norm=self.clipping_norm, seeds=self.seeds,
                                                   on_run=counter.seed_done, progress=counter.round_done))


@dataclass(frozen=True, kw_only=True)
class ValidateTheorem5(_Validation):
    """van Dijk's Theorem 5 recipe: E||w_T - w*||² against the bound, the measured delays τ̂ against τ."""

    command: ClassVar = ("validate", "theorem5")
    summary: ClassVar = "Theorem 5's recipe: E||w_T - w*||^2 vs the bound, tau_hat vs tau"

    rounds: int = count(30, help="rounds T", low=1)
    round_threshold: int = count(1, help="round threshold d of Theorem 5's sample sizes", low=1,
                                 deprecated=("--d",))

    def run(self, *, progress=None) -> Report:
        return claims_report(validate_theorem5(dataset=self.data(self.seeds[0]), clients=self.clients,
                                               rounds=self.rounds, d=self.round_threshold, seeds=self.seeds))


#: The parts of a FedSGD-DPC validation in client updates of :func:`planner.limits.update_seconds`, measured against
#: the van Dijk engine's update in the same process (issue 20; 62 500 synthetic examples over 5 clients), then made
#: pessimistic: the constants' L-BFGS fits (one per client, one on all the data) took 0.5-1.6 updates per training
#: example; a reply is a gradient over q·d_i examples, about 100 examples an update; the Gaussian planner calibrates
#: σ once per T in 1..max_rounds, 260-460 updates each. Counted as 1 update per reply before (0.5 s estimated for a
#: Gaussian validation that ran 62.7 s on a loaded machine).
FIT_UPDATES_PER_EXAMPLE = 3
EXAMPLES_PER_UPDATE = 50
CALIBRATION_UPDATES = 1000


@dataclass(frozen=True, kw_only=True)
class ValidateFedsgdDpc(_Validation):
    """Zhou et al.'s FedSGD-DPC: E||θ_T - θ*||² against U(T, b), the spent ε against the per-client target."""

    command: ClassVar = ("validate", "fedsgd-dpc")
    summary: ClassVar = "FedSGD-DPC: E||theta_T - theta*||^2 vs U(T,b), epsilon"

    mechanism: str = choice("gaussian", help="laplace or gaussian", choices=("laplace", "gaussian"))
    target_epsilon: float = target_epsilon_field(help="per-client target ε_i", deprecated=("--epsilon",))
    target_delta: float = target_delta_field(1e-5, help="per-client target δ_i (Gaussian)", deprecated=("--delta",))
    sample_rate: float = sample_rate_field(0.5)
    rounds: int | None = count(None, help="rounds T (default: the planner's T*)", low=1)
    clients_per_round: int | None = count(None, help="clients b per round (default: the planner's b*)", low=1)
    max_rounds: int = count(200, help="cap on T of the planner's search", low=1)

    def planned_updates(self) -> tuple[int, str]:
        """The constants' fits over the n_samples·(1 − test_fraction) training examples, the Gaussian planner's σ
        calibrations (when it chooses T or b), then each seed's T rounds (rounds, else max_rounds) of b replies
        (clients_per_round, else all), each over q·d_i examples (:data:`EXAMPLES_PER_UPDATE`)."""
        examples = math.ceil(self.n_samples * (1 - self.test_fraction))
        planned = self.rounds is None or self.clients_per_round is None
        calibrations = self.max_rounds if planned and self.mechanism == "gaussian" else 0
        rounds = self.rounds or self.max_rounds
        per_round = self.clients_per_round or self.clients
        rate = self.sample_rate if self.mechanism == "gaussian" else 1.0
        reply = math.ceil(rate * examples / self.clients / EXAMPLES_PER_UPDATE)
        updates = (FIT_UPDATES_PER_EXAMPLE * examples + CALIBRATION_UPDATES * calibrations
                   + rounds * per_round * len(self.seeds) * reply)
        return updates, (f"fits on {examples} training examples, "
                         + (f"max_rounds={self.max_rounds} noise calibrations, " if calibrations else "")
                         + f"then {'rounds' if self.rounds else 'max_rounds'}={rounds} × "
                         f"{'clients_per_round' if self.clients_per_round else 'clients'}={per_round} × "
                         f"{len(self.seeds)} seeds of replies over {rate * examples / self.clients:.0f} examples")

    def run(self, *, progress=None) -> Report:
        return claims_report(validate_fedsgd_dpc(
            dataset=self.data(self.seeds[0]), clients=self.clients, mechanism=self.mechanism,
            epsilon=self.target_epsilon, delta=self.target_delta, sample_rate=self.sample_rate, rounds=self.rounds,
            clients_per_round=self.clients_per_round, max_rounds=self.max_rounds, seeds=self.seeds,
            on_run=progress))


TASKS = (ValidateVandijk, ValidateTheorem5, ValidateFedsgdDpc)
