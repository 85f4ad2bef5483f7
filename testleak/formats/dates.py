"""Calendar dates (``dateutil``) and the date-of-birth plausibility window 1900..today."""

from __future__ import annotations

import re
from datetime import date

from dateutil import parser as _parser

_HAS_YEAR = re.compile(r"\d{4}|\b\d{1,2}[/.\-]\d{1,2}[/.\-]\d{2}\b")


def parse_date(v: str) -> date | None:
    """The calendar date ``v`` spells (with a year), else None."""
    s = v.strip()
    if not 6 <= len(s) <= 40 or not _HAS_YEAR.search(s):
        return None
    try:
        return _parser.parse(s, fuzzy=False).date()
    except (ValueError, OverflowError, TypeError, _parser.ParserError):
        return None


def birth_date_error(v: str, today: date | None = None) -> str | None:
    """None for a plausible date of birth (a real date in 1900..today), else the reason."""
    if not _HAS_YEAR.search(v):
        return "no year in the date"
    d = parse_date(v)
    if d is None:
        return "not a parseable calendar date"
    if not date(1900, 1, 1) <= d <= (today or date.today()):
        return "date outside 1900..today"
    return None
