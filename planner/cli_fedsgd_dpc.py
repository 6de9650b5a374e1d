"""``fedplan fedsgd-dpc optimum``: T* and b* of Zhou et al. from raw constants or from a LIBSVM file.

    fedplan fedsgd-dpc optimum --mechanism laplace --mu 10 --lam 20 --G 1 --xi1 1 --Gamma 0 --Y0 1 \\
        --N 10 --d 6000 --p 7850 --epsilon 1
    fedplan fedsgd-dpc optimum --mechanism laplace --dataset ../shared/data/phishing.libsvm --clients 10 \\
        --epsilon 1 --json
"""

from __future__ import annotations

import argparse
import math

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.planner.fedsgd_dpc import MECHANISMS, plan_fedsgd_dpc

RAW = (("mu", "strong convexity μ"), ("lam", "smoothness λ"), ("G", "gradient bound G (A5)"),
       ("Gamma", "non-iid degree Γ"), ("Y0", "initial squared distance ||θ0 − θ*||²"))


def add_parser(commands) -> None:
    paper = commands.add_parser("fedsgd-dpc", help="Zhou et al.: optimal numbers of queries T* and replies b*")
    which = paper.add_subparsers(dest="fedsgd_command", required=True, parser_class=type(paper))
    optimum = which.add_parser("optimum", help="T*, b* and the bound, from constants or from a data set")
    optimum.add_argument("--mechanism", choices=MECHANISMS, required=True)
    for name, text in RAW:
        optimum.add_argument(f"--{name}", type=float, help=f"{text} (raw-constants mode)")
    optimum.add_argument("--N", type=float, dest="num_clients", help="number of clients N (raw-constants mode)")
    optimum.add_argument("--d", type=float, dest="client_size", help="records per client d_i (raw-constants mode)")
    optimum.add_argument("--p", type=float, dest="model_dim", help="model dimension p (raw-constants mode)")
    optimum.add_argument("--Lambda", type=float, default=0.0, help="local gradient std Λ_i (Gaussian, A6)")
    optimum.add_argument("--dataset", metavar="FILE", help="LIBSVM file: estimate the constants instead")
    optimum.add_argument("--clients", type=float, help="N when splitting --dataset")
    optimum.add_argument("--model", choices=("logistic", "softmax", "ridge"), default="logistic")
    optimum.add_argument("--regularization", type=float, default=1e-3, help="L2 coefficient ρ (= μ for logistic)")
    optimum.add_argument("--seed", type=int, default=0, help="seed of the client split")
    optimum.add_argument("--non-iid", action="store_true", help="split by sorted label instead of at random")
    optimum.add_argument("--xi1", type=float, help="L1 clipping norm ξ₁ (Laplace; default: the estimate)")
    optimum.add_argument("--xi2", type=float, help="L2 clipping norm ξ₂ (Gaussian; default: the estimate)")
    optimum.add_argument("--epsilon", type=float, required=True, help="per-client ε_i")
    optimum.add_argument("--delta", type=float, help="per-client δ_i (Gaussian)")
    optimum.add_argument("--q", type=float, dest="sample_rate", help="local sampling rate q (Gaussian)")
    optimum.add_argument("--c2", type=float, help="Gaussian: the paper's unknown constant of Eq. (5)")
    optimum.add_argument("--max-rounds", type=float, default=math.inf, help="cap on T (required for Gaussian)")
    fixed = optimum.add_mutually_exclusive_group()
    fixed.add_argument("--fix-b", type=float, help="optimise T for this b (Laplace)")
    fixed.add_argument("--fix-T", type=float, dest="fix_T", help="optimise b for this T (Laplace)")
    optimum.add_argument("--variant", choices=("corrected", "paper"), default="corrected")
    optimum.add_argument("--accountant", choices=("rdp", "pld"), default="rdp",
                         help="accountant of the Gaussian noise calibration (default rdp)")
    optimum.add_argument("--json", action="store_true", help="print one JSON object")
    paper.set_defaults(handler=run)


def _whole(value):
    return int(value) if value is not None and float(value).is_integer() else value


def _problem_and_norms(args: argparse.Namespace) -> tuple[zhou.Problem, float, dict]:
    raw = {name: getattr(args, name) for name, _ in RAW} | {"N": args.num_clients, "d": args.client_size,
                                                          "p": args.model_dim}
    if args.dataset is not None:
        given = [f"--{name}" for name, value in raw.items() if value is not None]
        if given:
            raise ValueError(f"--dataset estimates the constants; do not also give {', '.join(given)}")
        if args.clients is None:
            raise ValueError("--dataset needs --clients N")
        from fedplan.planner.datasets import load_libsvm  # scipy.optimize and sparse: loaded only for --dataset
        from fedplan.planner.estimate import estimate_constants

        features, labels = load_libsvm(args.dataset)
        estimated = estimate_constants(X=features, y=labels, model=args.model, regularization=args.regularization,
                                       clients=_whole(args.clients), seed=args.seed, iid=not args.non_iid)
        problem = zhou.Problem(**estimated.fedsgd_problem_kwargs())
        norm = args.xi1 if args.mechanism == "laplace" else args.xi2
        default = estimated.xi1 if args.mechanism == "laplace" else estimated.xi2
        return problem, default if norm is None else norm, {"source": f"estimated from {args.dataset}",
                                                             **estimated.to_dict()}
    missing = [f"--{name}" for name, value in raw.items() if value is None]
    norm = args.xi1 if args.mechanism == "laplace" else args.xi2
    if norm is None:
        missing.append("--xi1" if args.mechanism == "laplace" else "--xi2")
    if missing:
        raise ValueError(f"give --dataset FILE --clients N, or all raw constants (missing {', '.join(missing)})")
    problem = zhou.Problem(num_clients=_whole(raw["N"]), model_dim=_whole(raw["p"]), client_sizes=raw["d"],
                           strong_convexity=raw["mu"], smoothness=raw["lam"], gradient_bound=raw["G"],
                           heterogeneity=raw["Gamma"], initial_distance=raw["Y0"], local_gradient_std=args.Lambda)
    return problem, norm, {"source": "given", **{name: value for name, value in raw.items()}}


def run(args: argparse.Namespace) -> dict:
    problem, norm, constants = _problem_and_norms(args)
    max_rounds = args.max_rounds if math.isinf(args.max_rounds) else _whole(args.max_rounds)
    plan = plan_fedsgd_dpc(problem=problem, mechanism=args.mechanism, epsilon=args.epsilon, clipping_norm=norm,
                           delta=args.delta, sample_rate=args.sample_rate, c2=args.c2, max_rounds=max_rounds,
                           fix_b=_whole(args.fix_b), fix_T=_whole(args.fix_T), variant=args.variant,
                           accountant=args.accountant, constants={**constants, "clipping_norm": norm})
    return plan.summary()
