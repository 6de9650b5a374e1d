"""Small helpers shared by the app pages: parsing text inputs and showing bounds safely."""

from __future__ import annotations


def parse_number(name: str, text: str) -> float:
    """A float from a text box, or a ValueError naming the field."""
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number; got {text!r}") from None


def parse_whole(name: str, text: str, *, low: int | None = None, high: int | None = None) -> int:
    """A whole number from a text box (optionally in [low, high]), or a ValueError naming the field."""
    value = parse_number(name, text)
    if not value.is_integer() or (low is not None and value < low) or (high is not None and value > high):
        bounds = f" in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise ValueError(f"{name} must be a whole number{bounds if low is not None or high is not None else ''}; "
                         f"got {text!r}")
    return int(value)


def epsilon_text(value: float, decimals: int = 4) -> str:
    """ε rounded *up* at the shown precision: a displayed ε is never below the computed bound."""
    nearest = round(value, decimals)
    return f"{nearest if nearest >= value else nearest + 10**-decimals:.{decimals}f}"
