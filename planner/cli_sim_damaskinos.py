"""``fedplan simulate dpscd|kardam|byzantine``: the Damaskinos thesis' algorithms by simulation.

    fedplan simulate dpscd --preset ridge                 # DP-SCD vs DP-SGD at epsilon = 1 (same accountant)
    fedplan simulate dpscd --preset svm --epsilon 0.5 --validate --seeds 0 1 2 --json
    fedplan simulate kardam --clients 10 --faults 3 --byzantine 3 --attack sign_flip --rounds 300
    fedplan simulate kardam --clients 10 --faults 3 --arrivals iid --validate
    fedplan simulate byzantine --clients 19 --rule bulyan --faults 4 --attack little --rounds 100

``--validate`` runs the seeds of ``--seeds`` and prints the claims of :mod:`planner.validate_damaskinos`
(pass/fail with margins) instead of one run.
"""

from __future__ import annotations

import argparse

RUN_KEYS = ("algorithm", "rounds", "final_loss", "final_accuracy", "final_dist_sq", "epsilon", "delta",
            "wall_time_s", "diverged")


def add_subcommands(which) -> None:
    """Register ``dpscd``, ``kardam`` and ``byzantine`` under ``fedplan simulate``."""
    from fedplan.planner.cli_simulate import add_data_options

    scd = which.add_parser("dpscd", help="DP-SCD (Damaskinos Alg. 1) vs DP-SGD at equal (epsilon, delta)")
    scd.add_argument("--preset", choices=("ridge", "logistic", "svm"), default="ridge",
                     help="data, loss and settings (default ridge); the options below override them")
    scd.add_argument("--dataset", help="data source (default: the preset's)")
    scd.add_argument("--regularization", type=float, help="lambda")
    for name, kind in (("epsilon", float), ("delta", float), ("batch-size", int), ("epochs", float),
                       ("clipping-norm", float), ("dpsgd-batch-size", int), ("dpsgd-epochs", float),
                       ("dpsgd-clipping-norm", float), ("learning-rate", float)):
        scd.add_argument(f"--{name}", type=kind, help="default: the preset's")
    scd.add_argument("--accountant", choices=("ma128", "rdp", "pld"), default="ma128")
    scd.add_argument("--sampling", choices=("poisson", "fixed"), default="poisson")
    _add_seeds_and_output(scd)
    scd.set_defaults(handler=run_dpscd_command)

    asynchronous = which.add_parser("kardam", help="asynchronous SGD with Kardam's filters and dampening")
    add_data_options(asynchronous, seeds=True)
    _add_attack_options(asynchronous)
    asynchronous.add_argument("--rounds", type=int, default=300, help="model updates (default 300)")
    asynchronous.add_argument("--learning-rate", type=float, default=0.5, help="gamma (default 0.5)")
    asynchronous.add_argument("--gradients-per-step", type=int, default=1, help="R (default 1)")
    asynchronous.add_argument("--dampening", choices=("inverse", "exponential", "adasgd", "constant"),
                              default="inverse")
    asynchronous.add_argument("--dampening-rate", type=float, default=0.2, help="a of exp(-a tau) (default 0.2)")
    asynchronous.add_argument("--tau-thres", type=float, help="AdaSGD tau_thres (default: 99.7%% of seen staleness)")
    asynchronous.add_argument("--adaptive-rate", action="store_true", help="gamma_t = gamma * phi_t (Eq. 5.2)")
    asynchronous.add_argument("--no-filters", action="store_true", help="no Kardam filters (plain dampened SGD)")
    asynchronous.add_argument("--arrivals", choices=("event", "iid", "round_robin"), default="event")
    asynchronous.add_argument("--validate", action="store_true", help="run all --seeds and check Theorem 1 etc.")
    asynchronous.set_defaults(handler=run_kardam_command)

    synchronous = which.add_parser("byzantine", help="synchronous SGD with Krum / Multi-Krum / Bulyan / averaging")
    add_data_options(synchronous)
    _add_attack_options(synchronous)
    synchronous.add_argument("--rule", choices=("average", "krum", "multi-krum", "bulyan"), default="multi-krum")
    synchronous.add_argument("--rounds", type=int, default=100, help="rounds (default 100)")
    synchronous.add_argument("--learning-rate", type=float, default=0.5, help="eta (default 0.5)")
    synchronous.set_defaults(handler=run_byzantine_command)


def _add_seeds_and_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds (default 0; --validate: 0 1 2)")
    parser.add_argument("--validate", action="store_true", help="run all --seeds and check the claims")
    parser.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def _add_attack_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--faults", type=int, default=0, help="f assumed by the server / GAR (default 0)")
    parser.add_argument("--byzantine", type=int, help="actual Byzantine workers (default: --faults)")
    parser.add_argument("--attack", choices=("none", "sign_flip", "noise", "stale_replay", "little"),
                        default="sign_flip")
    parser.add_argument("--attack-scale", type=float, default=10.0, help="s of -s g or N(0, s^2) (default 10)")
    parser.add_argument("--batch-size", type=int, default=16, help="examples per honest gradient (default 16)")


def _progress(args, total: int, label: str):
    from fedplan.planner.cli_simulate import ProgressBar

    return None if args.json else ProgressBar(total, label)


def _headline(result, args) -> dict:
    output = result.to_dict()
    return output if args.json else {key: output[key] for key in RUN_KEYS}


def _report(report, args) -> dict:
    return report.summary(full=args.json)


def _dpscd_settings(args) -> tuple:
    from fedplan.planner.simulate.data import load_dataset
    from fedplan.planner.simulate.dpscd import make_dual_problem, preset_problem

    problem, settings = preset_problem(args.preset, seed=args.seeds[0])
    overrides = {"target_epsilon": args.epsilon, "target_delta": args.delta, "batch_size": args.batch_size,
                 "epochs": args.epochs, "clipping_norm": args.clipping_norm, "dpsgd_batch_size": args.dpsgd_batch_size,
                 "dpsgd_epochs": args.dpsgd_epochs, "dpsgd_clipping_norm": args.dpsgd_clipping_norm,
                 "learning_rate": args.learning_rate, "regularization": args.regularization}
    settings = settings | {key: value for key, value in overrides.items() if value is not None}
    if args.dataset is not None or args.regularization is not None:
        data = load_dataset(args.dataset or settings["dataset"], seed=args.seeds[0],
                            n_samples=settings.get("n_samples", 10_000), n_features=settings.get("n_features", 20))
        problem = make_dual_problem(dataset=data, loss=settings["loss"], regularization=settings["regularization"])
    return problem, settings


def run_dpscd_command(args: argparse.Namespace) -> dict:
    from fedplan.planner.simulate.dpscd import calibrate_pair, run_dpscd, run_dpsgd
    from fedplan.planner.validate_damaskinos import validate_dpscd

    problem, s = _dpscd_settings(args)
    keys = ("batch_size", "epochs", "clipping_norm", "dpsgd_batch_size", "dpsgd_epochs", "dpsgd_clipping_norm",
            "learning_rate")
    if args.validate:
        seeds = args.seeds if len(args.seeds) > 1 else [0, 1, 2]
        return _report(validate_dpscd(problem=problem, target_epsilon=s["target_epsilon"],
                                      target_delta=s["target_delta"], seeds=seeds, accountant=args.accountant,
                                      sampling=args.sampling, **{key: s[key] for key in keys}), args)
    pair = calibrate_pair(examples=problem.examples, target_epsilon=s["target_epsilon"], target_delta=s["target_delta"],
                          batch_size=s["batch_size"], epochs=s["epochs"], dpsgd_batch_size=s["dpsgd_batch_size"],
                          dpsgd_epochs=s["dpsgd_epochs"], accountant=args.accountant, clipping_norm=s["clipping_norm"])
    steps = pair.dpscd_plan.steps
    common = {"seed": args.seeds[0], "delta": s["target_delta"], "accountant": args.accountant}
    scd = run_dpscd(problem=problem, batch_size=s["batch_size"], steps=steps, clipping_norm=s["clipping_norm"],
                    noise_multiplier=pair.dpscd_plan.calibration.noise_multiplier, sampling=args.sampling,
                    eval_every=max(1, steps // 50), progress=_progress(args, steps, "dpscd"), **common)
    sgd = run_dpsgd(problem=problem, batch_size=s["dpsgd_batch_size"], steps=pair.dpsgd.steps,
                    clipping_norm=s["dpsgd_clipping_norm"], noise_multiplier=pair.dpsgd.noise_multiplier,
                    learning_rate=s["learning_rate"], eval_every=max(1, pair.dpsgd.steps // 50),
                    progress=_progress(args, pair.dpsgd.steps, "dpsgd"), **common)
    gap = problem.optimum[1]
    statement = (f"DP-SCD: {scd.privacy['statement']} DP-SGD: {sgd.privacy['statement']} Final P(theta) - P*: "
                 f"DP-SCD {_difference(scd.final.get('loss'), gap)}, DP-SGD {_difference(sgd.final.get('loss'), gap)}.")
    output = {"preset": args.preset, "loss": problem.loss, "optimal_primal": gap,
              "dpscd": _headline(scd, args) | {"final_suboptimality": scd.final.get("suboptimality"),
                                               "noise_multiplier": scd.config["noise_multiplier"],
                                               "kappa_hat": scd.config["kappa_hat"]},
              "dpsgd": _headline(sgd, args) | {"noise_multiplier": sgd.config["noise_multiplier"]},
              "statement": statement}
    if args.json:
        output["calibration"] = pair.to_dict()
    return output


def _difference(value, optimum) -> str:
    return "n/a" if value is None else f"{value - optimum:.4g}"


def _problem(args, seed: int):
    from fedplan.planner.cli_simulate import dataset_from_args
    from fedplan.planner.simulate.problem import make_problem

    return make_problem(dataset=dataset_from_args(args, seed), clients=args.clients, seed=seed, scheme=args.partition,
                        model=args.model, regularization=args.regularization, alpha=args.alpha,
                        classes_per_client=args.classes_per_client)


def run_kardam_command(args: argparse.Namespace) -> dict:
    from fedplan.planner.simulate.byzantine import run_kardam
    from fedplan.planner.validate_damaskinos import validate_kardam

    problem = _problem(args, args.seeds[0])
    byzantine = args.faults if args.byzantine is None else args.byzantine
    options = {"batch_size": args.batch_size, "gradients_per_step": args.gradients_per_step,
               "dampening": args.dampening, "dampening_rate": args.dampening_rate, "tau_thres": args.tau_thres,
               "adaptive_rate": args.adaptive_rate, "attack_scale": args.attack_scale}
    if args.validate:
        return _report(validate_kardam(problem=problem, rounds=args.rounds, learning_rate=args.learning_rate,
                                       faults=args.faults, byzantine=byzantine, attack=args.attack,
                                       arrivals=args.arrivals, seeds=args.seeds, **options), args)
    result = run_kardam(problem=problem, rounds=args.rounds, learning_rate=args.learning_rate, faults=args.faults,
                        byzantine=byzantine, attack=args.attack, arrivals=args.arrivals, filters=not args.no_filters,
                        seed=args.seeds[0], eval_every=max(1, args.rounds // 50),
                        progress=_progress(args, args.rounds, "kardam"), **options)
    output = _headline(result, args)
    rates = result.config["filters"]
    if rates is not None:
        output["filters"] = rates if args.json else {key: value for key, value in rates.items() if key != "counts"}
    output["stalled"] = result.config["stalled"]
    output["statement"] = (f"Kardam with n = {problem.n_clients}, f = {args.faults}, {byzantine} Byzantine "
                           f"({args.attack}), {args.arrivals} arrivals, {args.dampening} dampening: "
                           f"{result.config['updates']} updates from {result.config['pushes']} pushes. "
                           + result.privacy["statement"])
    return output


def run_byzantine_command(args: argparse.Namespace) -> dict:
    from fedplan.planner.simulate.byzantine import run_byzantine_sync

    problem = _problem(args, args.seed)
    result = run_byzantine_sync(problem=problem, rule=args.rule, rounds=args.rounds, learning_rate=args.learning_rate,
                                faults=args.faults, byzantine=args.byzantine, attack=args.attack,
                                attack_scale=args.attack_scale, batch_size=args.batch_size, seed=args.seed,
                                eval_every=max(1, args.rounds // 50), progress=_progress(args, args.rounds, args.rule))
    output = _headline(result, args)
    output["statement"] = (f"{args.rule} with n = {problem.n_clients} workers, f = {args.faults}, "
                           f"{result.config['byzantine']} Byzantine ({args.attack}). " + result.privacy["statement"])
    return output
