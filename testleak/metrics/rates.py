"""Rates and rounding shared by every metric (paper Sec. 6: permille columns of Tables 2-3,
percentages of Table 4).

Conventions: a rate with an empty denominator is 0.0 (0 responses -> 0.0, never a
ZeroDivisionError); rates are returned as fractions in [0, 1] and converted to permille or
percent only for display. The paper rounds half-up (21.75 -> 21.8), so :func:`round_half_up`
rounds the decimal representation, not the binary float (``round(13.25, 1)`` in Python gives
13.2; the paper prints 13.3).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, or 0.0 when the denominator is 0 (empty input)."""
    if denominator < 0 or numerator < 0:
        raise ValueError(f"counts must be non-negative, got {numerator}/{denominator}")
    return float(numerator) / float(denominator) if denominator else 0.0


def permille(numerator: float, denominator: float) -> float:
    """numerator / denominator in permille (0.0 for an empty denominator)."""
    if denominator < 0 or numerator < 0:
        raise ValueError(f"counts must be non-negative, got {numerator}/{denominator}")
    if not denominator:
        return 0.0
    # decimal arithmetic so that transcribed counts (8.7 / 400) give 21.75, not 21.7499...
    return float(_dec(numerator) * 1000 / _dec(denominator))


def _dec(x: float) -> Decimal:
    return Decimal(repr(x)) if isinstance(x, (int, float)) and not isinstance(x, bool) else Decimal(str(x))


def round_half_up(x: float, digits: int = 1) -> float:
    """Round like the paper (half away from zero on the shortest decimal repr of x)."""
    q = Decimal(1).scaleb(-digits)
    return float(_dec(float(x)).quantize(q, rounding=ROUND_HALF_UP))
