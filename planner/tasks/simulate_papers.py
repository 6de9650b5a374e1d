"""Simulations of the other papers' algorithms: ``fedplan simulate adp2sgd|mapa|dpscd|kardam|byzantine``.

    fedplan simulate adp2sgd --preset adp2sgd-ring
    fedplan simulate adp2sgd --topology torus --workers 9 --steps 2000 --noise-to-sensitivity 2 --json
    fedplan simulate adp2sgd --validate --steps 1000 --staleness-model fixed --max-staleness 2 --seeds 0 1
    fedplan simulate mapa --preset mapa-fig2
    fedplan simulate mapa --algorithm audp --iterations 3000 --upload-epsilon 5 --validate
    fedplan simulate dpscd --preset ridge                 # DP-SCD, DP-SGD, SeqDP-SCD, PrimalDP-SCD at ε = 1
    fedplan simulate dpscd --preset svm --target-epsilon 0.5 --validate --seeds 0 1 2 --json
    fedplan simulate kardam --clients 10 --faults 3 --byzantine-workers 3 --attack sign_flip --rounds 300
    fedplan simulate byzantine --clients 19 --rule bulyan --faults 4 --attack little --rounds 100

With ``validate`` a request runs every seed of ``seeds`` and reports the paper's claims (pass/fail with margins,
:mod:`planner.validate_xu_li`, :mod:`planner.validate_damaskinos`) instead of one run.

Xu's and Li's runs use a binary source (synthetic by default) with every row scaled to unit norm and split into
equal clients (:func:`planner.simulate.adp2sgd.unit_norm_problem`): the constants of the bounds then have closed
forms.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from fedplan.planner import validate_xu_li
from fedplan.planner.limits import FLOAT_BYTES, check_memory, check_seconds, update_seconds
from fedplan.planner.simulate import adp2sgd, mapa
from fedplan.planner.simulate.adp2sgd import PRESETS as ADP2SGD_PRESETS
from fedplan.planner.simulate.adp2sgd import STALENESS, WORKER_ORDERS, unit_norm_problem
from fedplan.planner.simulate.aggregators import OLD_RULE_NAMES, RULES
from fedplan.planner.simulate.byzantine import ARRIVALS, ATTACKS, DAMPENINGS, run_byzantine_sync, run_kardam
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.dpscd import (
    ALGORITHMS,
    DPSCD_PRESETS,
    ProblemShape,
    compare_algorithms,
    make_dual_problem,
    planned_steps,
    preset_problem,
)
from fedplan.planner.simulate.dpscd import estimated_seconds as estimated_dpscd_seconds
from fedplan.planner.simulate.graphs import TOPOLOGIES, make_graph
from fedplan.planner.simulate.mapa import AUDP_STEPS, TAU_POLICIES, UPLOAD_ORDERS
from fedplan.planner.simulate.mapa import PRESETS as MAPA_PRESETS
from fedplan.planner.tasks.accounting import target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import Report, Request, choice, count, flag, real, rounds_progress, text
from fedplan.planner.tasks.simulate import (
    TABLE_KEYS,
    ClientData,
    ComputeTiming,
    DataSource,
    batch_size_field,
    claims_report,
    clipping_norm_field,
    evaluations_every,
    learning_rate_field,
    ledger_delta_field,
    seed_field,
    simulation_report,
    validate_field,
    validate_seeds_field,
)
from fedplan.planner.validate_damaskinos import validate_dpscd, validate_kardam
from fedplan.planner.validate_xu_li import validate_adp2sgd

#: ``simulate adp2sgd`` step on the mean gradient when learning_rate is not given (outside validate).
DEFAULT_LEARNING_RATE = 0.5
#: What the readable table of a DP-SCD/Kardam/Byzantine run shows.
RUN_KEYS = ("algorithm", "rounds", "final_loss", "final_accuracy", "final_dist_sq", "epsilon", "delta",
            "wall_time_s", "diverged")
#: Seeds of a validation when ``seeds`` is not given.
DEFAULT_SEEDS = (0, 1, 2)


@dataclass(frozen=True, kw_only=True)
class Validating:
    """One run of ``seed``, or with ``validate`` the paper's claims checked over ``seeds``."""

    seed: int = seed_field()
    validate: bool = validate_field()
    seeds: tuple[int, ...] | None = validate_seeds_field()

    def check(self) -> None:
        super().check()
        if self.seeds is not None and not self.validate:
            raise ValueError("seeds are the runs of validate; a single run takes seed")

    def validation_seeds(self) -> tuple[int, ...]:
        return DEFAULT_SEEDS if self.seeds is None else self.seeds



def _iterations_report(result) -> Report:
    """A run of Xu's or Li's algorithm: its staleness in the statement, no ||w - w*||^2 in the table."""
    mean_delay = result.delays["mean_delay"]  # None when the run diverged before its first iteration was recorded
    staleness = (f", staleness max {result.delays['max_delay']}, mean "
                 f"{'n/a' if mean_delay is None else f'{mean_delay:.4g}'}")
    return simulation_report(result, iterations="iterations", extra=staleness,
                             keys=tuple(key for key in TABLE_KEYS if key != "final_dist_sq"))


@dataclass(frozen=True, kw_only=True)
class SimulateAdp2sgd(Validating, ComputeTiming, DataSource, Request):
    """Xu et al.'s A(DP)²SGD: gossip on a graph, stale reads, per-worker Gaussian noise."""

    command: ClassVar = ("simulate", "adp2sgd")
    summary: ClassVar = "Xu et al. A(DP)2SGD: gossip on a graph, staleness, per-worker noise"
    progress_unit: ClassVar = "steps"
    updates_per_round: ClassVar = None  # one worker update per step

    preset: str | None = choice(None, help="a named run (its settings replace the other options but seed and "
                                "delta)", choices=tuple(ADP2SGD_PRESETS))
    dataset: str = text("synthetic", help="a binary data source (rows scaled to unit norm): a LIBSVM file, "
                        "synthetic, or a scikit-learn set such as breast_cancer")
    n_samples: int = count(4000, help="size of a synthetic data set", low=2)
    workers: int = count(8, help="number of workers K", low=1)
    topology: str = choice("ring", help="the gossip graph of the workers", choices=TOPOLOGIES)
    degree: int | None = count(None, help="neighbours per worker of topology random_regular", low=1)
    steps: int = count(2000, help="global iterations T (one worker update each)", low=1)
    batch_size: int = batch_size_field(16)
    learning_rate: float | None = learning_rate_field(None, help="step on the mean gradient (default "
                                                      f"{DEFAULT_LEARNING_RATE}; with validate: Theorem 1's largest)")
    noise_to_sensitivity: float = real(2.0, help="Xu's z (replace-one): noise std 2Gz/B on the averaged gradient",
                                       low=0.0, deprecated=("--noise-multiplier",))
    clipping_norm: float = clipping_norm_field(1.0, help="per-example clipping norm G (ℓ2)")
    staleness_model: str = choice("event", help="event (measured from compute times), fixed (τ_t = min(t, τ)) or "
                                  "uniform (on 0..min(t, τ))", choices=STALENESS, deprecated=("--staleness",))
    max_staleness: int = count(2, help="τ of the fixed and uniform staleness models", low=0)
    worker_order: str = choice("random", help="which worker updates at step t: random (Xu's k^t, xu L107) or "
                               "round_robin (t mod K, as a plan's ⌈T/K⌉ updates per worker assume; needs staleness "
                               "model fixed or uniform)", choices=WORKER_ORDERS)
    delta: float = ledger_delta_field()

    def check(self) -> None:
        super().check()
        if self.topology == "random_regular" and self.degree is None:
            raise ValueError("topology random_regular needs degree (neighbours per worker)")
        if self.worker_order == "round_robin" and self.validate:
            raise ValueError("worker_order round_robin cannot be validated here: validate checks Theorem 1, which "
                             "draws the worker at random (xu L107); give worker_order random, or run a plan's round "
                             "robin with fedplan validate plan")
        if self.worker_order == "round_robin" and self.staleness_model == "event":
            raise ValueError("worker_order round_robin needs staleness_model fixed or uniform (the event model "
                             "measures staleness from compute times, which would pick the workers); got event")

    def _options(self) -> dict:
        return {"steps": self.steps, "batch_size": self.batch_size, "noise_to_sensitivity": self.noise_to_sensitivity,
                "clipping_norm": self.clipping_norm, "staleness": self.staleness_model,
                "max_staleness": self.max_staleness, "compute": self.compute(), "delta": self.delta}

    def run(self, *, progress=None) -> Report:
        if self.preset:
            steps = ADP2SGD_PRESETS[self.preset]["steps"]
            result = adp2sgd.run_preset(self.preset, seed=self.seed, delta=self.delta,
                                        progress=rounds_progress(progress, steps))
            return _iterations_report(result)
        if self.validate:

            seeds = self.validation_seeds()
            report = validate_adp2sgd(dataset=self.data(seeds[0]), workers=self.workers, topology=self.topology,
                                      degree=self.degree, learning_rate=self.learning_rate, seeds=seeds,
                                      progress=rounds_progress(progress, self.steps), **self._options())
            return claims_report(report)
        problem = adp2sgd.unit_norm_problem(dataset=self.data(self.seed), clients=self.workers, seed=self.seed)
        graph = make_graph(topology=self.topology, workers=self.workers, degree=self.degree, seed=self.seed)
        learning_rate = DEFAULT_LEARNING_RATE if self.learning_rate is None else self.learning_rate
        result = adp2sgd.run_adp2sgd(problem=problem, graph=graph, learning_rate=learning_rate, seed=self.seed,
                                     worker_order=self.worker_order, eval_every=evaluations_every(self.steps),
                                     progress=rounds_progress(progress, self.steps), **self._options())
        return _iterations_report(result)


@dataclass(frozen=True, kw_only=True)
class SimulateMapa(Validating, ComputeTiming, DataSource, Request):
    """Li et al.'s AUDP and MAPA: edges upload to a FIFO cloud, Laplace-type noise, MAPA's stages."""

    command: ClassVar = ("simulate", "mapa")
    summary: ClassVar = "Li et al. AUDP / MAPA: edges, FIFO cloud, Laplace-type noise, stages"
    progress_unit: ClassVar = "iterations"
    updates_per_round: ClassVar = None  # one upload per iteration

    preset: str | None = choice(None, help="a named run (its settings replace the other options but seed)",
                                choices=tuple(MAPA_PRESETS))
    dataset: str = text("synthetic", help="a binary data source (rows scaled to unit norm): a LIBSVM file, "
                        "synthetic, or a scikit-learn set such as breast_cancer")
    n_samples: int = count(4000, help="size of a synthetic data set", low=2)
    algorithm: str = choice("mapa", help="mapa (staged sensitivity) or audp", choices=("mapa", "audp"))
    edges: int = count(5, help="edge servers K (the staleness bound τ_max = K, li L401)", low=1)
    iterations: int = count(4000, help="cloud updates T (one upload each)", low=1)
    batch_size: int = batch_size_field(16, help="mini-batch size b of an upload")
    upload_epsilon: tuple[float, ...] = real((5.0,), help="ε of each upload: one value or one per edge", low=0.0,
                                             low_open=True, multiple=True, deprecated=("--epsilon",))
    sensitivity_decay: float = real(0.5, help="MAPA's θ: the sensitivity ΔS is multiplied by θ from one stage to the "
                                    "next, in (0, 1)", low=0.0, high=1.0, low_open=True, high_open=True,
                                    deprecated=("--theta",))
    failure_probability: float = real(1e-3, help="Theorem 3's δ: probability that the sensitivity bound fails "
                                      "(a Chebyshev bound, not a DP δ)", low=0.0, high=1.0, low_open=True,
                                      high_open=True, deprecated=("--delta",))
    initial_clipping_norm: float = real(1.0, help="MAPA's first-stage per-sample clip C0 (ΔS_0 = 2 C0/b, li L442); "
                                        "0: Theorem 3's ΔS_0", low=0.0, deprecated=("--initial-clip",))
    step_rule: str = choice("eq10", help="AUDP's step sizes: eq10 (Eq. (10)) or constant", choices=AUDP_STEPS)
    staleness_policy: str = choice("drop", help="drop uploads staler than τ_max, or none", choices=TAU_POLICIES,
                                   deprecated=("--tau-policy",))
    upload_order: str = choice("random", help="random (edges upload when their compute_time draws end) or "
                               "round_robin (equal fixed compute times: edges upload in turn, the paper's cyclic "
                               "delays, li L401; as a plan's ⌈T/K⌉ uploads per edge assume)", choices=UPLOAD_ORDERS)

    def check(self) -> None:
        super().check()
        if len(self.upload_epsilon) not in (1, self.edges):
            raise ValueError(f"upload_epsilon must hold one value or one per edge ({self.edges}); got "
                             f"{len(self.upload_epsilon)}")
        if self.upload_order == "round_robin":
            if self.validate:
                raise ValueError("upload_order round_robin cannot be validated here (validate draws compute times "
                                 "for heterogeneous edges, li Fig. 2); give upload_order random, or run a plan's "
                                 "round robin with fedplan validate plan")
            if self.algorithm != "mapa":
                raise ValueError(f"upload_order round_robin is MAPA's; got algorithm {self.algorithm}")
            if (self.compute_time, self.compute_mean) != (ComputeTiming.compute_time, ComputeTiming.compute_mean):
                raise ValueError(f"upload_order round_robin sets every edge's compute time to one unit; leave "
                                 f"compute_time and compute_mean at their defaults (got {self.compute_time}, "
                                 f"{', '.join(f'{m:g}' for m in self.compute_mean)})")

    def _epsilon(self):
        return self.upload_epsilon[0] if len(self.upload_epsilon) == 1 else list(self.upload_epsilon)

    def run(self, *, progress=None) -> Report:
        if self.preset:
            steps = MAPA_PRESETS[self.preset]["iterations"]
            result = mapa.run_preset(self.preset, seed=self.seed, progress=rounds_progress(progress, steps))
            return _iterations_report(result)
        tick = rounds_progress(progress, self.iterations)
        if self.validate:

            seeds = self.validation_seeds()
            common = {"edges": self.edges, "iterations": self.iterations, "batch_size": self.batch_size,
                      "epsilon": self._epsilon(), "compute": self.compute(), "tau_policy": self.staleness_policy,
                      "seeds": seeds, "progress": tick}
            if self.algorithm == "audp":
                report = validate_xu_li.validate_audp(dataset=self.data(seeds[0]), step_rule=self.step_rule, **common)
            else:
                report = validate_xu_li.validate_mapa(dataset=self.data(seeds[0]), theta=self.sensitivity_decay,
                                                      delta=self.failure_probability,
                                                      initial_clip=self.initial_clipping_norm or None, **common)
            return claims_report(report)
        result = self._run(tick)
        return _iterations_report(result)

    def _run(self, progress):
        problem = unit_norm_problem(dataset=self.data(self.seed), clients=self.edges, seed=self.seed)
        common = {"epsilon": self._epsilon(), "tau_policy": self.staleness_policy, "compute": self.compute(),
                  "seed": self.seed, "eval_every": evaluations_every(self.iterations), "progress": progress}
        if self.algorithm == "audp":
            smoothness, sigma, _ = mapa.unit_logistic_constants(problem)
            return mapa.run_audp(problem=problem, iterations=self.iterations, batch_size=self.batch_size,
                                 clipping_norm=1.0, smoothness=smoothness, max_staleness=self.edges, sigma=sigma,
                                 step_rule=self.step_rule, **common)
        plan = mapa.plan_for_problem(problem, epsilon=self._epsilon(), batch_size=self.batch_size,
                                     iterations=self.iterations, theta=self.sensitivity_decay,
                                     delta=self.failure_probability, initial_clip=self.initial_clipping_norm or None)
        if self.upload_order == "round_robin":
            common["compute"] = None  # run_mapa sets the equal compute times itself
        return mapa.run_mapa(problem=problem, plan=plan, upload_order=self.upload_order, **common)


#: DP-SCD's batch sampling: ``fixed_size`` (``fixed`` is its old spelling) is the engine's ``fixed``.
DPSCD_SAMPLINGS = {"poisson": "poisson", "fixed_size": "fixed"}
OLD_FIXED = "fixed"


def _preset_default(help: str) -> str:
    return f"{help} (default: the preset's)"


@dataclass(frozen=True, kw_only=True)
class SimulateDpscd(Validating, Request):
    """DP-SCD (Damaskinos Alg. 1) against DP-SGD and the thesis' SeqDP-SCD (Alg. 3) and PrimalDP-SCD (Alg. 2)
    baselines (Fig. 6.1, L1569), each calibrated to the same target (ε, δ); their final P(θ) − P*, S(α) and
    accuracy side by side (``comparison``)."""

    command: ClassVar = ("simulate", "dpscd")
    summary: ClassVar = "DP-SCD (Damaskinos Alg. 1) vs DP-SGD, SeqDP-SCD, PrimalDP-SCD at equal (epsilon, delta)"
    progress_unit: ClassVar = "steps"

    preset: str = choice("ridge", help="data, loss and settings; the options below override them",
                         choices=tuple(DPSCD_PRESETS))
    dataset: str | None = text(None, help=_preset_default("data source"))
    regularization: float | None = real(None, help=_preset_default("L2 regularisation λ"), low=0.0, low_open=True)
    target_epsilon: float | None = target_epsilon_field(None, help=_preset_default("target ε of the four runs"),
                                                        deprecated=("--epsilon",))
    target_delta: float | None = target_delta_field(None, help=_preset_default("target δ of the four runs"),
                                                    deprecated=("--delta",))
    batch_size: int | None = batch_size_field(None, help=_preset_default("DP-SCD mini-batch size L"))
    epochs: float | None = real(None, help=_preset_default("DP-SCD and SeqDP-SCD passes over the data"), low=0.0,
                                low_open=True)
    clipping_norm: float | None = clipping_norm_field(help=_preset_default("DP-SCD update scaling bound C"))
    dpsgd_batch_size: int | None = batch_size_field(None, help=_preset_default("DP-SGD mini-batch size"))
    dpsgd_epochs: float | None = real(None, help=_preset_default("DP-SGD passes over the data"), low=0.0,
                                      low_open=True)
    dpsgd_clipping_norm: float | None = clipping_norm_field(help=_preset_default("DP-SGD clipping norm"))
    learning_rate: float | None = learning_rate_field(None, help=_preset_default("DP-SGD learning rate"))
    accountant: str = choice("ma128", help="accountant of the four calibrations: ma128 (the thesis' moments "
                             "accountant), rdp or pld", choices=("ma128", "rdp", "pld"))
    sampling: str = choice("poisson", help="how a DP-SCD step's mini-batch is drawn: poisson or fixed_size (SeqDP-SCD "
                           "always draws fixed_size, DP-SGD poisson)",
                           choices=(*DPSCD_SAMPLINGS, OLD_FIXED), metavar="{poisson,fixed_size}")

    def __post_init__(self) -> None:
        old = self.sampling == OLD_FIXED
        if old:
            object.__setattr__(self, "sampling", "fixed_size")
        super().__post_init__()
        if old:  # after the checks: a refused request's error stays the one line on stderr
            print(f"fedplan: note: sampling {OLD_FIXED} is the old spelling of fixed_size (it goes in fedplan 0.3)",
                  file=sys.stderr)

    def _data_seed(self) -> int:
        return self.validation_seeds()[0] if self.validate else self.seed

    def _settings(self) -> dict:
        """The preset's settings with the given options replacing them (no data loaded)."""
        overrides = {name: getattr(self, name) for name in (
            "target_epsilon", "target_delta", "batch_size", "epochs", "clipping_norm", "dpsgd_batch_size",
            "dpsgd_epochs", "dpsgd_clipping_norm", "learning_rate", "regularization")}
        return DPSCD_PRESETS[self.preset] | {key: value for key, value in overrides.items() if value is not None}

    def settings(self) -> tuple:
        """The dual problem and the preset's settings with the given options replacing them."""
        seed, settings = self._data_seed(), self._settings()
        if self.dataset is None and self.regularization is None:
            return preset_problem(self.preset, seed=seed)[0], settings
        data = load_dataset(self.dataset or settings["dataset"], seed=seed,
                            n_samples=settings.get("n_samples", 10_000), n_features=settings.get("n_features", 20))
        return make_dual_problem(dataset=data, loss=settings["loss"], regularization=settings["regularization"]), \
            settings

    def _runs(self) -> tuple[tuple[str, ...], int]:
        """The algorithms the request runs and how often: the four once, or DP-SCD and DP-SGD on each seed."""
        return (("dpscd", "dpsgd"), len(self.validation_seeds())) if self.validate else (ALGORITHMS, 1)

    def seconds(self, problem=None, settings=None) -> float:
        """The estimated time of :meth:`run` (:func:`planner.simulate.dpscd.estimated_seconds`) on ``problem`` and
        its ``settings``, or on the data's shape (:func:`_data_shape`: a sweep asks once per cell and per run)."""
        if problem is None:
            settings = self._settings()
            source = self.dataset or settings["dataset"]
            problem = _data_shape(source, _file_stamp(source), self._data_seed(), settings.get("n_samples", 10_000),
                                  settings.get("n_features", 20), settings["loss"])
        algorithms, runs = self._runs()
        return estimated_dpscd_seconds(problem=problem, settings=settings, algorithms=algorithms, runs=runs)

    def run(self, *, progress=None) -> Report:
        problem, s = self.settings()
        algorithms, runs = self._runs()
        check_seconds(self.seconds(problem, s), because=", ".join(
            f"{DPSCD_NAMES[name]} {_count(planned_steps(problem=problem, settings=s, algorithm=name)[0])} iterations"
            for name in algorithms) + (f", × {runs} seeds" if runs > 1 else "") +
            f" on N = {problem.examples} examples of M = {problem.features} features")
        sampling = DPSCD_SAMPLINGS[self.sampling]
        keys = ("batch_size", "epochs", "clipping_norm", "dpsgd_batch_size", "dpsgd_epochs", "dpsgd_clipping_norm",
                "learning_rate")
        if self.validate:
            return claims_report(validate_dpscd(problem=problem, target_epsilon=s["target_epsilon"],
                                              target_delta=s["target_delta"], seeds=self.validation_seeds(),
                                              accountant=self.accountant, sampling=sampling,
                                              **{key: s[key] for key in keys}))
        runs = compare_algorithms(problem=problem, settings=s, seed=self.seed, accountant=self.accountant,
                                  sampling=sampling, progress=progress)
        pair, scd, sgd = runs["calibration"], runs["dpscd"], runs["dpsgd"]
        gap = problem.optimum[1]
        statement = (f"DP-SCD: {scd.privacy['statement']} DP-SGD: {sgd.privacy['statement']} SeqDP-SCD: "
                     f"{runs['seqdpscd'].privacy['statement']} PrimalDP-SCD: "
                     f"{runs['primaldpscd'].privacy['statement']} Final P(theta) - P*: " +
                     ", ".join(f"{DPSCD_NAMES[name]} {_difference(runs[name].final.get('loss'), gap)}"
                               for name in ALGORITHMS) + ".")

        def output(full: bool) -> dict:
            out = {"preset": self.preset, "loss": problem.loss, "optimal_primal": gap,
                   "dpscd": _headline(scd, full) | {"final_suboptimality": scd.final.get("suboptimality"),
                                                    "noise_multiplier": scd.config["noise_multiplier"],
                                                    "kappa_hat": scd.config["kappa_hat"]},
                   "dpsgd": _headline(sgd, full) | {"noise_multiplier": sgd.config["noise_multiplier"]},
                   "seqdpscd": _headline(runs["seqdpscd"], full) | {
                       "final_suboptimality": runs["seqdpscd"].final.get("suboptimality"),
                       "noise_multiplier": runs["seqdpscd"].config["noise_multiplier"],
                       "noise_std": runs["seqdpscd"].config["noise_std"]},
                   "primaldpscd": _headline(runs["primaldpscd"], full) | {
                       "noise_multiplier": runs["primaldpscd"].config["noise_multiplier"],
                       "accounted_noise_multiplier": runs["primaldpscd"].config["accounted_noise_multiplier"],
                       "noise_std": runs["primaldpscd"].config["noise_std"]},
                   "comparison": {name: _side_by_side(runs[name], gap) for name in ALGORITHMS} if full else
                   {f"{name} {key}": value for name in ALGORITHMS
                    for key, value in _side_by_side(runs[name], gap).items() if value is not None},
                   "statement": statement}
            if full:
                out["calibration"] = pair.to_dict()
            return out

        return Report(values=output(True), result={**{name: runs[name] for name in ALGORITHMS},
                                                   "calibration": pair, "problem": problem}, table=output(False))


#: The thesis' names of :data:`planner.simulate.dpscd.ALGORITHMS`.
DPSCD_NAMES = {"dpscd": "DP-SCD", "dpsgd": "DP-SGD", "seqdpscd": "SeqDP-SCD", "primaldpscd": "PrimalDP-SCD"}


@lru_cache(maxsize=32)
def _data_shape(source: str, stamp, seed: int, n_samples: int, n_features: int, loss: str) -> ProblemShape:
    """N, M and the loss of a data source's training part, loaded once per source, file version (``stamp``) and
    seed: a9a takes 0.6 s to load, and a sweep's estimates would load it for every cell and run."""
    data = load_dataset(source, seed=seed, n_samples=n_samples, n_features=n_features)
    return ProblemShape(examples=int(data.X_train.shape[0]), features=int(data.X_train.shape[1]), loss=loss)


def _file_stamp(source: str):
    """A file's (modification time, size), None for a named source: a rewritten file is loaded again."""
    path = Path(source)
    if not path.is_file():
        return None
    status = path.stat()
    return status.st_mtime_ns, status.st_size


def _count(number: int) -> str:
    """An iteration count as people read it: exact below 10⁹, else three digits (epochs 1e300 has 300 of them; from
    the digits, since a count can pass the largest float)."""
    digits = str(number)
    if number < 10**9:
        return digits
    mantissa = f"{digits[0]}.{digits[1:3]}".rstrip("0").rstrip(".")
    return f"{mantissa}e+{len(digits) - 1}"


def _side_by_side(result, optimum) -> dict:
    """One algorithm's row of the comparison: ε, final P(θ) − P*, dual S(α) (dual runs) and test accuracy."""
    loss = result.final.get("loss")
    return {"epsilon": result.epsilon, "final_primal_gap": None if loss is None else loss - optimum,
            "final_suboptimality": result.final.get("suboptimality"), "final_accuracy": result.final.get("accuracy"),
            "diverged": result.diverged}


def _difference(value, optimum) -> str:
    return "n/a" if value is None else f"{value - optimum:.4g}"


def _headline(result, full: bool) -> dict:
    output = result.to_dict()
    return output if full else {key: output[key] for key in RUN_KEYS}


@dataclass(frozen=True, kw_only=True)
class Attack:
    """The faults the server assumes, the Byzantine workers there are and what they send."""

    faults: int = count(0, help="number of Byzantine workers f the server (its aggregation rule) assumes", low=0)
    byzantine_workers: int | None = count(None, help="Byzantine workers there actually are (default: faults)",
                                          low=0, deprecated=("--byzantine",))
    attack: str = choice("sign_flip", help="what a Byzantine worker sends", choices=ATTACKS)
    attack_scale: float = real(10.0, help="s of the sign_flip (-s g) and noise (N(0, s²)) attacks", low=0.0)
    batch_size: int = batch_size_field(16, help="examples per honest gradient")

    def byzantine(self) -> int:
        return self.faults if self.byzantine_workers is None else self.byzantine_workers

    def check(self) -> None:
        super().check()
        if self.byzantine_workers is not None and self.byzantine_workers >= self.clients:  # (the engine's own
            # check names its argument, byzantine)
            raise ValueError(f"byzantine_workers must be an integer in [0, {self.clients - 1}] (fewer than clients = "
                             f"{self.clients}); got {self.byzantine_workers}")
        # a round draws every worker's batch at once: its row indices and the gathered rows (with labels)
        check_memory("one round's honest mini-batches", self.clients * self.batch_size *
                     (self.features_for_time() + 2) * FLOAT_BYTES,
                     because=f"clients={self.clients} × batch_size={self.batch_size}")


#: Client updates of time one Kardam push costs in the up-front estimate (planner/limits.py prices an update at
#: 4e-5 + 2e-7·d s): a push is a Python step through both filters, measured at 0.27 ms (d = 20) and 0.35 ms (d = 300)
#: against 0.044 and 0.1 ms an update, ratios 6.1 and 3.5. The estimate had taken a push as one update, so
#: gradients_per_step = 871, rounds = 4 (174 300 pushes) passed a 15 s limit as 7.7 s and ran 51 s.
KARDAM_PUSH_UPDATES = 8


@dataclass(frozen=True, kw_only=True)
class SimulateKardam(Validating, Attack, ClientData, Request):
    """Asynchronous SGD with Kardam's filters and staleness dampening."""

    command: ClassVar = ("simulate", "kardam")
    summary: ClassVar = "asynchronous SGD with Kardam's filters and dampening"

    rounds: int = count(300, help="model updates", low=1)
    learning_rate: float = learning_rate_field(0.5, help="learning rate γ")
    gradients_per_step: int = count(1, help="gradients R per model update", low=1)
    dampening: str = choice("inverse", help="staleness dampening Λ(τ)", choices=DAMPENINGS)
    dampening_rate: float = real(0.2, help="a of the exponential dampening exp(-a τ)", low=0.0)
    staleness_threshold: float | None = real(None, help="AdaSGD's τ_thres (default: 99.7% of the staleness seen)",
                                             low=0.0, low_open=True, deprecated=("--tau-thres",))
    adaptive_rate: bool = flag(help="learning rate γ_t = γ·φ_t (Eq. 5.2)")
    no_filters: bool = flag(help="no Kardam filters (plain dampened asynchronous SGD)")
    arrivals: str = choice("event", help="the order gradients arrive in: event (compute times), iid or round_robin",
                           choices=ARRIVALS)

    def planned_updates(self) -> tuple[int, str]:
        """Kardam's filters may reject most pushes: the engine stops at 50·R·rounds + 10·N of them
        (planner.simulate.byzantine.run_kardam), which bounds the work; per seed when validating. Each push costs
        :data:`KARDAM_PUSH_UPDATES` client updates of the time estimate (a Python step through both filters)."""
        runs = len(self.validation_seeds()) if self.validate else 1
        pushes = 50 * self.gradients_per_step * self.rounds + 10 * self.clients
        return pushes * runs * KARDAM_PUSH_UPDATES, (
            f"up to 50 × gradients_per_step={self.gradients_per_step} × rounds={self.rounds} pushes"
            + (f" × {runs} seeds" if runs > 1 else "") + f" at {KARDAM_PUSH_UPDATES} client updates' time each")

    def run(self, *, progress=None) -> Report:
        seeds = self.validation_seeds()
        problem = self.problem(seeds[0] if self.validate else self.seed, with_optimum=True)
        options = {"batch_size": self.batch_size, "gradients_per_step": self.gradients_per_step,
                   "dampening": self.dampening, "dampening_rate": self.dampening_rate,
                   "tau_thres": self.staleness_threshold, "adaptive_rate": self.adaptive_rate,
                   "attack_scale": self.attack_scale}
        if self.validate:
            return claims_report(validate_kardam(problem=problem, rounds=self.rounds, learning_rate=self.learning_rate,
                                               faults=self.faults, byzantine=self.byzantine(), attack=self.attack,
                                               arrivals=self.arrivals, seeds=seeds, **options))
        result = run_kardam(problem=problem, rounds=self.rounds, learning_rate=self.learning_rate, faults=self.faults,
                            byzantine=self.byzantine(), attack=self.attack, arrivals=self.arrivals,
                            filters=not self.no_filters, seed=self.seed, eval_every=max(1, self.rounds // 50),
                            progress=rounds_progress(progress, self.rounds), **options)
        rates = result.config["filters"]
        statement = (f"Kardam with n = {problem.n_clients}, f = {self.faults}, {self.byzantine()} Byzantine "
                     f"({self.attack}), {self.arrivals} arrivals, {self.dampening} dampening: "
                     f"{result.config['updates']} updates from {result.config['pushes']} pushes. "
                     + result.privacy["statement"])

        def output(full: bool) -> dict:
            out = _headline(result, full)
            if rates is not None:
                out["filters"] = rates if full else {key: value for key, value in rates.items() if key != "counts"}
            out["stalled"] = result.config["stalled"]
            out["statement"] = statement
            return out

        return Report(values=output(True), result=result, table=output(False))


#: Seconds of one example of an honest batch in ``simulate byzantine`` (its gradient, clipping and the gather), a
#: fixed part and one per feature: measured 0.41, 2.4 and 6.0 µs at 20, 300 and 1 000 features (batch 20 000,
#: 10 workers, Multi-Krum), taken as about twice that.
BYZANTINE_EXAMPLE_SECONDS = (4e-7, 1.2e-8)


@dataclass(frozen=True, kw_only=True)
class SimulateByzantine(Attack, ClientData, Request):
    """Synchronous SGD whose server aggregates with Krum, Multi-Krum, Bulyan or averaging."""

    command: ClassVar = ("simulate", "byzantine")
    summary: ClassVar = "synchronous SGD with Krum / Multi-Krum / Bulyan / averaging"

    seed: int = seed_field()
    rule: str = choice("multi-krum", help="the server's aggregation rule (GAR); average is the old name of averaging",
                       choices=(*RULES, *OLD_RULE_NAMES))
    rounds: int = count(100, help="rounds", low=1)
    learning_rate: float = learning_rate_field(0.5, help="learning rate η")

    def planned_updates(self) -> tuple[int, str]:
        """Client updates of the time estimate: one per worker and round, plus its batch's gradients at
        :data:`BYZANTINE_EXAMPLE_SECONDS` each, counted in updates of :func:`~planner.limits.update_seconds`."""
        features = self.features_for_time()
        per_example = BYZANTINE_EXAMPLE_SECONDS[0] + BYZANTINE_EXAMPLE_SECONDS[1] * features
        updates = self.rounds * self.clients * (1 + self.batch_size * per_example / update_seconds(1, features))
        return math.ceil(updates), (f"rounds={self.rounds} × clients={self.clients} gradients of batch_size="
                                    f"{self.batch_size} examples")

    def run(self, *, progress=None) -> Report:
        problem = self.problem(self.seed, with_optimum=True)
        result = run_byzantine_sync(problem=problem, rule=self.rule, rounds=self.rounds,
                                    learning_rate=self.learning_rate, faults=self.faults,
                                    byzantine=self.byzantine_workers, attack=self.attack,
                                    attack_scale=self.attack_scale, batch_size=self.batch_size, seed=self.seed,
                                    eval_every=max(1, self.rounds // 50),
                                    progress=rounds_progress(progress, self.rounds))
        statement = (f"{self.rule} with n = {problem.n_clients} workers, f = {self.faults}, "
                     f"{result.config['byzantine']} Byzantine ({self.attack}). " + result.privacy["statement"])
        return Report(values=_headline(result, True) | {"statement": statement}, result=result,
                      table=_headline(result, False) | {"statement": statement})


TASKS = (SimulateAdp2sgd, SimulateMapa, SimulateDpscd, SimulateKardam, SimulateByzantine)
