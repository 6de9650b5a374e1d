"""``fedplan adp2sgd …``: Xu et al.'s Theorem 2 (σ ↔ ε, floor) next to tight accountants, and schedule export.

    fedplan adp2sgd sigma --workers 16 --examples-per-worker 3125 --batch-size 256 --steps 58594 --delta 1e-5 \\
        --epsilon 10
    fedplan adp2sgd epsilon --workers 16 --examples-per-worker 3125 --batch-size 256 --steps 58594 --delta 1e-5 \\
        --noise-multiplier 2 --json
    fedplan adp2sgd min-epsilon --workers 16 --examples-per-worker 3125 --batch-size 256 --steps 58594 --delta 1e-5
    fedplan adp2sgd schedule ... --epsilon 10 --out plan.json
"""

from __future__ import annotations

import argparse

from fedplan.planner.display import integral
from fedplan.planner.export import FORMATS, format_for_path, write_schedule


def _add_setting(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", "-K", type=float, required=True, help="number of workers K")
    parser.add_argument("--examples-per-worker", "-n", type=float, required=True,
                        help="records per worker (the smallest local data set n_(1))")
    parser.add_argument("--batch-size", "-B", type=float, required=True, help="minibatch size B per update")
    parser.add_argument("--steps", "-T", type=float, required=True, help="total iterations T (all workers)")
    parser.add_argument("--delta", type=float, required=True, help="δ in (0, 1)")
    parser.add_argument("--worker-steps", type=float,
                        help="most updates one worker makes (per-worker accountant; default ceil(T/K))")
    parser.add_argument("--clipping-norm", "-G", type=float, default=1.0,
                        help="per-example gradient clipping norm G (default 1)")
    parser.add_argument("--reference-accountant", choices=("rdp", "pld"), default="rdp",
                        help="accountant of the Poisson add/remove reference (default rdp)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _add_noise(parser: argparse.ArgumentParser, required: bool) -> None:
    noise = parser.add_mutually_exclusive_group(required=required)
    noise.add_argument("--noise-multiplier", "-z", type=float, dest="noise_multiplier",
                       help="replace-one noise multiplier z = std/(2G/B) (noise on the averaged gradient)")
    noise.add_argument("--sigma", type=float, help="noise std σ; see --noise-on")
    parser.add_argument("--noise-on", choices=("mean", "sum"), default="mean",
                        help="σ is added to the averaged minibatch gradient (mean, the paper's proof) or to the sum")
    parser.add_argument("--variant", choices=("corrected", "paper"), default="corrected",
                        help="corrected: monotone envelope of the certificate (default); paper: the raw value")


def add_parser(commands) -> None:
    """Register ``adp2sgd sigma|epsilon|min-epsilon|schedule`` on the top-level subparsers."""
    paper = commands.add_parser("adp2sgd", help="Xu et al. A(DP)2SGD: Theorem 2 noise vs epsilon, floor, tight")
    which = paper.add_subparsers(dest="adp2sgd_command", required=True, parser_class=type(paper))
    sigma = which.add_parser("sigma", help="least noise for a target ε: Theorem 2 (best μ) and the tight accountant")
    _add_setting(sigma)
    sigma.add_argument("--epsilon", type=float, required=True, help="target ε")
    epsilon = which.add_parser("epsilon", help="ε of a noise level: Theorem 2 (best μ) and the tight accountant")
    _add_setting(epsilon)
    _add_noise(epsilon, required=True)
    floor = which.add_parser("min-epsilon", help="smallest ε Theorem 2 can certify and its noise band")
    _add_setting(floor)
    schedule = which.add_parser("schedule", help="write the schedule to CSV, JSON or YAML")
    _add_setting(schedule)
    schedule.add_argument("--epsilon", type=float, help="target ε (or give the noise)")
    _add_noise(schedule, required=False)
    schedule.add_argument("--noise-source", choices=("auto", "paper", "tight"), default="auto",
                          help="with --epsilon: Theorem 2's noise (paper), the tight one, or paper when feasible")
    schedule.add_argument("--learning-rate", type=float, help="learning rate η written into the schedule")
    schedule.add_argument("--out", required=True, metavar="FILE", help=f"output file ({', '.join(FORMATS)})")
    paper.set_defaults(handler=run)


def _setting(args: argparse.Namespace):
    from fedplan.bounds.adp2sgd import Setting

    return Setting(workers=integral(args.workers), examples_per_worker=integral(args.examples_per_worker),
                   batch_size=integral(args.batch_size), steps=integral(args.steps), delta=args.delta,
                   worker_steps=None if args.worker_steps is None else integral(args.worker_steps))


def _noise_multiplier(args: argparse.Namespace, setting) -> float | None:
    from fedplan.bounds.adp2sgd import noise_multiplier_of_std

    if args.sigma is None:
        return args.noise_multiplier
    return noise_multiplier_of_std(std=args.sigma, clipping_norm=args.clipping_norm, batch_size=setting.batch_size,
                                   noise_on=args.noise_on)


def _min_epsilon(args: argparse.Namespace, setting) -> dict:
    from fedplan.bounds import adp2sgd as xu
    from fedplan.planner.adp2sgd import plan_adp2sgd

    floor = xu.epsilon_floor(setting=setting)
    plan = plan_adp2sgd(setting=setting, noise_multiplier=floor.noise_multiplier, clipping_norm=args.clipping_norm,
                        reference_accountant=args.reference_accountant)
    summary = plan.summary()
    summary["analytic_lower_bound"] = floor.analytic_lower_bound
    summary["statement"] = (f"Theorem 2 cannot certify epsilon below {floor.epsilon:.6g} at delta = {setting.delta:g} "
                            f"(reached at noise multiplier {floor.noise_multiplier:.6g}; it certifies nothing outside "
                            f"z in [{floor.band[0]:.6g}, {floor.band[1]:.6g})). " + summary["statement"])
    return summary


def run(args: argparse.Namespace) -> dict:
    setting = _setting(args)
    if args.adp2sgd_command == "min-epsilon":
        return _min_epsilon(args, setting)
    from fedplan.planner.adp2sgd import plan_adp2sgd  # scipy.optimize: loaded only when an adp2sgd command runs

    common = dict(setting=setting, clipping_norm=args.clipping_norm, reference_accountant=args.reference_accountant)
    if args.adp2sgd_command == "sigma":
        return plan_adp2sgd(target_epsilon=args.epsilon, **common).summary()
    z = _noise_multiplier(args, setting)
    if args.adp2sgd_command == "epsilon":
        return plan_adp2sgd(noise_multiplier=z, variant=args.variant, **common).summary()
    format_for_path(args.out)  # reject a bad extension before the accounting
    if (args.epsilon is None) == (z is None):
        raise ValueError("give exactly one of --epsilon and --noise-multiplier/--sigma")
    plan = plan_adp2sgd(target_epsilon=args.epsilon, noise_multiplier=z, noise_source=args.noise_source,
                        learning_rate=args.learning_rate, variant=args.variant, **common)
    path = write_schedule(plan.schedule(), args.out, cumulative_epsilon=plan.cumulative_epsilon())
    summary = plan.summary()
    summary["statement"] = f"wrote {setting.steps} iterations to {path}. " + summary["statement"]
    return {"out": str(path), **summary}
