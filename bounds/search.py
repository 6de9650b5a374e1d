"""Find where a monotone privacy curve crosses a target, from the safe side.

Calibration asks for the parameter value ``x`` (noise multiplier, steps or sample rate) at the
edge of the budget: the best ``x`` whose ε(x) is still ≤ target. ε is monotone in ``x`` (it
decreases with the noise multiplier and increases with steps and sample rate). The search works
in ``log x`` with a safeguarded secant method, aims slightly inside the budget so that the last
evaluated point is usually a safe one, and keeps a bracket ``[safe, unsafe]`` once it has one.
Only evaluated points are returned: the value reported for the answer is the ε that was
computed for it, never an interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """An evaluated parameter value and its ε."""

    x: float
    value: float


class NoBoundary(Exception):
    """The curve does not cross the target inside ``[lower, upper]``; carries the last point."""

    def __init__(self, point: Point):
        super().__init__(f"no crossing up to x={point.x:g} (value {point.value:g})")
        self.point = point


@dataclass(frozen=True)
class Boundary:
    """Result of :func:`find_boundary`: the best safe point and, if one was seen, the nearest unsafe one."""

    safe: Point
    unsafe: Point | None
    evaluations: int


def find_boundary(
    evaluate: Callable[[float], float],
    *,
    target: float,
    increasing: bool,
    start: float,
    lower: float,
    upper: float,
    integer: bool = False,
    digits: int = 6,
    known: tuple[Point, ...] = (),
    first_step: float = 0.1,
    ftol: float = 1e-4,
    xtol: float = 1e-6,
    max_evaluations: int = 60,
    before_evaluation: Callable[[], None] = lambda: None,
) -> Boundary:
    """Best ``x`` in ``[lower, upper]`` with ``evaluate(x) ≤ target``.

    ``increasing`` says whether ``evaluate`` grows with ``x`` (then the safe side is small ``x``).
    Every evaluated ``x`` lies on a grid: integers if ``integer``, else numbers with ``digits``
    significant digits, so the answer is a short number whose ε was computed. Stops when a safe
    point is within ``ftol·target`` of the target (continuous ``x`` only), when the bracket is
    narrower than ``xtol`` in ``log x`` or has no grid point inside, or when the safe end is pinned
    at a bound. ``known`` points (already evaluated with this same function) seed the
    secant. ``before_evaluation`` is called before each evaluation (deadline checks). Raises
    :class:`NoBoundary` if no safe point exists in the range.
    """
    direction = 1.0 if increasing else -1.0  # moving x up moves ε in this direction
    aim = target * (1 - ftol / 2) if not integer else target
    history: list[tuple[float, float]] = []  # (log x, value - aim), in evaluation order
    state = {"safe": None, "unsafe": None, "weights": [1.0, 1.0], "kept": None}
    evaluations = 0

    def record(point: Point) -> None:
        history.append((math.log(point.x), point.value - aim))
        side = "safe" if point.value <= target else "unsafe"
        best = state[side]
        closer = best is None or (direction * (point.x - best.x) > 0) == (side == "safe")
        if not closer:
            return
        state[side] = point
        # Illinois bookkeeping: the end that was not replaced twice in a row gets its weight halved.
        other = 1 if side == "safe" else 0
        state["weights"][1 - other] = 1.0
        if state["kept"] == other:
            state["weights"][other] *= 0.5
        state["kept"] = other

    def done() -> bool:
        safe, unsafe = state["safe"], state["unsafe"]
        if safe is None:
            return False
        if (safe.x >= upper) if increasing else (safe.x <= lower):
            return True
        if not integer and safe.value >= target * (1 - ftol):
            return True
        if unsafe is None:
            return False
        middle = snap(0.5 * (safe.x + unsafe.x))
        return middle in (safe.x, unsafe.x) or (not integer and abs(math.log(unsafe.x / safe.x)) <= xtol)

    def snap(x: float) -> float:
        return float(round(x)) if integer else float(f"{x:.{digits}g}")

    def neighbour(x: float, step_dir: float) -> float:
        return x + step_dir if integer else snap(x * (1 + step_dir * 10.0 ** (1 - digits)))

    def propose_inside() -> float:
        safe, unsafe = state["safe"], state["unsafe"]
        u_s, u_u = math.log(safe.x), math.log(unsafe.x)
        g_s = (safe.value - aim) * state["weights"][0]
        g_u = (unsafe.value - aim) * state["weights"][1]
        if math.isfinite(g_u) and g_u > 0 > g_s:
            u_new = (u_s * g_u - u_u * g_s) / (g_u - g_s)
        else:
            u_new = 0.5 * (u_s + u_u)
        x_new = snap(math.exp(u_new))
        if x_new in (safe.x, unsafe.x):  # stay strictly inside the bracket
            x_new = snap(0.5 * (safe.x + unsafe.x))
        return x_new

    def propose_outside() -> float:
        u_last, g_last = history[-1]
        u_new = _secant(history)
        step_dir = (-1.0 if g_last > 0 else 1.0) * direction  # g > 0 means unsafe: lower ε
        max_jump = math.log(1 + first_step) * 2 ** max(len(history) - 1, 0)
        if u_new is not None and (u_new - u_last) * step_dir > 0:
            jump = min(abs(u_new - u_last) * 1.05, 4 * max_jump)
        else:
            jump = max_jump
        x_last = snap(math.exp(u_last))
        x_new = snap(math.exp(u_last + step_dir * max(jump, math.log(1 + first_step) / 8)))
        if x_new == x_last:
            x_new = neighbour(x_last, step_dir)
        return min(max(x_new, lower), upper)

    for point in known:
        record(point)
    x = min(max(snap(start), lower), upper)
    for _ in range(2 * max_evaluations):
        if not any(abs(math.log(x) - u) < 1e-15 for u, _ in history):
            before_evaluation()
            record(Point(x, float(evaluate(x))))
            evaluations += 1
        if done() or evaluations >= max_evaluations:
            break
        bracketed = state["safe"] is not None and state["unsafe"] is not None
        next_x = propose_inside() if bracketed else propose_outside()
        if state["safe"] is None and math.isclose(next_x, math.exp(history[-1][0]), rel_tol=1e-12):
            break  # pinned at a bound and still unsafe
        x = next_x
    if state["safe"] is None:
        raise NoBoundary(Point(x, history[-1][1] + aim))
    return Boundary(safe=state["safe"], unsafe=state["unsafe"], evaluations=evaluations)


def _secant(history: list[tuple[float, float]]) -> float | None:
    """Root of the line through the last two finite points of (log x, value - aim), if defined."""
    finite = [(u, g) for u, g in history if math.isfinite(g)]
    if len(finite) < 2:
        return None
    (u1, g1), (u2, g2) = finite[-2], finite[-1]
    if g1 == g2 or u1 == u2:
        return None
    return u2 - g2 * (u2 - u1) / (g2 - g1)
