"""URLs of remote services: their shape checked (:func:`url_problem`, :func:`check_url`), one
canonical form for cache keys (:func:`canonical_url`), and safe to show: user-info
(``user:password@``) and secret query values masked (:func:`mask_url`)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ConfigError

MASK = "***"
SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
# Host names that mean the same machine (canonical_url): the loopback name and its IPv4 address.
LOOPBACK = {"localhost": "127.0.0.1"}
_SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|pwd|sig|signature|auth|credential)", re.I)
# scheme://user-info@ inside free text (exception messages, server error bodies)
_USERINFO_IN_TEXT = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)$")


def _has_userinfo(url: str) -> bool:
    """An ``@`` after ``scheme://`` (also when a ``/`` in a password breaks the authority)."""
    return "@" in url.split("://", 1)[-1].split("?", 1)[0]


def url_problem(url, *, userinfo: bool = False) -> str | None:
    """What is wrong with the shape of an endpoint URL (the words after "expected"), or None.

    Checked: a string ``http(s)://host[:port][/path]``, a host name or IP address, a port in
    1..65535; with ``userinfo`` False, no ``user:password@`` (credentials never go in params)."""
    if not isinstance(url, str) or not url.strip():
        return "a URL such as http://127.0.0.1:8000/v1 (a non-empty string)"
    if url != url.strip() or any(c.isspace() for c in url):
        return "a URL without spaces"
    if "://" not in url:
        return "a URL with its scheme, e.g. http://" + url.lstrip("/")
    if not userinfo and _has_userinfo(url):
        return "a URL without user-info (user:password@): credentials never go in params"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "a URL with a port in 1..65535 (http://host:8000/v1)"
    if parts.scheme.lower() not in SCHEMES:
        return f"a URL with scheme http or https (not {parts.scheme!r})"
    host = parts.hostname or ""
    if not host or not _HOST.match(host if ":" not in host else f"[{host}]"):
        return "a URL with a host name or IP address (http://host:8000/v1)"
    if port is not None and not 1 <= port <= 65535:
        return "a URL with a port in 1..65535 (http://host:8000/v1)"
    return None


def check_url(url, where: str, *, userinfo: bool = False, fix: str = "") -> str:
    """``url`` when its shape is right (:func:`url_problem`); else :class:`ConfigError`, one
    line naming ``where`` (a params key or an environment variable), the masked value, what
    was expected and ``fix``."""
    problem = url_problem(url, userinfo=userinfo)
    if problem:
        shown = repr(mask_url(url)) if isinstance(url, str) else repr(url)
        raise ConfigError(f"{where} = {shown}: expected {problem}{'; ' + fix if fix else ''}")
    return url


def canonical_url(url: str) -> str:
    """One spelling per endpoint, for cache keys: scheme and host in lower case, ``localhost``
    as ``127.0.0.1``, the scheme's default port left out, repeated and trailing slashes of the
    path removed, query parameters sorted, user-info and fragment dropped (they do not change
    an answer). ``http://LOCALHOST:80/v1/`` and ``http://127.0.0.1/v1`` are one endpoint."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    host = LOOPBACK.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    path = re.sub(r"/{2,}", "/", parts.path).rstrip("/")
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((scheme, netloc, path, query, ""))


def mask_url(url: str | None) -> str:
    """``url`` with its user-info replaced by ``***`` and the values of query parameters
    whose names look secret (key, token, password, ...) masked; other parts unchanged.
    User-info is everything between ``scheme://`` and the last ``@`` before the query, so a
    ``/`` in a password does not show its first part."""
    if not url:
        return "" if url is None else url
    url = str(url)
    if _has_userinfo(url):
        scheme, rest = url.split("://", 1) if "://" in url else ("", url)
        head, sep, query = rest.partition("?")
        rest = MASK + "@" + head.rsplit("@", 1)[1] + sep + query
        url = f"{scheme}://{rest}" if scheme else rest
    try:
        parts = urlsplit(url)
    except ValueError:
        return mask_urls_in_text(url)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
            return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    return url


def mask_urls_in_text(text: str) -> str:
    """Mask the user-info of every ``scheme://user-info@host`` inside ``text``."""
    return _USERINFO_IN_TEXT.sub(lambda m: m.group("scheme") + MASK + "@", text)
