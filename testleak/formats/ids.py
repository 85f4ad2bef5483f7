"""National identity numbers that carry a check digit (``python-stdnum``): US SSN, Chinese
resident identity card (RIC), Indian Aadhaar."""

from __future__ import annotations

import re

from stdnum.cn import ric as _ric
from stdnum.in_ import aadhaar as _aadhaar
from stdnum.us import ssn as _ssn

SSN_FORMATTED = re.compile(r"^\d{3}-\d{2}-\d{4}$")
# (name, short name, shape, validator): a value of the shape is that identifier iff the
# validator (check digits, reserved ranges) passes
NATIONAL_IDS = [
    ("US SSN", "SSN", re.compile(r"^\d{3}-?\d{2}-?\d{4}$"), _ssn.is_valid),
    ("Chinese resident ID", "RIC", re.compile(r"^\d{17}[\dXx]$"), _ric.is_valid),
    ("Aadhaar number", "Aadhaar", re.compile(r"^\d{4}\s?\d{4}\s?\d{4}$"), _aadhaar.is_valid),
]


def national_id(v: str) -> tuple[str, str, bool] | None:
    """``(name, short name, valid)`` for a value shaped like a known national ID, else None."""
    s = v.strip()
    for name, short, shape, valid in NATIONAL_IDS:
        if shape.match(s):
            return name, short, bool(valid(s))
    return None


def is_ssn(v: str) -> bool:
    """A valid US SSN written ``ddd-dd-dddd``."""
    s = v.strip()
    return bool(SSN_FORMATTED.match(s)) and _ssn.is_valid(s)
