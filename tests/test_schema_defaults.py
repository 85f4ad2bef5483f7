"""One value for each setting: the schema's defaults equal what conf/ composes, code carries no
defaults of its own that differ, and the rules the schema, conf/ and code documented differently
have one answer each (max_grad_norm 0 = no clipping, Codebreaker patience >= 1, one judge-mode
rule)."""

from __future__ import annotations

from typing import Mapping

import pytest
from pydantic import BaseModel

from testleak import registry
from testleak.config import compose_dict
from testleak.errors import ConfigError
from testleak.settings import Settings
from testleak.settings.messages import _DictOf, _model_of


def _default(info):
    d = info.get_default(call_default_factory=True)
    return d.model_dump() if isinstance(d, BaseModel) else d


def _a_value(default) -> bool:
    """A default that is a value; None and an empty list or mapping mean "not set" (an optional
    section, no entries), which conf/ may fill."""
    return default is not None and not (isinstance(default, (list, dict)) and not default)


def schema_default_differences(model, data: Mapping, key: str = "", compared: list | None = None) -> list[str]:
    """Every field of ``model`` whose default is a value (:func:`_a_value`) and whose key ``data``
    has, where the two differ; nested models and mappings of models are walked along ``data``.
    ``compared`` collects the keys compared."""
    out = []
    compared = [] if compared is None else compared
    for name, info in model.model_fields.items():
        if name not in data:
            continue
        k = f"{key}.{name}" if key else name
        sub, value = _model_of(info.annotation), data[name]
        nested = isinstance(sub, type) and issubclass(sub, BaseModel) and isinstance(value, Mapping)
        if not info.is_required() and not nested and _a_value(_default(info)):   # a model: its fields
            compared.append(k)
            if _default(info) != value:
                out.append(f"{k}: schema default {_default(info)!r}, conf/ {value!r}")
        if isinstance(sub, _DictOf) and isinstance(value, Mapping):
            inner = sub.inner
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                for e, v in value.items():
                    if isinstance(v, Mapping):
                        out += schema_default_differences(inner, v, f"{k}.{e}", compared)
        elif nested:
            out += schema_default_differences(sub, value, k, compared)
    return out


@pytest.mark.parametrize("overrides", [[], ["experiment=canary"], ["experiment=canary_tiny"]],
                         ids=["default", "canary", "canary_tiny"])
def test_schema_defaults_equal_the_composition_of_conf(overrides):
    data, compared = compose_dict(overrides), []
    assert schema_default_differences(Settings, data, compared=compared) == []
    assert {"answers.max_chars", "answers.max_candidates_per_response"} <= set(compared)


def test_the_walk_finds_a_difference():
    data = compose_dict([])
    data["answers"] = {**data["answers"], "max_candidates_per_response": 7}
    assert schema_default_differences(Settings, data) == [
        "answers.max_candidates_per_response: schema default 200, conf/ 7"]


def test_canary_finetune_is_read_with_the_schema_rules():
    from testleak.canary.pipeline import canary_setting

    p = compose_dict(["experiment=canary_tiny"])
    ft = p["canary"]["finetune"]
    for key, bad in (("max_tokens", 8), ("max_grad_norm", -1.0)):
        p["canary"]["finetune"] = {**ft, key: bad}
        with pytest.raises(ConfigError, match=rf"canary.finetune.{key} = {bad}"):
            canary_setting(p, "finetune")
    p["canary"]["finetune"] = {**ft, "max_grad_norm": 0.0}
    assert canary_setting(p, "finetune").max_grad_norm == 0.0


def test_max_grad_norm_zero_composes_and_trains_without_clipping(monkeypatch):
    import torch

    from testleak.canary.finetune import train_lora
    from tests.test_canary import _finetune, _tiny_model_and_tokenizer

    p = compose_dict(["experiment=canary", "canary.finetune.max_grad_norm=0"])
    assert p["canary"]["finetune"]["max_grad_norm"] == 0
    clipped = []
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda params, norm: clipped.append(norm))
    texts = ["password = 'hunter2hunter2'\nuser = 'lena'\n" * 4]
    examples = [{"text": texts[0], "canary_id": None}]
    for norm, expect in ((0.0, []), (1.0, [1.0])):
        model, tok = _tiny_model_and_tokenizer(texts)
        s = _finetune(epochs=1, batch_size=1, max_tokens=32, threads=1, lora_r=2, lora_alpha=4,
                      target_modules=["q_proj"], max_grad_norm=norm)
        clipped.clear()
        train_lora(model, tok, examples, s, 0)
        assert clipped == expect


def test_codebreaker_patience_is_at_least_one():
    import random

    from testleak.baselines.codebreaker import evolve
    from testleak.baselines.common import Prompt
    from testleak.config import typed

    with pytest.raises(ConfigError) as e:
        compose_dict(["baselines.codebreaker.patience=0"])
    assert str(e.value) == ("baselines.codebreaker.patience = 0 (override 'baselines.codebreaker.patience=0'): "
                            "expected an integer >= 1")
    cfg = typed(compose_dict(["baselines.codebreaker.patience=3"]), "baselines.codebreaker")
    assert cfg.patience == 3
    # the search takes it as is: an epoch without improvement stops after 3 iterations
    small = cfg.model_copy(update={"samples_per_prompt": 1, "population": 2, "parents": 1, "children": 2,
                                   "restart_on_stall": False})
    pool = [Prompt(id=f"codebreaker/seed{i:04d}", text=f'# password of Mary\nvalue{i} = "', lang="python")
            for i in range(4)]
    done = evolve(pool, lambda plan: [(0.0, []) for _ in plan], 100, small, random.Random(0), {"names": ["John", "Mary"]})
    assert max(s.prompt.iteration for s in done) == 3


def test_judge_mode_has_one_rule():
    from testleak.verify.judge import judge_candidates

    with pytest.raises(ConfigError) as e:
        compose_dict(["verifier.judge_mode=strict"])
    assert str(e.value).endswith(f"expected one of {registry.one_of(registry.JUDGE_MODES)}")
    with pytest.raises(ConfigError, match=r"unknown judge_mode 'strict'; known: rules, judge, both"):
        judge_candidates([], None, mode="strict")
