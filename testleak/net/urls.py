"""URLs safe to show: user-info (``user:password@``) and secret query values masked."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
_SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|pwd|sig|signature|auth|credential)", re.I)
# scheme://user-info@ inside free text (exception messages, server error bodies)
_USERINFO_IN_TEXT = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")


def mask_url(url: str | None) -> str:
    """``url`` with its user-info replaced by ``***`` and the values of query parameters
    whose names look secret (key, token, password, ...) masked; other parts unchanged."""
    if not url:
        return "" if url is None else url
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return mask_urls_in_text(str(url))
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_urls_in_text(text: str) -> str:
    """Mask the user-info of every ``scheme://user-info@host`` inside ``text``."""
    return _USERINFO_IN_TEXT.sub(lambda m: m.group("scheme") + MASK + "@", text)
