"""Parameter validation shared by every public function of fedplan.

Each check returns the value converted to a plain Python number and raises
``ValueError`` with a message that names the parameter, the offending value and the
allowed range, e.g. ``sample_rate must be a real number in (0, 1]; got 1.5``.
The CLI prints that message on one line (exit code 2); the app shows it with ``st.error``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable


def _interval_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    left = "(" if (low is None or low_open) else "["
    right = ")" if (high is None or high_open) else "]"
    low_text = "-inf" if low is None else f"{low:g}"
    high_text = "inf" if high is None else f"{high:g}"
    return f"{left}{low_text}, {high_text}{right}"


def check_real(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float inside the interval, or raise ``ValueError``.

    The bounds' inner loops call this tens of thousands of times per answer (the increasing-sizes curve: 16 600
    calls), so the message's interval is written only when the check fails, and a float (NumPy's included) skips
    the ``numbers.Real`` check, an ABC lookup: together 3× faster on a valid float."""
    if isinstance(value, float):
        number = float(value)
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in {_interval_text(low, high, low_open, high_open)}; got "
                         f"{_shown(value)}")
    else:
        try:
            number = float(value)
        except OverflowError:  # an int beyond the float range, e.g. 10**400
            number = math.inf if value > 0 else -math.inf
    outside = (
        not math.isfinite(number)
        or (low is not None and (number < low or (low_open and number == low)))
        or (high is not None and (number > high or (high_open and number == high)))
    )
    if outside:
        raise ValueError(f"{name} must be a real number in {_interval_text(low, high, low_open, high_open)}; got "
                         f"{_shown(value)}")
    return number


def _shown(value: object) -> str:
    """A value as an error message quotes it: numbers with ``:g`` (an int of 400 digits as ``1e+400``-like text),
    anything else by ``repr``, cut to 60 characters."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        digits = str(abs(int(value)))
        if len(digits) > 15:
            mantissa = f"{digits[0]}.{digits[1:4]}".rstrip("0").rstrip(".")
            return f"{'-' if value < 0 else ''}{mantissa}e+{len(digits) - 1}"
        return str(int(value))
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f"{float(value):g}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int inside ``[low, high]``, or raise ``ValueError``.

    Integral floats such as ``1e4`` are accepted (users type them); ``1.5`` is not. As in :func:`check_real`, a
    plain int skips the ABC checks and the interval is written only into a message.
    """
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _not_an_integer(name, value, low, high)
        if not isinstance(value, numbers.Integral):
            as_float = float(value)
            if not math.isfinite(as_float) or as_float != int(as_float) \
                    or (low is not None and as_float < low) or (high is not None and as_float > high):
                raise _not_an_integer(name, value, low, high)
            if abs(as_float) > 2**53:  # 1e23 is 99999999999999991611392: not the number the user typed
                raise _not_an_integer(name, value, low, high, " given exactly", ", beyond the 2^53 up to which a "
                                      "floating-point number holds every integer")
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise _not_an_integer(name, value, low, high)
    return number


def _not_an_integer(name: str, value: object, low: int | None, high: int | None, how: str = "",
                    why: str = "") -> ValueError:
    return ValueError(f"{name} must be an integer in {_interval_text(low, high, False, False)}{how}; got "
                      f"{_shown(value)}{why}")


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, or raise ``ValueError`` listing them."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:  # an array would make `in` ambiguous (fuzz)
        listed = ", ".join(repr(option) for option in options)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return str(value)
