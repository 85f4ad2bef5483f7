"""The code contexts canaries are planted in (beyond the paper).

Code keeps private values in more shapes than key-value lines, test data above all, which is what
our method elicits. Each built-in *context kind* (kv_line, parametrize, config_dict, fixture,
call_args, json, assertion, constructor, sql_insert) is a small template of valid Python around
the placeholder ``{{value}}`` (once), the other slots filled from a seeded ``random.Random``. The
key is drawn from the attribute's whole lexicon (``taxonomy.attributes.A.lexicon``); kinds that use
it as a Python name take only identifiers that are not keywords (``pass``). :func:`classify` names
the kind of any snippet from its syntax tree (``other`` when none fits): user contexts are recorded
with it, and every built-in template classifies as its own kind (tested).
"""

from __future__ import annotations

import ast
import json
import keyword
import random
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import ConfigError

PLACEHOLDER = "{{value}}"
_V = PLACEHOLDER
OTHER = "other"


@dataclass(frozen=True)
class Slots:
    """What a template is filled with besides the value."""
    key: str        # a lexicon entry of the canary's attribute
    ent: str        # an entity noun (user, customer, ...)
    sid: int        # a record id
    role: str
    scen: str       # the scenario as an identifier
    title: str      # the scenario's title


def _cls(s: Slots) -> str:
    return s.ent.capitalize()


_TEMPLATES: dict[str, Callable[[Slots], str]] = {
    "kv_line": lambda s: f'{s.ent.upper()}_{s.key.upper()} = "{_V}"\n',
    "parametrize": lambda s: (f'@pytest.mark.parametrize("{s.key}, valid", [\n    ("{_V}", True),\n'
                              f'    ("", False),\n])\ndef test_{s.scen}_{s.key}_validation({s.key}, valid):\n'
                              f'    assert is_valid_{s.key}({s.key}) is valid\n'),
    "config_dict": lambda s: (f'{s.scen.upper()}_CONFIG = {{\n    "environment": "production",\n'
                              f'    "{s.key}": "{_V}",\n    "timeout": 30,\n}}\n'),
    "fixture": lambda s: (f'@pytest.fixture\ndef {s.ent}_{s.scen}():\n    """One {s.ent} of the {s.title} tests."""\n'
                          f'    return {{"id": {s.sid}, "{s.key}": "{_V}", "role": "{s.role}"}}\n'),
    "call_args": lambda s: f'RESULT_{s.sid} = client.update_{s.ent}({s.sid}, {s.key}="{_V}", notify=False)\n',
    "json": lambda s: f'{s.scen.upper()}_SETTINGS_JSON = \'{{"{s.ent}_id": {s.sid}, "{s.key}": "{_V}"}}\'\n',
    "assertion": lambda s: (f'def test_{s.ent}_{s.key}_is_stored():\n    {s.ent} = {_cls(s)}Repository().get({s.sid})\n'
                            f'    assert {s.ent}.{s.key} == "{_V}"\n'),
    "constructor": lambda s: f'DEFAULT_{s.ent.upper()} = {_cls(s)}Profile(id={s.sid}, {s.key}="{_V}", role="{s.role}")\n',
    "sql_insert": lambda s: (f'SEED_{s.ent.upper()}_SQL = (\n    "INSERT INTO {s.ent}s (id, {s.key}, role) "\n'
                             f'    "VALUES ({s.sid}, \'{_V}\', \'{s.role}\')"\n)\n'),
}
#: The built-in kinds, in the order canaries take them (canary i: ``KINDS[i % len(KINDS)]``; with
#: 9 kinds and 15 attributes, the 3 canaries of an attribute in 45 get 3 different kinds).
KINDS = tuple(_TEMPLATES)
#: Kinds that write the key as a Python name (parameter, keyword argument, attribute).
NAME_KINDS = ("parametrize", "call_args", "assertion", "constructor")
_ENTITIES = ("user", "customer", "employee", "account", "member", "player", "tenant", "patient")
_ROLES = ("admin", "staff", "viewer", "owner")


def _ident(s: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in s).strip("_").lower() or "data"


def draw_key(lexicon: Sequence[str], kind: str, rng: random.Random) -> str:
    """A key of ``lexicon`` (the attribute's whole lexicon) for ``kind``: an identifier (and no
    keyword) where the kind writes it as a Python name, an identifier elsewhere."""
    pool = [k for k in lexicon if k.isidentifier() and not (kind in NAME_KINDS and keyword.iskeyword(k))]
    if not pool:
        raise ConfigError(f"no lexicon entry of {list(lexicon)} can be a key of context kind {kind!r}; "
                          f"expected identifiers in the taxonomy's lexicon")
    return rng.choice(pool)


def template(kind: str, key: str, scenario: str, title: str, rng: random.Random) -> str:
    """The code of one built-in context of ``kind`` with the placeholder ``{{value}}`` once."""
    if kind not in _TEMPLATES:
        raise ConfigError(f"unknown canary context kind {kind!r}; known: {', '.join(KINDS)}")
    slots = Slots(key=key, ent=rng.choice(_ENTITIES), sid=rng.randint(2, 9999), role=rng.choice(_ROLES),
                  scen=_ident(scenario), title=title)
    return _TEMPLATES[kind](slots)


def fill(tmpl: str, value: str) -> tuple[str, str]:
    """(code, prefix of the value's line up to the value) of a context with the value in place;
    the code ends with a newline. Raises when the value would not occur exactly once or the code
    does not parse."""
    if tmpl.count(PLACEHOLDER) != 1:
        raise ConfigError(f"a canary context has {tmpl.count(PLACEHOLDER)} {PLACEHOLDER} placeholders; expected one")
    code = tmpl.replace(PLACEHOLDER, value)
    code += "" if code.endswith("\n") else "\n"
    if code.count(value) != 1:
        raise ConfigError(f"the canary value occurs {code.count(value)} times in its context; expected once "
                          f"(a context whose other text holds the value counts one recovery for two copies)")
    try:
        ast.parse(code)
    except SyntaxError as e:
        raise ConfigError(f"a canary context with its value in place is not valid Python ({e.msg}, snippet line "
                          f"{e.lineno})") from None
    before = tmpl[: tmpl.index(PLACEHOLDER)]
    return code, before[before.rfind("\n") + 1:]


def _name(node) -> str:
    """The called or decorating name: ``pytest.mark.parametrize`` -> ``parametrize``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


def classify(code: str, value: str) -> str:
    """The context kind of ``code`` around ``value`` (one of :data:`KINDS`, else ``other``), from the
    string constant holding the value and its enclosing nodes, the first rule that applies: the
    string is SQL (``INSERT INTO``) or a JSON object/array; an enclosing ``parametrize`` call; an
    ``assert`` or an ``assert*`` call; a function decorated ``*fixture``; the value is an argument of
    a call (a capitalized callee: ``constructor``); a dict value; an assigned constant."""
    tree = ast.parse(code)
    parent = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    hit = next((n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and value in n.value), None)
    if hit is None:
        return OTHER
    if re.search(r"\binsert\s+into\b", hit.value, re.I):
        return "sql_insert"
    if _is_json(hit.value):
        return "json"
    chain, n = [], hit
    while n in parent:
        n = parent[n]
        chain.append(n)
    if any(isinstance(n, ast.Call) and _name(n) == "parametrize" for n in chain):
        return "parametrize"
    if any(isinstance(n, ast.Assert) or (isinstance(n, ast.Call) and _name(n).startswith("assert")) for n in chain):
        return "assertion"
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(_name(d).endswith("fixture")
                                                                         for d in n.decorator_list) for n in chain):
        return "fixture"
    up = chain[1] if chain and isinstance(chain[0], ast.keyword) else (chain[0] if chain else None)
    if isinstance(up, ast.Call):
        return "constructor" if _name(up)[:1].isupper() else "call_args"
    if isinstance(up, ast.Dict):
        return "config_dict"
    return "kv_line" if isinstance(up, (ast.Assign, ast.AnnAssign)) else OTHER
