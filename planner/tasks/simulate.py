"""Backing simulations: ``fedplan simulate vandijk|fedsgd-dpc|fedbuff|preset`` (event engine, DP ledger).

    fedplan simulate fedbuff --dataset synthetic --clients 100 --rounds 500 --sample-rate 0.01 \\
        --clipping-norm 1 --noise-multiplier 1 --json
    fedplan simulate vandijk --dataset phishing.libsvm --clients 5 --rounds 40 --initial-size 16 \\
        --growth 1.3216 --learning-rate 0.15 --decay 0.001 --clipping-norm 0.1 --noise-multiplier 8
    fedplan simulate vandijk --dataset w8a.libsvm --clients 5 --schedule plan.json --clipping-norm 0.1
    fedplan simulate fedsgd-dpc --dataset breast_cancer --clients 10 --rounds 50 --clients-per-round 5 \\
        --mechanism gaussian --target-epsilon 2 --clipping-norm 1 --sample-rate 0.2 --learning-rate 0.5
    fedplan simulate preset vandijk-dp            # van Dijk et al.'s DP experiment on w8a (and vandijk-dp-constant)

The option sets every simulation shares are small dataclass mixins, written once: :class:`DataSource` (where the
data come from), :class:`ClientData` (how they are split over clients and which model is trained),
:class:`ComputeTiming`/:class:`Timing` (the engine's clocks) and :class:`Evaluation` (how often the model is
evaluated, the accountant of the ledger). The other papers' simulations are in
:mod:`~fedplan.planner.tasks.simulate_papers`, the validations in :mod:`~fedplan.planner.tasks.validate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from fedplan.planner.export import load_schedule_file
from fedplan.planner.limits import FLOAT_BYTES, check_file, check_memory, check_seconds, check_time, update_seconds
from fedplan.planner.simulate.data import SCHEMES, SKLEARN_SETS, SYNTHETIC_SETS, load_dataset
from fedplan.planner.simulate.engine import DISTRIBUTIONS, Durations
from fedplan.planner.simulate.fedbuff import STALENESS_WEIGHTS, run_fedbuff
from fedplan.planner.simulate.fedsgd_dpc import MECHANISMS, run_fedsgd_dpc
from fedplan.planner.simulate.presets import PRESETS as VANDIJK_PRESETS
from fedplan.planner.simulate.presets import run_preset
from fedplan.planner.simulate.problem import make_problem
from fedplan.planner.simulate.vandijk import SAMPLINGS as VANDIJK_SAMPLINGS
from fedplan.planner.simulate.vandijk import WAIT_RULES, inputs_from_schedule, run_vandijk
from fedplan.planner.tasks.accounting import target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import OneOf, Report, Request, choice, count, flag, real, rounds_progress, text
from fedplan.planner.vandijk import STEP_RULES, round_step_sizes

DATA_SOURCES = "a LIBSVM file, synthetic, synthetic-softmax, synthetic-linear, or a scikit-learn set " \
               "(breast_cancer, iris, wine, digits, diabetes)"
#: Default number of rounds whose loss/accuracy are evaluated (a full pass over the data each).
EVALUATIONS = 50
#: What the readable table of a simulation shows (``--json`` carries everything, with the per-round records).
TABLE_KEYS = ("algorithm", "rounds", "final_loss", "final_accuracy", "final_dist_sq", "epsilon", "delta",
              "wall_time_s", "virtual_time", "diverged", "divergence", "statement")
MODELS = ("logistic", "softmax", "ridge")
#: Run time of each preset on w8a (24 s and 7 s measured alone here, start-up included; doubled) and of its
#: optional w* solve.
PRESET_SECONDS = {"vandijk-dp": 50.0, "vandijk-dp-constant": 15.0}
#: Bytes of LIBSVM's w8a.libsvm, the file the presets are timed on.
W8A_BYTES = 3_478_239
OPTIMUM_SECONDS = 10.0
#: The client partitions a user can ask for (``sizes`` is the validations' own).
#: Copies of a synthetic data set alive at once (the draw, the train/test split, the clients' blocks, slack).
SYNTHETIC_COPIES = 4
#: Bytes of one client's bookkeeping (its arrays' headers, timers, queues) beyond its data.
CLIENT_BYTES = 4096
PARTITIONS = tuple(scheme for scheme in SCHEMES if scheme != "sizes")


def evaluations_every(rounds: int, given: int | None = None) -> int:
    """``given``, or the interval that evaluates about :data:`EVALUATIONS` rounds of ``rounds``."""
    return max(1, math.ceil(rounds / EVALUATIONS)) if given is None else given


# --- field declarations shared by the simulation, validation and sweep requests

def seed_field():
    return count(0, help="seed of the data split and the run", low=0)


def seeds_field(default=(0, 1, 2), help="seeds of the runs whose claims are checked"):
    return count(default, help=help, low=0, multiple=True)


def validate_seeds_field():
    return seeds_field(None, help="with validate: the seeds whose runs are checked (default 0 1 2)")


def validate_field(help="run every seed of seeds and check the paper's claims instead of one run"):
    return flag(help=help)


def learning_rate_field(default, help="learning rate η (step size)"):
    return real(default, help=help, low=0.0, low_open=True)


def clipping_norm_field(default=None, help="per-example clipping norm C (ℓ2)"):
    return real(default, help=help, low=0.0, low_open=True)


def noise_multiplier_field(default=0.0, help="noise multiplier σ = noise std / clipping norm (0: no noise)"):
    return real(default, help=help, low=0.0)


def ledger_delta_field(default=1e-5):
    return real(default, help="δ at which the run's ε is reported, in (0, 1)", low=0.0, high=1.0, low_open=True,
                high_open=True)


def batch_size_field(default, help="mini-batch size B per update"):
    return count(default, help=help, low=1)


def sample_rate_field(default, help="Poisson sampling probability q of each local example per update, in (0, 1]"):
    return real(default, help=help, low=0.0, high=1.0, low_open=True, flags=("-q",))


def clients_field(default=10):
    return count(default, help="number of clients N", low=1)


def ledger_accountant_field():
    return choice("rdp", help="accountant of the run's ledger: rdp (fast) or pld (tight)", choices=("rdp", "pld"))


def optimum_field(help="compute w* (L-BFGS) to report ||w - w*||^2"):
    return flag(help=help)


def estimated_seconds(request) -> float:
    """A request's estimated run time (0 for one that is not a simulation), as its checks estimated it."""
    if hasattr(request, "seconds"):  # SimulatePreset's measured time, SimulateDpscd's from its iterations
        return request.seconds()
    updates, _ = simulated_updates(request)
    return update_seconds(updates, request.features_for_time()) if updates and hasattr(request, "features_for_time") \
        else 0.0


def simulated_updates(request) -> tuple[int, str]:
    """The client updates a simulation or validation will compute, and the inputs that say so (0 when its length
    comes from a schedule file or a preset, which bound it themselves).

    Rounds are the ``rounds``, ``steps`` or ``iterations`` field; each computes as many updates as the field the
    class names in ``updates_per_round`` (None: one update per round), by default the first of buffer_size,
    clients_per_round, clients that is set; a validation repeats the run for each seed.
    """
    if hasattr(request, "planned_updates"):
        return request.planned_updates()
    rounds_name = next((name for name in ("rounds", "steps", "iterations") if getattr(request, name, None)), None)
    if rounds_name is None:
        return 0, ""
    if hasattr(type(request), "updates_per_round"):
        per_round_name = type(request).updates_per_round
    else:
        per_round_name = next((name for name in ("buffer_size", "clients_per_round", "clients")
                               if getattr(request, name, None)), None)
    per_round = getattr(request, per_round_name) if per_round_name else 1
    if getattr(request, "validate", False):
        runs = len(request.validation_seeds())
    else:
        runs = len(getattr(request, "seeds", None) or (0,))
    parts = [f"{rounds_name}={getattr(request, rounds_name)}"]
    if per_round_name:
        parts.append(f"{per_round_name}={per_round}")
    if runs > 1:
        parts.append(f"{runs} seeds")
    return getattr(request, rounds_name) * per_round * runs, " × ".join(parts)


# --- option sets (mixins)

@dataclass(frozen=True, kw_only=True)
class DataSource:
    """Where the data come from: a file, a synthetic draw or a scikit-learn set, with a held-out test part."""

    dataset: str = text("synthetic", help=DATA_SOURCES)
    test_file: str | None = text(None, help="a separate LIBSVM test file (default: hold out test_fraction)",
                                 metavar="FILE")
    test_fraction: float = real(0.2, help="share of the data held out for testing, in [0, 1)", low=0.0, high=1.0,
                                high_open=True)
    n_samples: int = count(10_000, help="size of a synthetic data set", low=2)
    n_features: int = count(20, help="features of a synthetic data set", low=1)

    def check(self) -> None:
        super().check()
        if self.dataset not in SYNTHETIC_SETS and self.dataset not in SKLEARN_SETS:
            if not Path(self.dataset).is_file():
                names = ", ".join(SYNTHETIC_SETS + tuple(SKLEARN_SETS))
                raise ValueError(f"dataset must be one of {names} or the path of an existing LIBSVM file; got "
                                 f"{self.dataset!r}")
            check_file("dataset", self.dataset)
        if self.test_file is not None:
            check_file("test_file", self.test_file)
        if self.dataset in SYNTHETIC_SETS:  # a file's size is checked by its reader, scikit-learn's sets are small
            size = SYNTHETIC_COPIES * FLOAT_BYTES * self.n_samples * (self.n_features + 1)
            check_memory("the synthetic data set", size,
                         because=f"n_samples={self.n_samples} × n_features={self.n_features}")
        updates, because = simulated_updates(self)
        if updates:
            check_time(updates, self.features_for_time(), because=because)

    def features_for_time(self) -> int:
        """The features the time estimate assumes: a synthetic set's, else a wide file's 1 000."""
        return self.n_features if self.dataset in SYNTHETIC_SETS else 1000

    def data(self, seed: int):
        """The :class:`~fedplan.planner.simulate.data.Dataset` of this source, split with ``seed``."""
        return load_dataset(self.dataset, seed=seed, test_fraction=self.test_fraction, test_file=self.test_file,
                            n_samples=self.n_samples, n_features=self.n_features)


@dataclass(frozen=True, kw_only=True)
class ClientData(DataSource):
    """The data split over clients and the model trained on them."""

    clients: int = clients_field()
    partition: str = choice("iid", help="how the examples are split over the clients: iid, label (each client "
                            "holds classes_per_client classes) or dirichlet (class shares drawn with dirichlet_alpha)",
                            choices=PARTITIONS)
    dirichlet_alpha: float | None = real(None, help="concentration α of the Dirichlet class shares (partition "
                                         "dirichlet; small: skewed)", low=0.0, low_open=True, deprecated=("--alpha",))
    classes_per_client: int = count(2, help="classes per client with partition label", low=1)
    model: str | None = choice(None, help="the model trained (default: from the labels: binary logistic, classes "
                               "softmax, reals ridge)", choices=MODELS)
    regularization: float | None = real(None, help="L2 regularisation coefficient ρ (default 1/n_train)", low=0.0)

    def check(self) -> None:
        super().check()
        check_memory("the clients' arrays", CLIENT_BYTES * self.clients, because=f"clients={self.clients}")
        if self.partition == "dirichlet" and self.dirichlet_alpha is None:
            raise ValueError("partition dirichlet needs dirichlet_alpha (the concentration, e.g. 0.5)")

    def problem(self, seed: int, *, with_optimum: bool = False):
        """The :class:`~fedplan.planner.simulate.problem.Problem`: the data of ``seed`` over the clients."""
        return make_problem(dataset=self.data(seed), clients=self.clients, seed=seed, scheme=self.partition,
                            model=self.model, regularization=self.regularization, with_optimum=with_optimum,
                            alpha=self.dirichlet_alpha, classes_per_client=self.classes_per_client)


@dataclass(frozen=True, kw_only=True)
class ComputeTiming:
    """How long one local computation takes (the engine's clock)."""

    compute_time: str = choice("exponential", help="distribution of one local computation's time",
                               choices=DISTRIBUTIONS)
    compute_mean: tuple[float, ...] = real((1.0,), help="its mean: one value, or one per client (worker, edge)",
                                           low=0.0, multiple=True)

    def check(self) -> None:
        super().check()
        units = next((name for name in ("clients", "workers", "edges") if getattr(self, name, None)), None)
        if units is not None and len(self.compute_mean) not in (1, getattr(self, units)):
            raise ValueError(f"compute_mean must have one value, or one per client ({units}={getattr(self, units)}); "
                             f"got {len(self.compute_mean)}")

    def compute(self):
        means = self.compute_mean[0] if len(self.compute_mean) == 1 else tuple(self.compute_mean)
        return Durations(self.compute_time, means)


@dataclass(frozen=True, kw_only=True)
class Timing(ComputeTiming):
    """Computation times and the up- and down-link latencies."""

    latency: str = choice("exponential", help="distribution of up- and down-link latencies", choices=DISTRIBUTIONS)
    latency_mean: float = real(10.0, help="mean latency (in the time unit of compute_mean)", low=0.0)

    def timing(self) -> dict:
        """The engine's ``compute``, ``uplink`` and ``downlink`` duration models."""
        latency = Durations(self.latency, self.latency_mean)
        return {"compute": self.compute(), "uplink": latency, "downlink": latency}


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """How often the model is evaluated and how the run's ledger is accounted."""

    eval_every: int | None = count(None, help="evaluate loss/accuracy every this many rounds (default: about "
                                   f"{EVALUATIONS} evaluations per run)", low=1)
    accountant: str = ledger_accountant_field()
    optimum: bool = optimum_field()

    def evaluation(self, rounds: int) -> dict:
        return {"eval_every": evaluations_every(rounds, self.eval_every), "accountant": self.accountant}


def simulation_report(result, *, iterations: str = "rounds", extra: str = "", keys=TABLE_KEYS) -> Report:
    """The JSON output of a run (its ``to_dict`` with records) and the headline (``keys``) the table shows."""
    values = result.to_dict()
    values["statement"] = (f"{result.algorithm}: {result.rounds} {iterations} in {result.wall_time_s:.2f} s "
                           f"(virtual time {result.virtual_time:.6g}{extra}). " + values["statement"])
    return Report(values=values, result=result, table={key: values[key] for key in keys})


def claims_report(report) -> Report:
    """A :class:`~fedplan.planner.validate.ValidationReport`: everything with ``--json``, the claims in the table."""
    return Report(values=report.summary(full=True), result=report, table=report.summary(full=False))


def schedule_rows(path: str | None):
    """The per-round rows of a schedule file exported by fedplan, or None."""
    if path is None:
        return None

    return load_schedule_file(path)


SCHEDULE_HELP = "a JSON/YAML schedule exported by fedplan (per-round values; gives the rounds)"


@dataclass(frozen=True, kw_only=True)
class _Simulation(Evaluation, Timing, ClientData, Request):
    """A simulation on client data, with the engine's clocks and an evaluated ledger."""

    seed: int = seed_field()


@dataclass(frozen=True, kw_only=True)
class SimulateVandijk(_Simulation):
    """van Dijk et al.'s Algorithms 1-4: increasing local sample sizes, asynchronous rounds, a DP ledger."""

    command: ClassVar = ("simulate", "vandijk")
    summary: ClassVar = "van Dijk et al. Algorithms 1-4 (increasing sample sizes)"
    one_of: ClassVar = (OneOf(("rounds", "schedule")),)

    rounds: int | None = count(None, help="rounds T (or give a schedule)", low=1)
    schedule: str | None = text(None, help=SCHEDULE_HELP, metavar="FILE")
    initial_size: int = count(16, help="initial local sample size s_{0,c} (local iterations in round 0)", low=1,
                              deprecated=("--sample-size",))
    growth: float = real(0.0, help="s_{i,c} = initial_size + ceil(growth·i): local iterations added per round",
                         low=0.0)
    learning_rate: float = learning_rate_field(0.1, help="η0 of the step size η_t = η0/(1+βt) (or η0/(1+β√t))")
    decay: float = real(0.0, help="β of the step size η0/(1+βt)", low=0.0)
    step_rule: str = choice("inverse", help="inverse: η0/(1+βt), inverse-sqrt: η0/(1+β√t)", choices=STEP_RULES)
    noise_multiplier: float = noise_multiplier_field(help="noise multiplier σ per round (noise N(0, C²σ²I) on each "
                                                     "client's sum of clipped gradients; 0: no noise)")
    clipping_norm: float | None = clipping_norm_field()
    sampling: str = choice("with_replacement", help="how a client draws its local examples: with_replacement "
                           "(the paper's) or poisson", choices=VANDIJK_SAMPLINGS)
    wait_rule: str = choice("none", help="when the server waits for a client's late messages (van Dijk "
                            "Algorithms 1-4; exact/alg1_literal/alg4_literal need permissible_delay, the d_round rules "
                            "round_threshold)", choices=WAIT_RULES)
    permissible_delay: float | None = real(None, help="constant permissible delay τ (in local iterations) of the "
                                           "wait rule", low=0.0, deprecated=("--tau",))
    round_threshold: int = count(1, help="round threshold d of the d_round wait rules", low=1, deprecated=("--d",))
    delta: float = ledger_delta_field()

    def round_sizes(self) -> list[int]:
        """s_i = initial_size + ⌈growth·i⌉, the local iterations of round i (without a schedule)."""
        return [self.initial_size + math.ceil(self.growth * i - 1e-9) for i in range(self.rounds)]

    def planned_updates(self) -> tuple[int, str]:
        """Every client makes s_i local iterations in round i (van Dijk Algorithm 1), each a client update of the
        time estimate: Σ_i s_i × clients. A schedule's sample_size column gives s_i; its sample_rate column gives
        ⌈q·N_c⌉ on a synthetic set's N_c (another data set's size is known only once loaded: one iteration a round
        is counted there)."""
        schedule = schedule_rows(self.schedule)
        if schedule is None:
            sizes, source = self.round_sizes(), f"rounds={self.rounds}"
        else:
            rows, source = schedule.rows(), f"the schedule's {schedule.rounds} rounds"
            if "sample_size" in rows[0]:
                sizes = [int(row["sample_size"]) for row in rows]
            else:
                per_client = self.n_samples // self.clients if self.dataset in SYNTHETIC_SETS else 1
                sizes = [max(1, math.ceil(float(row.get("sample_rate", 0.0)) * per_client - 1e-9)) for row in rows]
        total = sum(sizes)
        return total * self.clients, (f"{source} of Σ s_i = {total} local iterations per client × "
                                      f"clients={self.clients}")

    def run(self, *, progress=None) -> Report:
        problem = self.problem(self.seed, with_optimum=self.optimum)
        schedule = schedule_rows(self.schedule)
        if schedule is not None:
            rounds = schedule.rounds
            inputs = inputs_from_schedule(schedule, problem.client_sizes)
        else:
            rounds = self.rounds
            sizes = self.round_sizes()
            inputs = {"sizes": sizes, "noise_multiplier": self.noise_multiplier,
                      "step_sizes": round_step_sizes(sizes, learning_rate=self.learning_rate, decay=self.decay,
                                                     rule=self.step_rule)}
        tau = None if self.permissible_delay is None else (lambda t, value=self.permissible_delay: t * 0.0 + value)
        result = run_vandijk(problem=problem, **inputs, clipping_norm=self.clipping_norm, sampling=self.sampling,
                             wait_rule=self.wait_rule, tau=tau, d=self.round_threshold, seed=self.seed,
                             delta=self.delta, progress=rounds_progress(progress, rounds), **self.evaluation(rounds),
                             **self.timing())
        return simulation_report(result)


@dataclass(frozen=True, kw_only=True)
class SimulateFedsgdDpc(_Simulation):
    """Zhou et al.'s FedSGD-DPC: b of N clients per round, each adding Laplace or Gaussian noise."""

    command: ClassVar = ("simulate", "fedsgd-dpc")
    summary: ClassVar = "Zhou et al. FedSGD-DPC (b of N clients per round)"
    one_of: ClassVar = (OneOf(("rounds", "schedule")),)

    rounds: int | None = count(None, help="rounds T (or give a schedule)", low=1)
    schedule: str | None = text(None, help=SCHEDULE_HELP + "; its learning_rate, noise_multiplier or noise_scale "
                                "columns replace the options", metavar="FILE")
    clients_per_round: int = count(..., help="clients b selected per round", low=1)
    mechanism: str = choice("gaussian", help="laplace (full local data, ℓ1 clipping ξ₁), gaussian (Poisson "
                            "sample_rate, ℓ2 clipping ξ₂) or none", choices=MECHANISMS)
    target_epsilon: float | None = target_epsilon_field(None, help="per-client target ε_i: the noise is calibrated "
                                                        "for the horizon T (or give the noise itself)",
                                                        deprecated=("--epsilon",))
    target_delta: float = target_delta_field(1e-5, help="per-client target δ_i of the Gaussian calibration, and the "
                                             "δ at which the run's ε is reported", deprecated=("--delta",))
    noise_multiplier: float | None = noise_multiplier_field(None, help="Gaussian noise multiplier z (noise std "
                                                            "z·ξ₂ on a client's clipped sum) instead of target_epsilon")
    noise_scale: float | None = real(None, help="Laplace noise scale instead of target_epsilon", low=0.0)
    clipping_norm: float | None = clipping_norm_field(help="ξ₁ (Laplace, ℓ1) or ξ₂ (Gaussian, ℓ2)")
    sample_rate: float = sample_rate_field(1.0, help="Gaussian mechanism: Poisson sampling probability q of each "
                                           "local example per round, in (0, 1]")
    selection: str = choice("uniform", help="how the b clients of a round are chosen",
                            choices=("uniform", "round_robin", "shuffle_partition"))
    learning_rate: float = learning_rate_field(0.1, help="constant step size η_t")

    def check(self) -> None:
        super().check()
        other = {"gaussian": "noise_scale", "laplace": "noise_multiplier"}.get(self.mechanism)
        if other is not None and self.given(other):
            raise ValueError(f"{other} is not a noise of mechanism {self.mechanism}")
        if self.schedule is None:  # a schedule may carry the noise: checked when it is read
            self._check_noise(self.noise_multiplier if self.mechanism == "gaussian" else self.noise_scale)

    def _check_noise(self, noise) -> None:
        if self.mechanism == "none":
            return
        name = "noise_multiplier" if self.mechanism == "gaussian" else "noise_scale"
        if (self.target_epsilon is None) == (noise is None):
            raise ValueError(f"give exactly one of target_epsilon (calibrated noise) and {name} (or a schedule "
                             f"with a {name} column) for mechanism {self.mechanism}")

    def run(self, *, progress=None) -> Report:
        problem = self.problem(self.seed, with_optimum=self.optimum)
        schedule = schedule_rows(self.schedule)
        rounds = self.rounds if schedule is None else schedule.rounds
        options = {"step_sizes": self.learning_rate, "noise_multiplier": self.noise_multiplier,
                   "noise_scale": self.noise_scale}
        if schedule is not None:
            rows = schedule.rows()
            for key, column in (("step_sizes", "learning_rate"), ("noise_multiplier", "noise_multiplier"),
                                ("noise_scale", "noise_scale")):
                if column in rows[0]:
                    options[key] = [row[column] for row in rows]
            self._check_noise(options["noise_multiplier" if self.mechanism == "gaussian" else "noise_scale"])
        result = run_fedsgd_dpc(problem=problem, rounds=rounds, clients_per_round=self.clients_per_round,
                                mechanism=self.mechanism, clipping_norm=self.clipping_norm,
                                sample_rate=self.sample_rate, epsilon=self.target_epsilon, delta=self.target_delta,
                                selection=self.selection, seed=self.seed, progress=rounds_progress(progress, rounds),
                                **options, **self.evaluation(rounds), **self.timing())
        return simulation_report(result)


@dataclass(frozen=True, kw_only=True)
class SimulateFedbuff(_Simulation):
    """FedBuff: buffered asynchronous aggregation with staleness weights and client-side noise."""

    command: ClassVar = ("simulate", "fedbuff")
    summary: ClassVar = "FedBuff buffered asynchronous aggregation"

    rounds: int = count(100, help="server updates (each aggregates buffer_size client updates)", low=1)
    sample_rate: float = sample_rate_field(0.01)
    buffer_size: int = count(10, help="client updates K aggregated per server update", low=1)
    server_lr: float = real(1.0, help="server step size η of w ← w − η Σ ω_j Δ_j / K", low=0.0, low_open=True)
    clipping_norm: float | None = clipping_norm_field()
    noise_multiplier: float = noise_multiplier_field(help="client noise multiplier σ (noise std σC on the clipped "
                                                     "sum; 0: no noise)")
    staleness_weighting: str = choice("polynomial", help="weight ω(s) of an update of staleness s: constant, "
                                      "polynomial (1+s)^-a or threshold", choices=STALENESS_WEIGHTS,
                                      deprecated=("--staleness",))
    staleness_exponent: float = real(0.5, help="a of the polynomial weight (1+s)^-a", low=0.0)
    staleness_cutoff: int = count(10, help="staleness above which the threshold weight is 0", low=0)
    delta: float = ledger_delta_field()

    def run(self, *, progress=None) -> Report:
        result = run_fedbuff(problem=self.problem(self.seed, with_optimum=self.optimum), rounds=self.rounds,
                             sample_rate=self.sample_rate, buffer_size=self.buffer_size, server_lr=self.server_lr,
                             clipping_norm=self.clipping_norm, noise_multiplier=self.noise_multiplier,
                             staleness=self.staleness_weighting, staleness_exponent=self.staleness_exponent,
                             staleness_cutoff=self.staleness_cutoff, seed=self.seed, delta=self.delta,
                             progress=rounds_progress(progress, self.rounds), **self.evaluation(self.rounds),
                             **self.timing())
        return simulation_report(result)


#: Rounds of each preset run (for the progress bar).
PRESET_ROUNDS = {"vandijk-dp": 183, "vandijk-dp-constant": 1563}


@dataclass(frozen=True, kw_only=True)
class SimulatePreset(Request):
    """A named experiment: van Dijk et al.'s DP run on w8a with increasing or constant sample sizes."""

    command: ClassVar = ("simulate", "preset")
    summary: ClassVar = "a named experiment (vandijk-dp, vandijk-dp-constant)"

    preset: str = choice(..., help="vandijk-dp (increasing sizes) or vandijk-dp-constant", choices=VANDIJK_PRESETS,
                         positional=True)
    dataset: str | None = text(None, help="path of LIBSVM's w8a.libsvm (default: in $FEDPLAN_DATA_DIR, or the "
                               "shared/data folder beside a checkout)", metavar="FILE")
    seed: int = seed_field()
    optimum: bool = optimum_field(help="compute w* too (~5 s more) to report ||w - w*||^2")
    accountant: str = ledger_accountant_field()

    def check(self) -> None:
        super().check()
        if self.dataset is not None:
            if not Path(self.dataset).is_file():
                raise ValueError(f"dataset must be the path of a LIBSVM file such as w8a.libsvm (the preset is van "
                                 f"Dijk's w8a experiment, timed on w8a); got {self.dataset!r}")
            check_file("dataset", self.dataset)
        check_seconds(self.seconds(), because=f"preset {self.preset}" + (" with optimum" if self.optimum else "")
                      + (f" on {self.dataset}" if self.dataset else ""))

    def seconds(self) -> float:
        """Measured here on w8a (loading, the run, its ledger), with margin: :data:`PRESET_SECONDS`; on another
        file, scaled up by its size against w8a's :data:`W8A_BYTES` (its nonzeros, which the gradients read)."""
        scale = max(1.0, Path(self.dataset).stat().st_size / W8A_BYTES) if self.dataset else 1.0
        return scale * PRESET_SECONDS[self.preset] + (OPTIMUM_SECONDS if self.optimum else 0.0)

    def run(self, *, progress=None) -> Report:
        result = run_preset(self.preset, dataset=self.dataset, seed=self.seed, accountant=self.accountant,
                            with_optimum=self.optimum,
                            progress=rounds_progress(progress, PRESET_ROUNDS.get(self.preset, 1)))
        return simulation_report(result)


TASKS = (SimulateVandijk, SimulateFedsgdDpc, SimulateFedbuff, SimulatePreset)
