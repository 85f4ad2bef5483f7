"""Clustering of templates and fragments (paper Sec. 5.3) with the real packaged MiniLM encoder."""

from collections import Counter

import numpy as np
import pytest

from testleak.config import compose_dict, typed
from testleak.errors import ConfigError
from testleak.library import load_library
from testleak.library.clustering import cluster_kind, dbscan, embedding_text, get_encoder
from testleak.paths import Paths

# labelled, synthetic: cross-language variants of the same attribute's context / value
TEMPLATES = {
    "email": ['customer.email = "<EMAIL>"', 'emailAddress: "<EMAIL>",', '"contact_email": "<EMAIL>"',
              'user_email = "<EMAIL>"'],
    "phone": ['customer.phone = "<PHONE>"', 'phoneNumber: "<PHONE>",', '"mobile_phone": "<PHONE>"',
              'phone_number = "<PHONE>"'],
    "password": ['customer.password = "<PASSWORD>"', 'userPassword: "<PASSWORD>",', '"login_password": "<PASSWORD>"',
                 'db_password = "<PASSWORD>"'],
}
FRAGMENTS = {
    "email": ["anna.kowalska@mailbox.example", "m.chen@dev-team.example", "r.santos@corp-mail.example"],
    "credit_card": ["4716 0321 5588 2047", "5425 2334 3010 9903", "4929 8811 0463 7725"],
    "date_of_birth": ["1984-07-22", "1991-02-09", "1979-11-30"],
}


@pytest.fixture(scope="module")
def setup():
    cfg = typed(compose_dict(), "library")
    return cfg.clustering, get_encoder(cfg.clustering), load_library(Paths().library("prior"))


def purity(labels, truth):
    clustered = [(l, t) for l, t in zip(labels, truth) if l != -1]
    by = {}
    for l, t in clustered:
        by.setdefault(l, Counter())[t] += 1
    return sum(c.most_common(1)[0][1] for c in by.values()) / len(clustered), len(clustered)


@pytest.mark.parametrize("kind, data", [("templates", TEMPLATES), ("fragments", FRAGMENTS)])
def test_dbscan_on_labelled_items_is_pure_and_filed_under_the_right_attribute(setup, kind, data):
    ccfg, enc, prior = setup
    texts = [t for a in data for t in data[a]]
    truth = [a for a in data for _ in data[a]]
    # new items alone (no prior points): density must come from the items themselves
    res = cluster_kind(texts, prior, kind, enc, ccfg.model_copy(update={"include_prior": False}))
    labels = [it["cluster"] for it in res["items"]]
    p, n = purity(labels, truth)
    assert p >= 0.8, (kind, labels)
    assert n >= 0.75 * len(texts), ("too much noise", labels)
    filed = [(it["attribute"], t) for it, t in zip(res["items"], truth) if it["status"] == "clustered"]
    assert sum(a == t for a, t in filed) / len(filed) >= 0.8, filed


def test_isolated_junk_is_noise_and_prior_points_rescue_a_lone_item(setup):
    ccfg, enc, prior = setup
    junk = "zq#;; 0x}{ lorem"
    res = cluster_kind([junk, 'contact_email = "<EMAIL>"'], prior, "templates", enc,
                       ccfg.model_copy(update={"include_prior": False}))
    assert [it["status"] for it in res["items"]] == ["noise", "noise"]     # two unrelated points: no dense region
    res = cluster_kind([junk, 'contact_email = "<EMAIL>"'], prior, "templates", enc, ccfg.model_copy(update={"min_samples": 2}))
    assert res["items"][0]["status"] == "noise"
    assert res["items"][1]["status"] == "clustered" and res["items"][1]["attribute"] == "email"


def test_neutral_slot_and_config_errors():
    assert embedding_text('x = "<EMAIL>" or <PHONE>', "templates", "<VALUE>") == 'x = "<VALUE>" or <VALUE>'
    assert embedding_text("<EMAIL>", "fragments", "<VALUE>") == "<EMAIL>"
    with pytest.raises(ConfigError, match="known: minilm, mlm"):
        get_encoder(typed(compose_dict(), "library.clustering").model_copy(update={"encoder": "bert"}))
    with pytest.raises(ConfigError, match="eps > 0"):
        dbscan(np.eye(3), 0.0, 2)
