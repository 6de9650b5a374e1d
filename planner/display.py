"""Numbers as the app pages show them: ε rounded up, never below the computed bound; a theorem-backed number
marked "no guarantee" where a hypothesis of its theorem fails (in the app, the reports, the exports and the
validations alike)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal


def epsilon_text(value: float, decimals: int = 4) -> str:
    """ε rounded *up* at the shown precision: a displayed ε is never below the computed bound."""
    nearest = round(value, decimals)
    return f"{nearest if nearest >= value else nearest + 10**-decimals:.{decimals}f}"


def number_text(value: float, digits: int = 4, *, up: bool = False) -> str:
    """``value`` for people: ``digits`` significant digits without trailing zeros, thousands grouped by a space from
    10⁻³ to below 10⁶ (``25 000``, ``86.52``), a power of ten outside (``1e7``, ``2.06e-8``). ``up`` rounds towards
    +∞ where the nearest would read back below ``value``, for an ε or a bound (the number shown is never below the
    one computed)."""
    if value == 0 or not math.isfinite(value):
        return {math.inf: "∞", -math.inf: "−∞"}.get(value, "0" if value == 0 else "nan")
    exponent = math.floor(math.log10(abs(value))) - digits + 1
    scaled = Decimal(value).scaleb(-exponent)  # exact: the binary value in decimal
    shown = scaled.to_integral_value(rounding=ROUND_HALF_EVEN).scaleb(exponent)
    if up and float(shown) < value:  # the text read back is below the value (0.05 stays 0.05: the same float)
        shown = scaled.to_integral_value(rounding=ROUND_CEILING).scaleb(exponent)
    if 1e-3 <= abs(shown) < 1e6:
        text = format(shown, ",f").replace(",", " ")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, power = f"{shown:e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    return f"{mantissa}e{int(power)}"


def accountant_label(accountant: str, bound: str) -> str:
    """How every page names the accountant behind an ε: "PLD, tight" only for a tight PLD; an RDP answer (asked for,
    or a fallback) is always "RDP upper bound", never "tight"."""
    if accountant in ("pld", "rdp"):
        return f"{accountant.upper()}, tight" if bound == "tight" and accountant == "pld" else \
            f"{accountant.upper()} upper bound"
    return {"participation": "participation bound"}.get(accountant, accountant)


#: What a theorem-backed number is: a guarantee when every hypothesis of its theorem holds, else no guarantee
#: (the theorem says nothing about it). The same words as ``bounds.theorem.TheoremResult.guarantee``.
GUARANTEE, NO_GUARANTEE = "guarantee", "no guarantee"


def _holds(item) -> bool:
    return bool(item["holds"] if isinstance(item, Mapping) else item.holds)


def _name(item) -> str:
    return item["name"] if isinstance(item, Mapping) else item.name


def failing_hypotheses(hypotheses) -> list[str]:
    """The names of the hypotheses that fail; each item a :class:`~fedplan.bounds.theorem.Hypothesis` or its
    ``to_dict()`` mapping (as reports and exports carry them)."""
    return [_name(item) for item in hypotheses if not _holds(item)]


def guarantee_fields(hypotheses) -> dict:
    """``{"valid": every hypothesis holds, "guarantee": "guarantee" | "no guarantee"}``: what the JSON of a report,
    an export or a validation carries next to a theorem-backed number."""
    valid = not failing_hypotheses(hypotheses)
    return {"valid": valid, "guarantee": GUARANTEE if valid else NO_GUARANTEE}


def theorem_fields(hypotheses) -> dict:
    """The checked ``hypotheses`` as mappings with :func:`guarantee_fields`: the metadata of an export whose numbers
    come from a theorem."""
    return {"hypotheses": [dict(item) if isinstance(item, Mapping) else item.to_dict() for item in hypotheses],
            **guarantee_fields(hypotheses)}


def guarantee_text(hypotheses) -> str:
    """``"guarantee"``, or ``"no guarantee (failing: <names>)"`` when a hypothesis fails."""
    failing = failing_hypotheses(hypotheses)
    return f"{NO_GUARANTEE} (failing: {', '.join(failing)})" if failing else GUARANTEE


def theorem_label(label: str, hypotheses) -> str:
    """A page's label for a theorem-backed number: ``label`` as is, or with " — no guarantee" when a hypothesis of
    the theorem fails (the page's hypotheses table names which)."""
    return f"{label} — {NO_GUARANTEE}" if failing_hypotheses(hypotheses) else label
