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

from dataclasses import asdict, dataclass

from fedplan.bounds.validation import check_choice, check_int

#: rule → (a, b, source) of the requirement n ≥ a·f + b; averaging tolerates no fault (a = ∞ in effect).
REQUIREMENTS = {
    "krum": (2, 3, "Damaskinos L893 (Krum = Multi-Krum with m = 1), L877"),
    "multi-krum": (2, 3, "Damaskinos L877, L891-895"),
    "bulyan": (4, 3, "Damaskinos L895, L931"),
    "kardam": (3, 1, "Damaskinos L1786, L1242 (n >= 3f+1; spec K-N)"),
    "kardam-strict": (3, 2, "Damaskinos Theorem 3, L1144 (n > 3f+1 as printed)"),
    "averaging": (None, 1, "Damaskinos L833: averaging is not Byzantine-resilient"),
}
RULES = tuple(REQUIREMENTS)


@dataclass(frozen=True)
class Tolerance:
    """The Byzantine capacity of one rule: n workers tolerate at most ``max_faults`` Byzantine ones."""

    rule: str
    workers: int
    max_faults: int
    requirement: str
    source: str

    def to_dict(self) -> dict:
        return asdict(self)

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
    return Tolerance(rule=rule, workers=n, max_faults=faults, requirement=requirement_text(rule=rule), source=source)


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
