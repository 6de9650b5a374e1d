"""Find where a monotone privacy curve crosses a target, from the safe side.

Calibration asks for the parameter value ``x`` (noise multiplier, steps or sample rate) at the
edge of the budget: the best ``x`` whose ε(x) is still ≤ target. ε is monotone in ``x`` (it
decreases with the noise multiplier and increases with steps and sample rate) and close to a
power law locally, so the search works on ``log ε`` against ``log x`` with a safeguarded secant
method (Illinois steps once the crossing is bracketed). It aims slightly inside the budget so
that the last evaluated point is usually a safe one. Only evaluated points are returned: the ε
reported for the answer is the one computed for it, never an interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

_FLOOR = -745.0  # log of the smallest positive double: stands in for log 0


@dataclass(frozen=True)
class Point:
    """An evaluated parameter value and its ε."""

    x: float
    value: float


class NoBoundaryError(Exception):
    """The curve does not cross the target inside ``[lower, upper]``; carries the last point."""

    def __init__(self, point: Point):
        super().__init__(f"no crossing up to x={point.x:g} (value {point.value:g})")
        self.point = point


@dataclass(frozen=True)
class Boundary:
    """Result of :func:`find_boundary`.

    ``safe`` is the best point with ε ≤ target, ``unsafe`` the nearest point above it (if seen),
    ``points`` every point the search knew (given or evaluated) in order, ``evaluations`` how many
    it evaluated itself.
    """

    safe: Point
    unsafe: Point | None
    points: tuple[Point, ...]
    evaluations: int


def _log(value: float) -> float:
    return math.log(value) if value > 0 else _FLOOR


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
    slope: float | None = None,
    first_step: float = 0.1,
    ftol: float = 1e-4,
    xtol: float = 1e-6,
    max_evaluations: int = 60,
    before_evaluation: Callable[[], None] = lambda: None,
    approximate: bool = False,
) -> Boundary:
    """Best ``x`` in ``[lower, upper]`` with ``evaluate(x) ≤ target``.

    ``increasing`` says whether ``evaluate`` grows with ``x`` (then the safe side is small ``x``).
    Every evaluated ``x`` lies on a grid: integers if ``integer``, else numbers with ``digits``
    significant digits, so the answer is a short number whose ε was computed. ``known`` points
    (evaluated with this same function) seed the secant; ``slope`` (d log ε / d log x), if given,
    is used while fewer than two points are known. Stops when a safe point is within
    ``ftol·target`` of the target (continuous ``x`` only), when the bracket is narrower than
    ``xtol`` in ``log x`` or has no grid point inside, or when the safe end is pinned at a bound.
    ``before_evaluation`` runs before each evaluation (deadline checks). ``approximate`` applies ``ftol`` and
    ``xtol`` to integer ``x`` too (a search whose answer only seeds a finer one need not pin the last integer). Raises
    :class:`NoBoundaryError` if no safe point is found.
    """
    direction = 1.0 if increasing else -1.0  # moving x up moves ε in this direction
    aim = target * (1 - ftol / 2) if not integer else target
    points: list[Point] = []
    state = {"safe": None, "unsafe": None, "weights": [1.0, 1.0], "kept": None}
    evaluations = 0

    def snap(x: float) -> float:
        return float(round(x)) if integer else float(f"{x:.{digits}g}")

    def gap(point: Point) -> float:
        return _log(point.value) - math.log(aim)

    def record(point: Point) -> None:
        points.append(point)
        side = "safe" if point.value <= target else "unsafe"
        best = state[side]
        if best is not None and (direction * (point.x - best.x) > 0) != (side == "safe"):
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
        continuous = approximate or not integer
        if continuous and safe.value >= target * (1 - ftol):
            return True
        if unsafe is None:
            return False
        middle = snap(0.5 * (safe.x + unsafe.x))
        return middle in (safe.x, unsafe.x) or (continuous and abs(math.log(unsafe.x / safe.x)) <= xtol)

    def propose_inside() -> float:
        safe, unsafe = state["safe"], state["unsafe"]
        u_s, u_u = math.log(safe.x), math.log(unsafe.x)
        g_s, g_u = gap(safe) * state["weights"][0], gap(unsafe) * state["weights"][1]
        u_new = (u_s * g_u - u_u * g_s) / (g_u - g_s) if math.isfinite(g_u) and g_u > 0 > g_s else 0.5 * (u_s + u_u)
        if integer:  # the last integer on the safe side of the estimate, or the safe end's neighbour: when the
            # estimate is right, the next evaluation closes the bracket (60 854 steps in 2 evaluations, not 4)
            estimate = math.exp(u_new)
            x_new = float(math.floor(estimate) if increasing else math.ceil(estimate))
            if x_new == safe.x:
                x_new = safe.x + (1.0 if increasing else -1.0)
        else:
            x_new = snap(math.exp(u_new))
        if x_new in (safe.x, unsafe.x) or not min(safe.x, unsafe.x) < x_new < max(safe.x, unsafe.x):
            x_new = snap(0.5 * (safe.x + unsafe.x))  # stay strictly inside the bracket
        return x_new

    def propose_outside() -> float:
        last = points[-1]
        u_last, g_last = math.log(last.x), gap(last)
        step_dir = (-1.0 if g_last > 0 else 1.0) * direction  # g > 0 means unsafe: lower ε
        local_slope = _secant_slope(points, gap)
        if local_slope is None or local_slope * direction <= 0:  # none yet, or rounding noise between close points
            local_slope = slope
        max_jump = math.log(1 + first_step) * 2 ** max(len(points) - 1, 0)
        jump = max_jump
        if local_slope is not None and local_slope * direction > 0:
            jump = min(abs(g_last / local_slope), 4 * max_jump)
        x_new = snap(math.exp(u_last + step_dir * jump))
        if x_new == snap(last.x):
            x_new = last.x + step_dir if integer else snap(last.x * (1 + step_dir * 10.0 ** (1 - digits)))
        return min(max(x_new, lower), upper)

    for point in known:
        record(point)
    x = min(max(snap(start), lower), upper)
    for _ in range(2 * max_evaluations):
        if all(point.x != x for point in points):
            before_evaluation()
            record(Point(x, float(evaluate(x))))
            evaluations += 1
        if done() or evaluations >= max_evaluations:
            break
        bracketed = state["safe"] is not None and state["unsafe"] is not None
        next_x = propose_inside() if bracketed else propose_outside()
        if state["safe"] is None and next_x == points[-1].x:
            break  # pinned at a bound and still unsafe
        x = next_x
    if state["safe"] is None:
        raise NoBoundaryError(points[-1])
    return Boundary(safe=state["safe"], unsafe=state["unsafe"], points=tuple(points), evaluations=evaluations)


def _secant_slope(points: list[Point], gap: Callable[[Point], float]) -> float | None:
    """d log ε / d log x through the last two points with finite positive values, if any."""
    usable = [point for point in points if math.isfinite(gap(point)) and point.value > 0]
    return log_log_slope(usable[-2], usable[-1]) if len(usable) >= 2 else None


def log_log_slope(first: Point, second: Point) -> float | None:
    """d log ε / d log x between two evaluated points (None if undefined)."""
    if first.x == second.x or min(first.value, second.value) <= 0 or first.value == second.value:
        return None
    if not (math.isfinite(first.value) and math.isfinite(second.value)):
        return None
    return (math.log(second.value) - math.log(first.value)) / (math.log(second.x) - math.log(first.x))
