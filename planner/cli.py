"""The ``fedplan`` command line.

Every subcommand prints a readable table, or one JSON object with ``--json``. Bad input is
reported on one line on stderr with exit code 2 (never a traceback).

    fedplan epsilon --sample-rate 0.01 --noise-multiplier 1.1 --steps 10000 --delta 1e-5
    fedplan epsilon --schedule schedule.csv --delta 1e-5 --json
    fedplan delta --sample-rate 0.01 --noise-multiplier 1.1 --steps 10000 --epsilon 2
    fedplan calibrate noise --target-epsilon 2 --target-delta 1e-5 --sample-rate 0.01 --steps 10000
    fedplan calibrate steps --target-epsilon 8 --target-delta 1e-5 --sample-rate 0.01 --noise-multiplier 1.1
    fedplan calibrate sample-rate --target-epsilon 2 --target-delta 1e-5 --noise-multiplier 1.1 --steps 10000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from fedplan.bounds import accounting
from fedplan.planner import cli_adp2sgd, cli_damaskinos, cli_fedsgd_dpc, cli_mapa, cli_simulate, cli_sweep, cli_vandijk
from fedplan.planner.schedule_io import load_schedule


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports usage errors on a single line with exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_accountant_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--accountant", choices=accounting.ACCOUNTANTS, default="pld",
                        help="pld (tight, default) or rdp (fast, looser)")
    parser.add_argument("--time-budget", type=float, default=accounting.DEFAULT_TIME_BUDGET, metavar="SECONDS",
                        help="seconds PLD may take before the RDP answer is reported instead (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _add_schedule_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sample-rate", "--sampling-probability", "-q", type=float, dest="sample_rate",
                        help="Poisson sampling probability q in (0, 1]")
    parser.add_argument("--noise-multiplier", "--sigma", type=float, dest="noise_multiplier",
                        help="noise std / clipping norm")
    parser.add_argument("--steps", "--rounds", type=float, dest="steps", help="number of steps (rounds) T")
    parser.add_argument("--schedule", metavar="FILE",
                        help="CSV or JSON file of segments (sample_rate, noise_multiplier, steps) "
                             "instead of the three values")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="fedplan", description="Plan differentially private federated training.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)

    epsilon = commands.add_parser("epsilon", help="ε of a schedule at a given δ")
    _add_schedule_options(epsilon)
    epsilon.add_argument("--delta", type=float, required=True, help="target δ in (0, 1)")
    _add_accountant_options(epsilon)

    delta = commands.add_parser("delta", help="δ of a schedule at a given ε")
    _add_schedule_options(delta)
    delta.add_argument("--epsilon", type=float, required=True, help="ε ≥ 0")
    _add_accountant_options(delta)

    calibrate = commands.add_parser("calibrate", help="solve for one parameter given a target (ε, δ)")
    which = calibrate.add_subparsers(dest="parameter", required=True, parser_class=_OneLineParser)
    for name, needs in (("noise", ("sample_rate", "steps")), ("steps", ("sample_rate", "noise_multiplier")),
                        ("sample-rate", ("noise_multiplier", "steps"))):
        sub = which.add_parser(name, help=f"largest useful {name} with ε ≤ target")
        sub.add_argument("--target-epsilon", type=float, required=True)
        sub.add_argument("--target-delta", type=float, required=True)
        if "sample_rate" in needs:
            sub.add_argument("--sample-rate", "--sampling-probability", "-q", type=float, dest="sample_rate",
                             required=True)
        if "noise_multiplier" in needs:
            sub.add_argument("--noise-multiplier", "--sigma", type=float, dest="noise_multiplier", required=True)
        if "steps" in needs:
            sub.add_argument("--steps", "--rounds", type=float, dest="steps", required=True)
        _add_accountant_options(sub)
    cli_vandijk.add_parser(commands)
    cli_fedsgd_dpc.add_parser(commands)
    cli_damaskinos.add_parser(commands)
    cli_mapa.add_parser(commands)
    cli_adp2sgd.add_parser(commands)
    cli_simulate.add_parser(commands)
    cli_sweep.add_parser(commands)
    return parser


_CALIBRATED_PARAMETER = {"noise": "noise_multiplier", "steps": "steps", "sample-rate": "sample_rate"}


def _schedule_arguments(args: argparse.Namespace) -> dict:
    singles = {name: getattr(args, name) for name in ("sample_rate", "noise_multiplier", "steps")}
    if args.schedule is not None:
        given = [f"--{name.replace('_', '-')}" for name, value in singles.items() if value is not None]
        if given:
            raise ValueError(f"--schedule cannot be combined with {', '.join(given)}")
        return {"segments": load_schedule(args.schedule)}
    missing = [f"--{name.replace('_', '-')}" for name, value in singles.items() if value is None]
    if missing:
        raise ValueError("give --schedule FILE or all of --sample-rate, --noise-multiplier, --steps "
                         f"(missing {', '.join(missing)})")
    return singles


def _run(args: argparse.Namespace) -> dict:
    if hasattr(args, "handler"):
        return args.handler(args)
    common = {"accountant": args.accountant, "time_budget": args.time_budget}
    if args.command == "epsilon":
        return accounting.get_epsilon(delta=args.delta, **_schedule_arguments(args), **common).to_dict()
    if args.command == "delta":
        return accounting.get_delta(epsilon=args.epsilon, **_schedule_arguments(args), **common).to_dict()
    parameter = _CALIBRATED_PARAMETER[args.parameter]
    fixed = {name: getattr(args, name) for name in ("sample_rate", "noise_multiplier", "steps")
             if name != parameter}
    result = accounting.calibrate(parameter, target_epsilon=args.target_epsilon, target_delta=args.target_delta,
                                  **fixed, **common)
    output = result.to_dict()
    output[parameter] = result.value
    return output


def _format_table(output: dict) -> str:
    skip = {"segments", "statement", "fixed", "source", "value", "hypotheses"}
    rows = []
    for key, value in output.items():
        if key in skip or value is None:
            continue
        if isinstance(value, dict):
            rows += [(f"{key} {inner}", item) for inner, item in value.items()]
        else:
            rows.append((key, value))
    rows += [(f"fixed {key}", value) for key, value in output.get("fixed", {}).items()]
    width = max(len(key) for key, _ in rows)
    lines = [f"{key.ljust(width)}  {_format_value(value)}" for key, value in rows]
    checks = [f"{'holds' if h['holds'] else 'FAILS'}  {h['name']}: {h['detail']} ({h['source']})"
              for h in output.get("hypotheses", [])]
    if checks:
        lines += ["", "hypotheses:"] + [f"  {line}" for line in checks]
    return "\n".join(lines + ["", output["statement"]])


def _format_value(value) -> str:
    """Numbers in full (repr): rounding a printed ε could show less than the certified bound."""
    return repr(value) if isinstance(value, float) else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        output = _run(args)
    except ValueError as error:
        print(f"fedplan: error: {error}", file=sys.stderr)
        return 2
    except ArithmeticError as error:  # an overflow no validation foresaw: still one line, never a traceback
        print(f"fedplan: error: an input is outside the range the formulas can evaluate ({error})", file=sys.stderr)
        return 2
    try:
        print(json.dumps(output) if args.json else _format_table(output))
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `fedplan ... | head`: the reader has gone, which is not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit-time flush quiet
    return 0


if __name__ == "__main__":
    sys.exit(main())
