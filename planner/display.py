"""Numbers as the app pages show them: ε rounded up, never below the computed bound."""

from __future__ import annotations


def epsilon_text(value: float, decimals: int = 4) -> str:
    """ε rounded *up* at the shown precision: a displayed ε is never below the computed bound."""
    nearest = round(value, decimals)
    return f"{nearest if nearest >= value else nearest + 10**-decimals:.{decimals}f}"
