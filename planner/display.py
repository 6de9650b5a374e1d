"""Numbers as the app pages show them: ε rounded up, never below the computed bound."""

from __future__ import annotations


def epsilon_text(value: float, decimals: int = 4) -> str:
    """ε rounded *up* at the shown precision: a displayed ε is never below the computed bound."""
    nearest = round(value, decimals)
    return f"{nearest if nearest >= value else nearest + 10**-decimals:.{decimals}f}"


def accountant_label(accountant: str, bound: str) -> str:
    """How every page names the accountant behind an ε: "PLD, tight" only for a tight PLD; an RDP answer (asked for,
    or a fallback) is always "RDP upper bound", never "tight"."""
    if accountant in ("pld", "rdp"):
        return f"{accountant.upper()}, tight" if bound == "tight" and accountant == "pld" else \
            f"{accountant.upper()} upper bound"
    return {"participation": "participation bound"}.get(accountant, accountant)
