"""Presidio's analyzer (testleak/presidio.py): the real engine with the registry's spaCy
pipeline, offline, its entities mapped to our attributes through conf/presidio/, unmapped
entities counted. The engine loads once per process (a few seconds)."""

from __future__ import annotations

import copy
import socket

import pytest

from testleak.config import compose_dict
from testleak.errors import ModelNotInstalledError
from testleak import presidio

# Known entities in a fixed snippet of test code (synthetic values: Visa's Luhn-valid test
# number, the IBAN example of the standard, a NANP number in a reserved 555 range).
EMAIL = "jane.doe@example.org"
PHONE = "+1 212-555-0134"
CARD = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"
IP = "192.168.10.24"
TEXT = (f'def test_customer():\n'
        f'    c = Customer(email="{EMAIL}", phone="{PHONE}",\n'
        f'                 card="{CARD}", iban="{IBAN}", last_ip="{IP}")\n'
        f'    assert c.valid()\n')


@pytest.fixture(scope="module")
def cfg():
    c = compose_dict()["presidio"]
    return {**c, "entities": presidio.mapping(c)}   # the table of entities_file, given in place


def _by_value(ents):
    """``{value: {(entity_type, attribute), ...}}``: Presidio may return several types for a span."""
    out: dict = {}
    for e in ents:
        out.setdefault(e.value, set()).add((e.entity_type, e.attribute))
    return out


def test_known_entities_map_to_their_attributes(cfg, monkeypatch, tmp_path):
    # Offline: no name lookup while the engine loads and analyses, including tldextract's
    # public suffix list (re-read here from scratch, with an empty disk cache).
    calls = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: calls.append(a[:2]) or (_ for _ in ()).throw(OSError("offline")))
    import tldextract.cache
    import tldextract.tldextract as tld

    presidio.engine(cfg)
    monkeypatch.setattr(tld.TLD_EXTRACTOR, "_extractor", None)
    monkeypatch.setattr(tld.TLD_EXTRACTOR, "_cache", tldextract.cache.DiskCache(str(tmp_path / "tldextract")))
    ents = presidio.analyze(TEXT, cfg)
    assert calls == []

    got = _by_value(ents)
    expected = {EMAIL: ("EMAIL_ADDRESS", "email"), PHONE: ("PHONE_NUMBER", "phone"),
                CARD: ("CREDIT_CARD", "credit_card"), IBAN: ("IBAN_CODE", "bank_statement")}
    for value, (etype, attr) in expected.items():
        assert value in got, f"{etype} not found; got {sorted((e.entity_type, e.value) for e in ents)}"
        assert (etype, attr) in got[value]
    for e in ents:
        assert 0 < e.score <= 1
        assert TEXT[e.start:e.end] == e.value
        assert e.attribute == cfg["entities"].get(e.entity_type)
    assert [e.start for e in ents] == sorted(e.start for e in ents)
    # the IP address is known to Presidio and mapped to no attribute of ours: counted
    assert ("IP_ADDRESS", None) in got[IP]
    t = presidio.tally(ents)
    assert t["unmapped"].get("IP_ADDRESS") == 1
    assert t["mapped"]["email"] == 1 and t["mapped"]["credit_card"] == 1


def test_unmapped_entities_are_counted_not_dropped(cfg):
    mine = copy.deepcopy(cfg)
    mine["entities"]["EMAIL_ADDRESS"] = None       # mapped to null
    del mine["entities"]["CREDIT_CARD"]            # not listed at all
    ents = presidio.analyze(TEXT, mine)
    got = _by_value(ents)
    assert ("EMAIL_ADDRESS", None) in got[EMAIL] and ("EMAIL_ADDRESS", "email") not in got[EMAIL]
    assert ("CREDIT_CARD", None) in got[CARD]
    assert ("IBAN_CODE", "bank_statement") in got[IBAN]
    t = presidio.tally(ents)
    assert t["unmapped"]["EMAIL_ADDRESS"] == 1 and t["unmapped"]["CREDIT_CARD"] == 1
    assert "email" not in t["mapped"] and "credit_card" not in t["mapped"]
    assert sum(t["mapped"].values()) + sum(t["unmapped"].values()) == len(ents)


def test_score_threshold_filters(cfg):
    low = presidio.analyze(TEXT, cfg)
    high = presidio.analyze(TEXT, {**cfg, "score_threshold": 0.99})
    assert high and len(high) < len(low)
    assert all(e.score >= 0.99 for e in high)


def test_missing_spacy_pipeline_is_one_line_naming_the_package(cfg):
    with pytest.raises(ModelNotInstalledError) as ei:
        presidio.engine({**cfg, "model": "en_core_web_xx_missing"})
    msg = str(ei.value)
    assert "\n" not in msg and "pip install en-core-web-xx-missing" in msg


def test_missing_presidio_package_is_one_line(cfg, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)   # as if not installed
    with pytest.raises(ModelNotInstalledError) as ei:
        presidio.engine({**cfg, "model": "en_core_web_not_cached"})
    assert "\n" not in str(ei.value) and "presidio_analyzer is not installed" in str(ei.value)
