"""Shared sympy tools for the derivations in :mod:`bounds.symbolic`: canonical monomials, the positive root
of a monotone equation, and float functions of an expression."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp


def positive_factorisation(total: sp.Expr) -> sp.Expr:
    """``sp.factor(total)`` if every factor is known to be positive (so its log expands), else ``total``."""
    factored = sp.factor(total)
    return factored if all(factor.is_positive for factor in sp.Mul.make_args(factored)) else total


def monomial(expr: sp.Expr) -> sp.Expr:
    """Canonical form of a product of powers of positive factors: one power per base, exponents cancelled.

    log(expr) is expanded (all bases are positive, so ``force=True`` is sound), sums are factored
    (so that 3p²+4p+1 becomes (p+1)(3p+1)), the coefficient of each log(base) is collected and
    cancelled, and the product is rebuilt. Sums that do not factor stay as bases.
    """
    exponents: dict[sp.Expr, sp.Expr] = {}
    pending = [(sp.S.One, expr)]
    while pending:
        weight, factor = pending.pop()
        logged = sp.expand(sp.expand_log(sp.log(factor), force=True))
        for term in sp.Add.make_args(logged):
            if term == 0:
                continue
            logs = [item for item in sp.Mul.make_args(term) if isinstance(item, sp.log)]
            if len(logs) != 1:
                raise ArithmeticError(f"not a product of powers of positive factors: {expr}")
            base, exponent = logs[0].args[0], weight * term / logs[0]
            factored = positive_factorisation(base) if base.is_Add else base
            if factored != base:
                pending.append((exponent, factored))
            else:
                exponents[base] = exponents.get(base, sp.S.Zero) + exponent
    result = sp.S.One
    for base, exponent in exponents.items():
        result *= base ** sp.factor(sp.cancel(exponent))
    return result


def solve_positive(lhs: sp.Expr, rhs: sp.Expr, var: sp.Symbol) -> tuple[sp.Expr, bool]:
    """The positive root of lhs(var) = rhs and whether lhs increases in var (strictly monotone lhs).

    Returns (root, increasing): lhs ≤ rhs ⟺ var ≤ root when increasing, var ≥ root otherwise.
    Monotonicity is decided by sympy from the sign of d lhs/d var under the positivity assumptions.
    """
    roots = [root for root in sp.solve(sp.Eq(lhs, rhs), var) if root.is_positive is not False]
    if len(roots) != 1:
        raise ArithmeticError(f"expected one positive root of {lhs} = {rhs} in {var}, got {roots}")
    slope = sp.factor(sp.diff(lhs, var))
    if slope.is_positive is None and slope.is_negative is None:
        raise ArithmeticError(f"cannot decide whether {lhs} is monotone in {var} (derivative {slope})")
    return monomial(sp.factor(roots[0])), bool(slope.is_positive)


def as_function(expr: sp.Expr) -> Callable[..., float]:
    """A float function of ``expr`` taking its free symbols as keyword arguments (``p=…, gamma=…``).

    A missing or unexpected keyword raises ``ValueError`` naming it.
    """
    symbols = sorted(expr.free_symbols, key=lambda symbol: symbol.name)
    names = tuple(symbol.name for symbol in symbols)
    function = sp.lambdify(symbols, expr, modules="math")

    def evaluate(**values: float) -> float:
        missing, extra = set(names) - set(values), set(values) - set(names)
        if missing or extra:
            raise ValueError(f"arguments must be exactly {names}; missing {sorted(missing)}, "
                             f"unexpected {sorted(extra)}")
        return float(function(*(values[name] for name in names)))

    evaluate.__doc__ = f"{expr} as a float function of {', '.join(names) or 'nothing'}."
    return evaluate
