"""What may leave data/: masking and hashing of raw candidate values (docs/PRIVACY.md).

Raw values live only in JSONL under data/; everything a human reads (reports, logs, figures,
metrics, exception messages) goes through :func:`mask`. :func:`keyed_hash` (HMAC-SHA256, 16 hex
chars) is the one hash of a value that may leave data/: :func:`label_hash` keys it with the
project's value key (:func:`value_key`: ``$TESTLEAK_VALUE_KEY``, else ``.cache/value-key``, never
in git) so that small value spaces (dates, phone numbers) cannot be enumerated; the placeholder
list uses its own published key. :func:`value_hash` is the unkeyed record key inside data/ (DVC
hashes data/ into dvc.lock, which must be equal on every machine): it hides nothing and must never
be copied out of data/.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import re
import secrets
from pathlib import Path

KEY_ENV = "TESTLEAK_VALUE_KEY"
KEY_FILE = "value-key"
MIN_KEY_BYTES = 16

MASK_CHAR = "*"
_EMAIL = re.compile(r"^([^@\s]+)@([^@\s]+)$")


def value_hash(value: str) -> str:
    """The record key of a raw value inside data/: sha256, 16 hex chars (never leaves data/;
    outside it use :func:`label_hash`)."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def keyed_hash(value: str, key: bytes) -> str:
    """HMAC-SHA256 of ``value`` under ``key``, 16 hex chars: the one hash of a value that may
    leave data/."""
    return hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]


def value_key(cache_dir: str | Path | None = None) -> bytes:
    """The project's value key: ``$TESTLEAK_VALUE_KEY`` (at least 16 bytes), else the bytes of
    ``<cache>/value-key`` (default cache: :attr:`testleak.paths.Paths.cache`), created on first
    use with 32 random bytes, mode 0600. Reviewers who share label files share this key."""
    env = os.environ.get(KEY_ENV)
    if env is not None:
        key = env.encode("utf-8")
        if len(key) < MIN_KEY_BYTES:
            from .errors import ConfigError
            raise ConfigError(f"{KEY_ENV} holds {len(key)} bytes: expected at least {MIN_KEY_BYTES} "
                              f"(e.g. export {KEY_ENV}=$(python -c 'import secrets; print(secrets.token_hex(32))'))")
        return key
    if cache_dir is None:
        from .paths import Paths
        cache_dir = Paths().cache
    path = Path(cache_dir) / KEY_FILE
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        # written whole under a name of its own, then linked into place: a process that races
        # this one (parallel test workers, two stages) reads either no file or the whole key
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)
        except FileExistsError:     # another process made it meanwhile: theirs is the key
            pass
        finally:
            tmp.unlink()
        key = path.read_bytes()
    if len(key) < MIN_KEY_BYTES:
        from .errors import ConfigError
        raise ConfigError(f"{path} holds {len(key)} bytes: expected a value key of at least {MIN_KEY_BYTES} "
                          f"(remove the file to make a new one; labels hashed with the old key then need it back)")
    return key


def key_id(key: bytes) -> str:
    """A short public name of a key (8 hex chars), so a reader can tell labels of another key."""
    return keyed_hash("testleak value key id", key)[:8]


def label_hash(value: str, key: bytes | None = None) -> str:
    """:func:`keyed_hash` of a raw value under the project's value key (:func:`value_key`)."""
    return keyed_hash(value, value_key() if key is None else key)


def _mask_run(s: str, keep_head: int, keep_tail: int) -> str:
    n = len(s)
    if n <= keep_head + keep_tail:
        keep_head = min(keep_head, max(0, n // 3))
        keep_tail = 0
    hidden = n - keep_head - keep_tail
    return s[:keep_head] + MASK_CHAR * hidden + (s[n - keep_tail:] if keep_tail else "")


def mask(value: object) -> str:
    """Mask a privacy value for display, e.g. ``george.t******@outlook.com``.

    Emails keep the first half of the local part and the domain; other values keep about
    a third of their characters at the start and two at the end (none for values shorter
    than 8), and at least half of every value is hidden.
    """
    s = "" if value is None else str(value)
    if not s:
        return s
    m = _EMAIL.match(s)
    if m:
        local, domain = m.groups()
        keep = max(1, len(local) // 2) if len(local) > 1 else 0
        return _mask_run(local, keep, 0) + "@" + domain
    n = len(s)
    if n < 4:
        return MASK_CHAR * n
    tail = 2 if n >= 8 else 0
    head = min(math.ceil(n / 3), n // 2 - tail) if n >= 8 else n // 4
    return _mask_run(s, max(head, 0), tail)


def mask_in_text(text: str, values: list[str] | set[str]) -> str:
    """Replace every occurrence of the given raw values inside text by their mask."""
    for v in sorted({v for v in values if v}, key=len, reverse=True):
        text = text.replace(v, mask(v))
    return text

