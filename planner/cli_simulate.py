"""``fedplan simulate …`` and ``fedplan validate …``: backing simulations of a plan.

    fedplan simulate fedbuff --dataset synthetic --clients 100 --rounds 500 --sample-rate 0.01 \\
        --clipping-norm 1 --noise-multiplier 1 --json
    fedplan simulate vandijk --dataset ../shared/data/phishing.libsvm --clients 5 --rounds 40 --sample-size 16 \\
        --growth 1.3216 --learning-rate 0.15 --decay 0.001 --clipping-norm 0.1 --noise-multiplier 8
    fedplan simulate vandijk --dataset ../shared/data/w8a.libsvm --clients 5 --schedule plan.json --clipping-norm 0.1
    fedplan simulate fedsgd-dpc --dataset breast_cancer --clients 10 --rounds 50 --clients-per-round 5 \\
        --mechanism gaussian --epsilon 2 --clipping-norm 1 --sample-rate 0.2 --learning-rate 0.5
    fedplan simulate preset vandijk-dp            # van Dijk et al.'s DP experiment on w8a (and vandijk-dp-constant)
    fedplan validate fedsgd-dpc --dataset synthetic --clients 10 --mechanism gaussian --epsilon 20 --json
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from fedplan.bounds.validation import check_int
from fedplan.planner import cli_sim_damaskinos, cli_sim_xu_li

DATA_SOURCES = "a LIBSVM file, synthetic, synthetic-softmax, synthetic-linear, or a scikit-learn set " \
               "(breast_cancer, iris, wine, digits, diabetes)"


#: Default number of rounds whose loss/accuracy are evaluated (a full pass over the data each).
EVALUATIONS = 50


class ProgressBar:
    """A one-line progress bar on stderr, redrawn at most every 0.1 s."""

    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.stream = max(int(total), 1), label, stream or sys.stderr
        self.last = 0.0

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if done < self.total and now - self.last < 0.1:
            return
        self.last = now
        filled = int(30 * min(done, self.total) / self.total)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total} rounds")
        if done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def add_data_options(parser: argparse.ArgumentParser, *, seeds: bool = False) -> None:
    parser.add_argument("--dataset", default="synthetic", help=f"{DATA_SOURCES} (default synthetic)")
    parser.add_argument("--test-file", help="a separate LIBSVM test file (default: hold out --test-fraction)")
    parser.add_argument("--test-fraction", type=float, default=0.2, help="held-out share (default 0.2)")
    parser.add_argument("--n-samples", type=int, default=10_000, help="size of a synthetic set (default 10000)")
    parser.add_argument("--n-features", type=int, default=20, help="features of a synthetic set (default 20)")
    parser.add_argument("--clients", type=int, default=10, help="number of clients N (default 10)")
    parser.add_argument("--partition", choices=("iid", "label", "dirichlet"), default="iid",
                        help="client partition (default iid)")
    parser.add_argument("--alpha", type=float, help="Dirichlet concentration for --partition dirichlet")
    parser.add_argument("--classes-per-client", type=int, default=2, help="for --partition label (default 2)")
    parser.add_argument("--model", choices=("logistic", "softmax", "ridge"),
                        help="default: from the labels (binary: logistic, classes: softmax, reals: ridge)")
    parser.add_argument("--regularization", type=float, help="L2 coefficient rho (default 1/n_train)")
    if seeds:
        parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds (default 0 1 2)")
    else:
        parser.add_argument("--seed", type=int, default=0, help="seed of data split and run (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--optimum", action="store_true", help="compute w* (L-BFGS) to report ||w - w*||^2")
    parser.add_argument("--eval-every", type=int, help="evaluate loss/accuracy every this many rounds")
    parser.add_argument("--delta", type=float, default=1e-5, help="delta at which epsilon is reported (1e-5)")
    parser.add_argument("--accountant", choices=("rdp", "pld"), default="rdp", help="rdp (fast, default) or pld")
    parser.add_argument("--compute-time", choices=("constant", "exponential", "lognormal"), default="exponential",
                        help="distribution of one local computation's time (default exponential)")
    parser.add_argument("--compute-mean", type=float, nargs="+", default=[1.0],
                        help="its mean: one value or one per client (default 1)")
    parser.add_argument("--latency", choices=("constant", "exponential", "lognormal"), default="exponential",
                        help="distribution of up- and down-link latencies (default exponential)")
    parser.add_argument("--latency-mean", type=float, default=10.0, help="mean latency (default 10)")
    parser.add_argument("--schedule", metavar="FILE", help="a JSON/YAML schedule exported by fedplan (per round)")


def add_parser(commands) -> None:
    """Register ``simulate vandijk|fedsgd-dpc|fedbuff|preset`` and ``validate vandijk|theorem5|fedsgd-dpc``."""
    simulate = commands.add_parser("simulate", help="backing simulation of an algorithm (event engine, DP ledger)")
    which = simulate.add_subparsers(dest="simulate_command", required=True, parser_class=type(simulate))

    vandijk = which.add_parser("vandijk", help="van Dijk et al. Algorithms 1-4 (increasing sample sizes)")
    add_data_options(vandijk)
    _add_run_options(vandijk)
    vandijk.add_argument("--rounds", type=int, help="rounds T (without --schedule)")
    vandijk.add_argument("--sample-size", type=int, default=16, help="s_{0,c} (default 16)")
    vandijk.add_argument("--growth", type=float, default=0.0, help="s_{i,c} = s_{0,c} + ceil(growth i) (default 0)")
    vandijk.add_argument("--learning-rate", type=float, default=0.1, help="eta0 (default 0.1)")
    vandijk.add_argument("--decay", type=float, default=0.0, help="beta of eta0/(1+beta t) (default 0)")
    vandijk.add_argument("--step-rule", choices=("inverse", "inverse-sqrt"), default="inverse")
    vandijk.add_argument("--noise-multiplier", type=float, default=0.0, help="sigma per round (default 0)")
    vandijk.add_argument("--clipping-norm", type=float, help="per-example clipping C")
    vandijk.add_argument("--sampling", choices=("with_replacement", "poisson"), default="with_replacement")
    vandijk.add_argument("--wait-rule", default="none",
                         choices=("none", "exact", "alg1_literal", "alg4_literal", "d_round", "d_round_literal"))
    vandijk.add_argument("--tau", type=float, help="constant permissible delay tau (iterations) for the wait rule")
    vandijk.add_argument("--d", type=int, default=1, help="round threshold d of the d_round rules (default 1)")

    zhou = which.add_parser("fedsgd-dpc", help="Zhou et al. FedSGD-DPC (b of N clients per round)")
    add_data_options(zhou)
    _add_run_options(zhou)
    zhou.add_argument("--rounds", type=int, help="rounds T (without --schedule)")
    zhou.add_argument("--clients-per-round", type=int, required=True, help="b")
    zhou.add_argument("--mechanism", choices=("laplace", "gaussian", "none"), default="gaussian")
    zhou.add_argument("--epsilon", type=float, help="per-client epsilon: noise calibrated for the horizon T")
    zhou.add_argument("--noise-multiplier", type=float, help="Gaussian z instead of --epsilon")
    zhou.add_argument("--noise-scale", type=float, help="Laplace scale instead of --epsilon")
    zhou.add_argument("--clipping-norm", type=float, help="xi1 (Laplace, l1) or xi2 (Gaussian, l2)")
    zhou.add_argument("--sample-rate", type=float, default=1.0, help="Gaussian Poisson rate q")
    zhou.add_argument("--selection", choices=("uniform", "round_robin", "shuffle_partition"), default="uniform")
    zhou.add_argument("--learning-rate", type=float, default=0.1, help="constant eta_t (default 0.1)")

    fedbuff = which.add_parser("fedbuff", help="FedBuff buffered asynchronous aggregation")
    add_data_options(fedbuff)
    _add_run_options(fedbuff)
    fedbuff.add_argument("--rounds", type=int, default=100, help="server updates (default 100)")
    fedbuff.add_argument("--sample-rate", type=float, default=0.01, help="Poisson rate q (default 0.01)")
    fedbuff.add_argument("--buffer-size", type=int, default=10, help="K (default 10)")
    fedbuff.add_argument("--server-lr", type=float, default=1.0, help="eta (default 1)")
    fedbuff.add_argument("--clipping-norm", type=float, help="per-example clipping C")
    fedbuff.add_argument("--noise-multiplier", type=float, default=0.0, help="client noise sigma (default 0)")
    fedbuff.add_argument("--staleness", choices=("constant", "polynomial", "threshold"), default="polynomial")
    fedbuff.add_argument("--staleness-exponent", type=float, default=0.5, help="a of (1+s)^-a (default 0.5)")
    fedbuff.add_argument("--staleness-cutoff", type=int, default=10, help="threshold cutoff (default 10)")

    preset = which.add_parser("preset", help="a named experiment (vandijk-dp, vandijk-dp-constant)")
    preset.add_argument("name", choices=("vandijk-dp", "vandijk-dp-constant"))
    preset.add_argument("--dataset", help="path of w8a.libsvm (default ../shared/data/w8a.libsvm)")
    preset.add_argument("--seed", type=int, default=0)
    preset.add_argument("--optimum", action="store_true", help="compute w* too (~5 s more)")
    preset.add_argument("--accountant", choices=("rdp", "pld"), default="rdp")
    preset.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")
    cli_sim_damaskinos.add_subcommands(which)
    cli_sim_xu_li.add_subcommands(which)
    simulate.set_defaults(handler=run_simulate)

    validate = commands.add_parser("validate", help="run a plan on R seeds and check its claims")
    checks = validate.add_subparsers(dest="validate_command", required=True, parser_class=type(validate))
    plan = checks.add_parser("vandijk", help="a van Dijk plan: spent vs planned epsilon, delays vs Lemma 3")
    from fedplan.planner.cli_vandijk import add_plan_options

    add_plan_options(plan)
    plan.add_argument("--learning-rate", type=float, default=0.15, help="eta0 (default 0.15)")
    plan.add_argument("--decay", type=float, default=0.001, help="beta (default 0.001)")
    plan.add_argument("--step-rule", default="inverse")
    plan.add_argument("--clipping-norm", type=float, default=0.1, help="C (default 0.1)")
    _add_validate_data(plan)
    theorem5 = checks.add_parser("theorem5", help="Theorem 5's recipe: E||w_T - w*||^2 vs the bound, tau_hat vs tau")
    add_data_options(theorem5, seeds=True)
    theorem5.add_argument("--rounds", type=int, default=30)
    theorem5.add_argument("--d", type=int, default=1)
    zhou_check = checks.add_parser("fedsgd-dpc", help="FedSGD-DPC: E||theta_T - theta*||^2 vs U(T,b), epsilon")
    add_data_options(zhou_check, seeds=True)
    zhou_check.add_argument("--mechanism", choices=("laplace", "gaussian"), default="gaussian")
    zhou_check.add_argument("--epsilon", type=float, required=True, help="per-client epsilon")
    zhou_check.add_argument("--delta", type=float, default=1e-5)
    zhou_check.add_argument("--sample-rate", type=float, default=0.5)
    zhou_check.add_argument("--rounds", type=int, help="T (default: the planner's T*)")
    zhou_check.add_argument("--clients-per-round", type=int, help="b (default: the planner's b*)")
    zhou_check.add_argument("--max-rounds", type=int, default=200)
    validate.set_defaults(handler=run_validate)


def _add_validate_data(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="synthetic", help=DATA_SOURCES)
    parser.add_argument("--n-samples", type=int, default=10_000)
    parser.add_argument("--n-features", type=int, default=20)
    parser.add_argument("--test-fraction", type=float, default=0.05)
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])


def dataset_from_args(args: argparse.Namespace, seed: int):
    from fedplan.planner.simulate.data import load_dataset

    return load_dataset(args.dataset, seed=seed, test_fraction=args.test_fraction,
                        test_file=getattr(args, "test_file", None), n_samples=args.n_samples,
                        n_features=args.n_features)


def _problem(args: argparse.Namespace):
    from fedplan.planner.simulate.problem import make_problem

    return make_problem(dataset=dataset_from_args(args, args.seed), clients=args.clients, seed=args.seed,
                        scheme=args.partition, model=args.model, regularization=args.regularization,
                        with_optimum=args.optimum, alpha=args.alpha, classes_per_client=args.classes_per_client)


def _timing(args: argparse.Namespace) -> dict:
    from fedplan.planner.simulate.engine import Durations

    means = args.compute_mean[0] if len(args.compute_mean) == 1 else tuple(args.compute_mean)
    latency = Durations(args.latency, args.latency_mean)
    return {"compute": Durations(args.compute_time, means), "uplink": latency, "downlink": latency}


def _schedule_rows(args: argparse.Namespace):
    if args.schedule is None:
        return None
    from fedplan.planner.export import load_schedule_file

    return load_schedule_file(args.schedule)


def _common(args, rounds: int) -> dict:
    progress = None if args.json else ProgressBar(rounds, f"{args.simulate_command}")
    eval_every = max(1, math.ceil(rounds / EVALUATIONS)) if args.eval_every is None else args.eval_every
    return {"seed": args.seed, "eval_every": eval_every, "delta": args.delta, "accountant": args.accountant,
            "progress": progress, **_timing(args)}


def _need_rounds(args, schedule) -> int:
    if schedule is not None:
        if args.rounds is not None:
            raise ValueError("--schedule gives the rounds; do not combine it with --rounds")
        return schedule.rounds
    if args.rounds is None:
        raise ValueError("give --rounds (or a --schedule file)")
    return check_int("rounds", args.rounds, low=1)


def simulate_vandijk(args):
    from fedplan.planner.simulate.vandijk import inputs_from_schedule, run_vandijk
    from fedplan.planner.vandijk import round_step_sizes

    problem = _problem(args)
    schedule = _schedule_rows(args)
    rounds = _need_rounds(args, schedule)
    if schedule is not None:
        inputs = inputs_from_schedule(schedule, problem.client_sizes)
    else:
        sizes = [args.sample_size + math.ceil(args.growth * i - 1e-9) for i in range(rounds)]
        inputs = {"sizes": sizes, "noise_multiplier": args.noise_multiplier,
                  "step_sizes": round_step_sizes(sizes, learning_rate=args.learning_rate, decay=args.decay,
                                                 rule=args.step_rule)}
    tau = None if args.tau is None else (lambda t, value=args.tau: t * 0.0 + value)
    return run_vandijk(problem=problem, **inputs, clipping_norm=args.clipping_norm, sampling=args.sampling,
                       wait_rule=args.wait_rule, tau=tau, d=args.d, **_common(args, rounds))


def simulate_fedsgd(args):
    from fedplan.planner.simulate.fedsgd_dpc import run_fedsgd_dpc

    problem = _problem(args)
    schedule = _schedule_rows(args)
    rounds = _need_rounds(args, schedule)
    options = {"step_sizes": args.learning_rate, "noise_multiplier": args.noise_multiplier,
               "noise_scale": args.noise_scale}
    if schedule is not None:
        rows = schedule.rows()
        for key, column in (("step_sizes", "learning_rate"), ("noise_multiplier", "noise_multiplier"),
                            ("noise_scale", "noise_scale")):
            if column in rows[0]:
                options[key] = [row[column] for row in rows]
    return run_fedsgd_dpc(problem=problem, rounds=rounds, clients_per_round=args.clients_per_round,
                          mechanism=args.mechanism, clipping_norm=args.clipping_norm, sample_rate=args.sample_rate,
                          epsilon=args.epsilon, selection=args.selection, **options, **_common(args, rounds))


def simulate_fedbuff(args):
    from fedplan.planner.simulate.fedbuff import run_fedbuff

    if args.schedule is not None:
        raise ValueError("fedbuff takes its constant parameters from options; --schedule is for vandijk and "
                         "fedsgd-dpc")
    rounds = check_int("rounds", args.rounds, low=1)
    options = {name: getattr(args, name) for name in (
        "sample_rate", "buffer_size", "server_lr", "clipping_norm", "noise_multiplier", "staleness",
        "staleness_exponent", "staleness_cutoff")}
    return run_fedbuff(problem=_problem(args), rounds=rounds, **options, **_common(args, rounds))


def simulate_preset(args):
    from fedplan.planner.simulate.presets import run_preset

    rounds = 183 if args.name == "vandijk-dp" else 1563
    progress = None if args.json else ProgressBar(rounds, args.name)
    return run_preset(args.name, dataset=args.dataset, seed=args.seed, accountant=args.accountant,
                      with_optimum=args.optimum, progress=progress)


def _summary(result) -> dict:
    output = result.to_dict()
    output["statement"] = (f"{result.algorithm}: {result.rounds} rounds in {result.wall_time_s:.2f} s "
                           f"(virtual time {result.virtual_time:.6g}). " + output["statement"])
    return output


def run_simulate(args: argparse.Namespace) -> dict:
    runner = {"vandijk": simulate_vandijk, "fedsgd-dpc": simulate_fedsgd, "fedbuff": simulate_fedbuff,
              "preset": simulate_preset}[args.simulate_command]
    output = _summary(runner(args))
    if not args.json:  # the table shows the headline; --json carries everything, with the per-round records
        keys = ("algorithm", "rounds", "final_loss", "final_accuracy", "final_dist_sq", "epsilon", "delta",
                "wall_time_s", "virtual_time", "diverged", "divergence", "statement")
        output = {key: output[key] for key in keys}
    return output


def run_validate(args: argparse.Namespace) -> dict:
    from fedplan.planner import validate

    if args.validate_command == "vandijk":
        from fedplan.planner.cli_vandijk import plan_from_args

        plan = plan_from_args(args, learning_rate=args.learning_rate, decay=args.decay, step_rule=args.step_rule)
        report = validate.validate_vandijk_plan(plan=plan, dataset=dataset_from_args(args, args.seeds[0]),
                                                clients=args.clients, clipping_norm=args.clipping_norm,
                                                seeds=args.seeds)
    elif args.validate_command == "theorem5":
        report = validate.validate_theorem5(dataset=dataset_from_args(args, args.seeds[0]), clients=args.clients,
                                            rounds=args.rounds, d=args.d, seeds=args.seeds)
    else:
        report = validate.validate_fedsgd_dpc(dataset=dataset_from_args(args, args.seeds[0]), clients=args.clients,
                                              mechanism=args.mechanism, epsilon=args.epsilon, delta=args.delta,
                                              sample_rate=args.sample_rate, rounds=args.rounds,
                                              clients_per_round=args.clients_per_round, max_rounds=args.max_rounds,
                                              seeds=args.seeds)
    return report.summary(full=args.json)
