"""``fedplan vandijk …``: r0(σ), parameter selection and schedule export for van Dijk et al.

    fedplan vandijk r0 --sigma 3 --p 1
    fedplan vandijk select --s0 16 --n-c 10000 --grad-computations 25000 --sigma 8 --epsilon 1 --p 1 \\
        --r0 1/e --variant paper
    fedplan vandijk schedule --s0 16 --n-c 10000 --epochs 2.5 --sigma 8 --epsilon 1 --r0 1/e --out plan.csv
"""

from __future__ import annotations

import argparse
import math

from fedplan.planner.export import FORMATS, format_for_path, write_schedule


def parse_r0(text: str) -> float | str:
    """``r0(sigma)`` (the paper's function), ``1/e`` or a number in (0, 1/e]."""
    cleaned = text.strip().lower().replace(" ", "")
    if cleaned in ("r0(sigma)", "auto"):
        return "r0(sigma)"
    if cleaned == "1/e":
        return 1 / math.e
    try:
        return float(cleaned)
    except ValueError:
        raise ValueError(f"r0 must be 'r0(sigma)', '1/e' or a number in (0, 1/e]; got {text!r}") from None


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--s0", "--initial-size", type=float, dest="initial_size", required=True,
                        help="initial sample size s_{0,c}")
    parser.add_argument("--n-c", "--client-size", type=float, dest="client_size", required=True,
                        help="records per client N_c")
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--grad-computations", "-K", type=float, dest="grad_computations",
                        help="gradient computations K of one client over all rounds")
    budget.add_argument("--epochs", type=float, help="K/N_c instead of K")
    parser.add_argument("--epsilon", type=float, required=True, help="ε of the paper's (ε, δ) claim")
    noise = parser.add_mutually_exclusive_group(required=True)
    noise.add_argument("--sigma", "--noise-multiplier", type=float, dest="sigma", help="noise multiplier σ")
    noise.add_argument("--sigma-range", type=float, nargs=2, metavar=("LOW", "HIGH"),
                       help="search the smallest σ in this range whose claimed δ meets --delta")
    parser.add_argument("--delta", type=float, help="target δ (with --sigma-range)")
    parser.add_argument("--p", type=float, default=1.0, help="growth exponent p of q_i = q (i+m)^p (default 1)")
    parser.add_argument("--r0", type=str, default="r0(sigma)",
                        help="r0(sigma) (default), 1/e or a number in (0, 1/e]")
    parser.add_argument("--variant", choices=("corrected", "paper"), default="corrected",
                        help="corrected (default) or paper (reproduces the printed examples)")
    parser.add_argument("--case", type=int, choices=(1, 2), default=1, help="1: K <= K-, 2: K >= K+")
    parser.add_argument("--k", type=float, default=1.0, help="case 2: allow K up to k·K+ (k >= 1)")
    parser.add_argument("--max-passes", type=int, help="stop the m/T iteration after this many passes")
    parser.add_argument("--no-pld", action="store_true", help="skip the PLD accountant (RDP only, faster)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(commands) -> None:
    """Register ``vandijk r0|select|schedule`` on the top-level subparsers."""
    paper = commands.add_parser("vandijk", help="van Dijk et al.: increasing sample sizes, r0(σ), K-/K+ planning")
    which = paper.add_subparsers(dest="vandijk_command", required=True, parser_class=type(paper))
    r0 = which.add_parser("r0", help="r0(σ) by the fixed point of the proof of Theorem 6")
    r0.add_argument("--sigma", type=float, required=True, help="noise multiplier σ >= 1.137")
    r0.add_argument("--p", type=float, default=1.0, help="growth exponent p (default 1)")
    r0.add_argument("--gamma", type=float, default=0.0, help="bound γ on m/T (the paper uses 0)")
    r0.add_argument("--json", action="store_true", help="print one JSON object")
    select = which.add_parser("select", help="parameter selection (case 1 or 2) with tight ε of the result")
    add_plan_options(select)
    schedule = which.add_parser("schedule", help="write the per-round schedule to CSV, JSON or YAML")
    add_plan_options(schedule)
    schedule.add_argument("--out", required=True, metavar="FILE", help=f"output file ({', '.join(FORMATS)})")
    schedule.add_argument("--learning-rate", type=float, help="η0 of the per-iteration step size η_t")
    schedule.add_argument("--decay", type=float, default=0.0, help="β of η_t = η0/(1+βt) or η0/(1+β√t)")
    schedule.add_argument("--step-rule", default="inverse",
                          help="inverse: η0/(1+βt) (default), inverse-sqrt: η0/(1+β√t)")
    paper.set_defaults(handler=run)


def _integer(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value  # non-integers are rejected by the bounds


def plan_from_args(args: argparse.Namespace, **extra):
    from fedplan.planner.vandijk import plan_vandijk  # scipy.optimize: loaded only when a vandijk command runs

    if args.sigma_range is not None and args.delta is None:
        raise ValueError("--sigma-range needs --delta (the target δ)")
    return plan_vandijk(initial_size=_integer(args.initial_size),
                        client_size=_integer(args.client_size), epsilon=args.epsilon,
                        grad_computations=args.grad_computations, epochs=args.epochs, sigma=args.sigma,
                        sigma_range=None if args.sigma_range is None else tuple(args.sigma_range), delta=args.delta,
                        p=args.p, r0=parse_r0(args.r0), variant=args.variant, case=args.case, k=args.k,
                        max_passes=args.max_passes, with_pld=not args.no_pld, **extra)


def run(args: argparse.Namespace) -> dict:
    if args.vandijk_command == "r0":
        from fedplan.bounds import vandijk

        result = vandijk.r0_of_sigma(sigma=args.sigma, p=args.p, gamma=args.gamma)
        return {"sigma": result.sigma, "p": result.p, "gamma": result.gamma, "r0": result.r0, "r": result.r,
                "alpha": result.alpha, "u0": result.u0, "u1": result.u1, "iterations": result.iterations,
                "statement": f"r0({result.sigma:g}) = {result.r0:.6g} for p = {result.p:g} ({result.source})"}
    if args.vandijk_command == "select":
        return plan_from_args(args).summary()
    format_for_path(args.out)  # reject a bad extension before the (slow) accounting
    plan = plan_from_args(args, learning_rate=args.learning_rate, decay=args.decay, step_rule=args.step_rule)
    path = write_schedule(plan.schedule(), args.out, cumulative_epsilon=plan.cumulative_epsilon())
    summary = plan.summary()
    summary["statement"] = f"wrote {plan.realised_rounds} rounds to {path}. " + summary["statement"]
    return {"out": str(path), **summary}
