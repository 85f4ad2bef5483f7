"""Keyed value hashes: the project's value key, and why a hash of a small-space value (a date of
birth) needs it; the one-line refusal of credentials in a base URL."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import date, timedelta

import pytest

from testleak.errors import ConfigError
from testleak.privacy import KEY_ENV, key_id, keyed_hash, label_hash, value_hash, value_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _dates(fmt: str):
    d, end = date(1900, 1, 1), date(2026, 12, 31)
    while d <= end:
        yield d.strftime(fmt)
        d += timedelta(days=1)


def test_a_date_of_birth_is_found_by_enumeration_only_with_the_key(tmp_path, monkeypatch):
    """Every date 1900..2026 in the label's format: the keyed hash matches only under the key;
    without it (the plain record hash, or another key) nothing is found."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    key = value_key(tmp_path)
    dob = "03/14/1987"
    h = label_hash(dob, key)
    fmt = "%m/%d/%Y"
    assert [d for d in _dates(fmt) if keyed_hash(d, key) == h] == [dob]           # with the key: found
    assert [d for d in _dates(fmt) if value_hash(d) == h] == []                   # unkeyed guess: nothing
    other = value_key(tmp_path / "other")
    assert other != key and [d for d in _dates(fmt) if keyed_hash(d, other) == h] == []
    assert value_hash(dob) != h


def test_value_key_is_made_once_private_and_env_wins(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    k1 = value_key(tmp_path)
    f = tmp_path / "value-key"
    assert len(k1) == 32 and stat.S_IMODE(f.stat().st_mode) == 0o600
    assert value_key(tmp_path) == k1 and key_id(k1) == key_id(value_key(tmp_path))
    monkeypatch.setenv(KEY_ENV, "a-shared-reviewer-key-0123456789")
    assert value_key(tmp_path) == b"a-shared-reviewer-key-0123456789" != k1
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(ConfigError, match=f"{KEY_ENV} holds 5 bytes: expected at least 16"):
        value_key(tmp_path)


@pytest.mark.parametrize("model,var", [("gpt-4o", "OPENAI_BASE_URL"), ("gpt-oss-120b", "GPT_OSS_BASE_URL")])
def test_base_url_with_user_info_is_one_line_naming_the_variable(model, var):
    secret = "PA/SS-w0rd"
    exe = os.path.join(os.path.dirname(sys.executable), "testleak")
    r = subprocess.run([exe, "params", f"model={model}",
                        f"model.base_url=http://user:{secret}@host/v1"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0 and secret not in r.stderr + r.stdout and "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "user-info" in lines[0] and f"environment variable {var}" in lines[0], r.stderr
