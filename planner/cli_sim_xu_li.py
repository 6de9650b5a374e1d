"""``fedplan simulate adp2sgd …`` and ``fedplan simulate mapa …``: Xu et al.'s and Li et al.'s algorithms.

    fedplan simulate adp2sgd --preset adp2sgd-ring
    fedplan simulate adp2sgd --workers 8 --topology torus --workers 9 --steps 2000 --noise-multiplier 2 --json
    fedplan simulate adp2sgd --validate --steps 1000 --staleness fixed --max-staleness 2 --seeds 0 1
    fedplan simulate mapa --preset mapa-fig2
    fedplan simulate mapa --algorithm audp --iterations 3000 --epsilon 5 --validate

Data: a binary source (synthetic by default) with every row scaled to unit norm and split into equal clients
(:func:`planner.simulate.adp2sgd.unit_norm_problem`): the constants of the bounds then have closed forms.
"""

from __future__ import annotations

import argparse
import math

#: Iterations whose loss/accuracy are evaluated (a full pass over the data each), as in ``fedplan simulate``.
EVALUATIONS_PER_RUN = 50
#: ``simulate adp2sgd`` step on the mean gradient when --learning-rate is not given (outside --validate).
DEFAULT_LEARNING_RATE = 0.5
SUMMARY_KEYS = ("algorithm", "rounds", "final_loss", "final_accuracy", "epsilon", "delta", "wall_time_s",
                "virtual_time", "diverged", "divergence", "statement")


def _add_common(parser: argparse.ArgumentParser, presets) -> None:
    from fedplan.planner.cli_simulate import DATA_SOURCES  # cli_simulate imports this module

    parser.add_argument("--preset", choices=tuple(presets), help="a named run (other options are then ignored)")
    parser.add_argument("--dataset", default="synthetic", help=f"{DATA_SOURCES}; binary (default synthetic)")
    parser.add_argument("--n-samples", type=int, default=4000, help="size of a synthetic set (default 4000)")
    parser.add_argument("--n-features", type=int, default=20, help="features of a synthetic set (default 20)")
    parser.add_argument("--batch-size", type=int, default=16, help="B / b (default 16)")
    parser.add_argument("--compute-time", choices=("constant", "exponential", "lognormal"), default="exponential")
    parser.add_argument("--compute-mean", type=float, nargs="+", default=[1.0],
                        help="mean compute time: one value or one per worker/edge (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data split and run (default 0)")
    parser.add_argument("--validate", action="store_true", help="run --seeds and check the paper's bounds")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds for --validate")
    parser.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def add_subcommands(which) -> None:
    """Register ``simulate adp2sgd`` and ``simulate mapa`` on the ``which`` subparsers of ``fedplan simulate``."""
    from fedplan.planner.simulate import adp2sgd, mapa

    xu = which.add_parser("adp2sgd", help="Xu et al. A(DP)2SGD: gossip on a graph, staleness, per-worker noise")
    _add_common(xu, adp2sgd.PRESETS)
    xu.add_argument("--workers", type=int, default=8, help="K (default 8)")
    xu.add_argument("--topology", choices=("ring", "torus", "complete", "random_regular"), default="ring")
    xu.add_argument("--degree", type=int, help="neighbours per worker for random_regular")
    xu.add_argument("--steps", type=int, default=2000, help="T global iterations (default 2000)")
    xu.add_argument("--learning-rate", type=float,
                    help="step on the mean gradient (default 0.5; with --validate: Theorem 1's largest)")
    xu.add_argument("--noise-multiplier", type=float, default=2.0, help="z (replace-one): std 2Gz/B (default 2)")
    xu.add_argument("--clipping-norm", type=float, default=1.0, help="G (default 1)")
    xu.add_argument("--staleness", choices=adp2sgd.STALENESS, default="event")
    xu.add_argument("--max-staleness", type=int, default=2, help="tau of the fixed/uniform staleness (default 2)")
    xu.add_argument("--delta", type=float, default=1e-5, help="delta of the ledger (default 1e-5)")
    xu.set_defaults(handler=run_adp2sgd_command)

    li = which.add_parser("mapa", help="Li et al. AUDP / MAPA: edges, FIFO cloud, Laplace-type noise, stages")
    _add_common(li, mapa.PRESETS)
    li.add_argument("--algorithm", choices=("mapa", "audp"), default="mapa")
    li.add_argument("--edges", type=int, default=5, help="K edges (default 5); tau_max = K (li L401)")
    li.add_argument("--iterations", type=int, default=4000, help="T cloud updates (default 4000)")
    li.add_argument("--epsilon", type=float, nargs="+", default=[5.0], help="per-upload epsilon (one or per edge)")
    li.add_argument("--theta", type=float, default=0.5, help="MAPA's sensitivity reduction (default 0.5)")
    li.add_argument("--delta", type=float, default=1e-3, help="Theorem 3 failure probability (default 1e-3)")
    li.add_argument("--initial-clip", type=float, default=1.0,
                    help="MAPA's starting per-sample clip C0 (Delta S0 = 2 C0/b); 0: Theorem 3")
    li.add_argument("--step-rule", choices=mapa.AUDP_STEPS, default="eq10", help="AUDP: Eq. (10) or constant")
    li.add_argument("--tau-policy", choices=mapa.TAU_POLICIES, default="drop",
                    help="drop uploads staler than tau_max (default drop)")
    li.set_defaults(handler=run_mapa_command)


def _timing(args):
    from fedplan.planner.simulate.engine import Durations

    means = args.compute_mean[0] if len(args.compute_mean) == 1 else tuple(args.compute_mean)
    return Durations(args.compute_time, means)


def _dataset(args, seed: int):
    from fedplan.planner.simulate.data import load_dataset

    return load_dataset(args.dataset, seed=seed, n_samples=args.n_samples, n_features=args.n_features)


def _progress(args, total: int, label: str):
    from fedplan.planner.cli_simulate import ProgressBar

    return None if args.json else ProgressBar(total, label)


def _simulation_output(result, args) -> dict:
    output = result.to_dict()
    mean_delay = result.delays["mean_delay"]  # None when the run diverged before its first iteration was recorded
    output["statement"] = (f"{result.algorithm}: {result.rounds} iterations in {result.wall_time_s:.2f} s "
                           f"(virtual time {result.virtual_time:.6g}, staleness max {result.delays['max_delay']}, "
                           f"mean {'n/a' if mean_delay is None else f'{mean_delay:.4g}'}). " + output["statement"])
    return output if args.json else {key: output[key] for key in SUMMARY_KEYS}


def _validation_output(report, args) -> dict:
    return report.summary(full=args.json)


def run_adp2sgd_command(args: argparse.Namespace) -> dict:
    from fedplan.planner.simulate import adp2sgd
    from fedplan.planner.simulate.graphs import make_graph

    if args.preset:
        steps = adp2sgd.PRESETS[args.preset]["steps"]
        return _simulation_output(adp2sgd.run_preset(args.preset, seed=args.seed, delta=args.delta,
                                                     progress=_progress(args, steps, args.preset)), args)
    options = {"steps": args.steps, "batch_size": args.batch_size, "noise_multiplier": args.noise_multiplier,
               "clipping_norm": args.clipping_norm, "staleness": args.staleness, "max_staleness": args.max_staleness,
               "compute": _timing(args), "delta": args.delta}
    if args.validate:
        from fedplan.planner.validate_xu_li import validate_adp2sgd

        report = validate_adp2sgd(dataset=_dataset(args, args.seeds[0]), workers=args.workers,
                                  topology=args.topology, degree=args.degree, learning_rate=args.learning_rate,
                                  seeds=args.seeds, progress=_progress(args, args.steps, "adp2sgd"), **options)
        return _validation_output(report, args)
    problem = adp2sgd.unit_norm_problem(dataset=_dataset(args, args.seed), clients=args.workers, seed=args.seed)
    graph = make_graph(topology=args.topology, workers=args.workers, degree=args.degree, seed=args.seed)
    learning_rate = DEFAULT_LEARNING_RATE if args.learning_rate is None else args.learning_rate
    result = adp2sgd.run_adp2sgd(problem=problem, graph=graph, learning_rate=learning_rate,
                                 seed=args.seed, eval_every=max(1, math.ceil(args.steps / EVALUATIONS_PER_RUN)),
                                 progress=_progress(args, args.steps, "adp2sgd"), **options)
    return _simulation_output(result, args)


def run_mapa_command(args: argparse.Namespace) -> dict:
    from fedplan.planner.simulate import mapa

    if args.preset:
        steps = mapa.PRESETS[args.preset]["iterations"]
        return _simulation_output(mapa.run_preset(args.preset, seed=args.seed,
                                                  progress=_progress(args, steps, args.preset)), args)
    epsilon = args.epsilon[0] if len(args.epsilon) == 1 else list(args.epsilon)
    progress = _progress(args, args.iterations, args.algorithm)
    if args.validate:
        from fedplan.planner import validate_xu_li

        common = {"edges": args.edges, "iterations": args.iterations, "batch_size": args.batch_size,
                  "epsilon": epsilon, "compute": _timing(args), "tau_policy": args.tau_policy, "seeds": args.seeds,
                  "progress": progress}
        if args.algorithm == "audp":
            report = validate_xu_li.validate_audp(dataset=_dataset(args, args.seeds[0]), step_rule=args.step_rule,
                                                  **common)
        else:
            report = validate_xu_li.validate_mapa(dataset=_dataset(args, args.seeds[0]), theta=args.theta,
                                                  delta=args.delta, initial_clip=args.initial_clip or None, **common)
        return _validation_output(report, args)
    result = _run_li(args, epsilon, progress)
    return _simulation_output(result, args)


def _run_li(args, epsilon, progress):
    from fedplan.planner.simulate import mapa
    from fedplan.planner.simulate.adp2sgd import unit_norm_problem

    problem = unit_norm_problem(dataset=_dataset(args, args.seed), clients=args.edges, seed=args.seed)
    common = {"epsilon": epsilon, "tau_policy": args.tau_policy, "compute": _timing(args), "seed": args.seed,
              "eval_every": max(1, math.ceil(args.iterations / EVALUATIONS_PER_RUN)), "progress": progress}
    if args.algorithm == "audp":
        smoothness, sigma, _ = mapa.unit_logistic_constants(problem)
        return mapa.run_audp(problem=problem, iterations=args.iterations, batch_size=args.batch_size,
                             clipping_norm=1.0, smoothness=smoothness, max_staleness=args.edges, sigma=sigma,
                             step_rule=args.step_rule, **common)
    plan = mapa.plan_for_problem(problem, epsilon=epsilon, batch_size=args.batch_size, iterations=args.iterations,
                                 theta=args.theta, delta=args.delta, initial_clip=args.initial_clip or None)
    return mapa.run_mapa(problem=problem, plan=plan, **common)
