"""How many Byzantine workers f a gradient aggregation rule tolerates among n (Damaskinos thesis, ch. 4-5).

Paper: ``damaskinos_thesis.txt``; spec ``specs/damaskinos_async_byzantine.md`` §4.1. Each rule has a
requirement n ≥ a·f + b:

* Krum and Multi-Krum: n ≥ 2f + 3 (L877, L891-895; weak resilience for m ≤ n − f − 2);
* Bulyan: n ≥ 4f + 3 (L895; strong resilience; β_avg = n − 4f − 2 ≥ 1, spec G-1);
* Kardam: n ≥ 3f + 1 (liveness needs 2f + 1 honest workers, L1786, and the experiments run n = 10, f = 3,
  L1242; Theorem 3 prints n > 3f + 1, L1144, available as ``rule="kardam-strict"``: n ≥ 3f + 2; spec K-N);
* plain averaging: no Byzantine worker at all (one worker can move the average anywhere, L833).

Both directions are exact integer arithmetic: ``max_byzantine`` is the largest f with n ≥ a·f + b and
``min_workers`` the smallest n for a given f. A rule that cannot run even with f = 0 (n < b) is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedplan.bounds.references import cite
from fedplan.bounds.theorem import TheoremResult, hypothesis
from fedplan.bounds.validation import check_choice, check_int

#: rule → (a, b, source) of the requirement n ≥ a·f + b; averaging tolerates no fault (a = ∞ in effect).
REQUIREMENTS = {
    "krum": (2, 3, cite("damaskinos", "Krum = Multi-Krum with m = 1", "L893, L877")),
    "multi-krum": (2, 3, cite("damaskinos", "Multi-Krum weak resilience", "L877, L891-895")),
    "bulyan": (4, 3, cite("damaskinos", "Bulyan strong resilience", "L895, L931")),
    "kardam": (3, 1, cite("damaskinos", "Kardam liveness and experiments (n >= 3f+1; ERRATA KARDAM-N)",
                          "L1786, L1242")),
    "kardam-strict": (3, 2, cite("damaskinos", "Theorem 3 (n > 3f+1 as printed)", "L1144")),
    "averaging": (None, 1, cite("damaskinos", "averaging is not Byzantine-resilient", "L833")),
}
#: Errata touching a rule's requirement (docs/ERRATA.md).
NOTES = {"kardam": ("KARDAM-N: n >= 3f + 1 (liveness, L1786); Theorem 3 prints n > 3f + 1 (rule kardam-strict)",),
         "kardam-strict": ("KARDAM-N: the printed n > 3f + 1 (L1144); the experiments run n = 10, f = 3 (L1242)",)}
RULES = tuple(REQUIREMENTS)


@dataclass(frozen=True)
class Tolerance(TheoremResult):
    """The Byzantine capacity of one rule: n workers tolerate at most ``max_faults`` Byzantine ones.

    ``hypotheses`` holds the rule's requirement n ≥ a·f + b at f = ``max_faults`` (for averaging f = 0), with
    its numbers; ``notes`` the errata of the requirement (KARDAM-N for Kardam).
    """

    rule: str
    workers: int
    max_faults: int
    requirement: str
    source: str
    notes: tuple[str, ...]

    def statement(self) -> str:
        return (f"{self.rule} with n = {self.workers} workers tolerates at most f = {self.max_faults} Byzantine "
                f"workers (requirement {self.requirement}; {self.source}).")


def requirement_text(*, rule: str) -> str:
    """The requirement as text, e.g. ``"n >= 4f + 3"`` (``"f = 0"`` for averaging)."""
    a, b, _ = REQUIREMENTS[check_choice("rule", rule, RULES)]
    return "f = 0" if a is None else f"n >= {a}f + {b}"


def max_byzantine(*, workers: int, rule: str) -> Tolerance:
    """Largest f with n ≥ a·f + b for ``rule``: ⌊(n − b)/a⌋ (0 for averaging).

    n = 19: Multi-Krum 8 (the f of L994), Bulyan 4 (L931), Kardam 6; n = 10: Multi-Krum 3, Bulyan 1, Kardam 3.
    Raises ``ValueError`` when n < b: the rule cannot run even without faults (Krum/Bulyan need n ≥ 3).
    """
    rule = check_choice("rule", rule, RULES)
    n = check_int("workers", workers, low=1)
    a, b, source = REQUIREMENTS[rule]
    if n < b:
        raise ValueError(f"workers must be >= {b} for {rule} (requirement {requirement_text(rule=rule)} with f = 0); "
                         f"got {n}")
    faults = 0 if a is None else (n - b) // a
    needed = b if a is None else a * faults + b
    name = f"n >= {b} (averaging: f = 0)" if a is None else f"n >= {a}f + {b} at f = {faults}"
    check = hypothesis(name, n, ">=", needed, source)
    return Tolerance(rule=rule, workers=n, max_faults=faults, requirement=requirement_text(rule=rule), source=source,
                     notes=NOTES.get(rule, ()), hypotheses=(check,))


def min_workers(*, faults: int, rule: str) -> int:
    """Smallest n tolerating f Byzantine workers: a·f + b (Bulyan, f = 4: 19, L931).

    Raises ``ValueError`` for averaging with f ≥ 1 (no n suffices).
    """
    rule = check_choice("rule", rule, RULES)
    f = check_int("faults", faults, low=0)
    a, b, _ = REQUIREMENTS[rule]
    if a is None:
        if f > 0:
            raise ValueError(f"averaging tolerates no Byzantine worker: no number of workers suffices for faults={f}")
        return b
    return a * f + b


def bulyan_parameters(*, workers: int, faults: int) -> dict:
    """Bulyan over Multi-Krum as in AggregaThor (spec §2.7, G-1): θ_sel = n − 2f − 2 selections, β_avg = n − 4f − 2
    values averaged per coordinate, m₀ = n − f − 2. n = 19, f = 4: (9, 1, 13)."""
    f = check_int("faults", faults, low=0)
    n = check_int("workers", workers, low=min_workers(faults=f, rule="bulyan"))
    return {"selection_size": n - 2 * f - 2, "averaged_per_coordinate": n - 4 * f - 2, "multikrum_m0": n - f - 2}
