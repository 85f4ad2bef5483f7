"""Shannon entropy: of a distribution given as counts, and of a string's characters."""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable


def shannon_entropy(counts: Iterable[int], base: float = 2) -> float:
    """Entropy of the distribution ``counts`` (occurrences per outcome); 0 when empty."""
    sizes = [c for c in counts if c]
    n = sum(sizes)
    if n == 0:
        return 0.0
    return -sum((c / n) * math.log(c / n, base) for c in sizes) + 0.0  # no -0.0


def char_entropy(s: str) -> float:
    """Bits per character of the character distribution of ``s``."""
    return shannon_entropy(Counter(s).values())
