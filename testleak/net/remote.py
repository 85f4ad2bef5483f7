"""What of a remote service's error text may be shown: a short excerpt, masked.

A server's error body can echo the request (a prompt holding candidate values, a search query
holding the value itself), so failure records and messages carry the HTTP status, the error
kind and at most :func:`remote_excerpt` of the body: :data:`EXCERPT_CHARS` characters with URL
user-info masked and every word that also occurs in what was sent masked, as is every run of
four or more digits."""

from __future__ import annotations

import re
from typing import Iterable

from .urls import MASK, mask_urls_in_text

EXCERPT_CHARS = 80
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d{4,}")


def remote_excerpt(text, sent: Iterable[str] = (), limit: int = EXCERPT_CHARS) -> str:
    """At most ``limit`` characters of the remote text ``text``, one line, safe to show (see the
    module docstring); ``sent``: the texts of the request (messages, query)."""
    vocab = {w.lower() for s in sent if isinstance(s, str) for w in _WORD.findall(s)}
    line = " ".join(str(text or "").split())
    line = mask_urls_in_text(line)
    line = _WORD.sub(lambda m: MASK if m.group(0).lower() in vocab or _DIGITS.search(m.group(0)) else m.group(0),
                     line)
    return line if len(line) <= limit else line[:limit - 3] + "..."
