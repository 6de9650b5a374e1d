"""Small helpers shared by the app pages: parsing text inputs and showing bounds safely."""

from __future__ import annotations


def parse_number(name: str, text: str) -> float:
    """A float from a text box, or a ValueError naming the field."""
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number; got {text!r}") from None


def epsilon_text(value: float, decimals: int = 4) -> str:
    """ε rounded *up* at the shown precision: a displayed ε is never below the computed bound."""
    nearest = round(value, decimals)
    return f"{nearest if nearest >= value else nearest + 10**-decimals:.{decimals}f}"
