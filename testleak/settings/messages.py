"""One-line messages of a config that fails the schema: the key, the value, what was expected
and where the value came from (the conf/ file, the command-line override or params.yaml)."""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from ..net.urls import mask_url, mask_urls_in_text


def _root():
    """The root model the messages walk (imported here: the models import this module)."""
    from .root import Settings

    return Settings


class _Rule(ValueError):
    """A cross-field rule broken at ``key`` (relative to the model that checks it)."""

    def __init__(self, key: str, value, expected: str):
        super().__init__(f"{key}|{expected}")
        self.key, self.value, self.expected = key, value, expected


def _rule(key: str, value, expected: str) -> _Rule:
    return _Rule(key, value, expected)


def _fmt(value) -> str:
    if isinstance(value, str):
        return repr(value) if value else "''"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    s = repr(value)
    return s if len(s) <= 80 else s[:77] + "..."


def _lookup(data, loc: Sequence) -> tuple[bool, Any]:
    cur = data
    for k in loc:
        if isinstance(cur, Mapping) and k in cur:
            cur = cur[k]
        elif isinstance(cur, list) and isinstance(k, int) and k < len(cur):
            cur = cur[k]
        else:
            return False, None
    return True, cur


def _field(loc: Sequence):
    """The pydantic FieldInfo and model class for a location, when the path is typed."""
    model, info = _root(), None
    for k in loc:
        if isinstance(model, _DictOf):          # a mapping's entry (experiment.models.ID, experiment.runs.R)
            model = model.inner
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            info, model = None, None
            continue
        info = model.model_fields.get(str(k))
        if info is None:
            return None, model
        model = _model_of(info.annotation)
    return info, model


def _model_of(ann):
    import typing

    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    origin = typing.get_origin(ann)
    if origin is dict and len(args) == 2:
        return _DictOf(_model_of(args[1]))
    for a in args:
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


class _DictOf:
    def __init__(self, inner):
        self.inner = inner


def _known_keys(loc: Sequence) -> list[str]:
    model = _root()
    for k in loc:
        if isinstance(model, _DictOf):
            model = model.inner
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
        info = model.model_fields.get(str(k))
        if info is None:
            return []
        model = _model_of(info.annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return []


_TYPE_WORDS = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
               "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false",
               "string_type": "a string", "list_type": "a list", "dict_type": "a mapping",
               "model_type": "a mapping", "none_required": "null"}


def _constraints(info) -> str:
    if info is None:
        return ""
    parts = []
    for m in info.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {v}")
        if getattr(m, "min_length", None):
            parts.append("non-empty")
    return " ".join(parts)


def _expectation(err: dict, loc: Sequence) -> str:
    t = err["type"]
    info, _ = _field(loc)
    if t == "extra_forbidden":
        known = _known_keys(loc[:-1])
        parent = ".".join(str(x) for x in loc[:-1]) or "the config"
        return f"a known key of {parent}" + (f" ({', '.join(known)})" if known else "") + "; check the spelling"
    if t == "missing":
        return "a value (the key is required)"
    if t == "literal_error":
        return f"one of {err.get('ctx', {}).get('expected', '')}"
    if t in ("too_short",) and err.get("ctx", {}).get("min_length") == 1:
        return "a non-empty list"
    if t in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        base = "an integer" if info is not None and info.annotation in (int, int | None) else "a number"
        return f"{base} {_constraints(info)}".strip()
    if t in _TYPE_WORDS:
        c = _constraints(info)
        return f"{_TYPE_WORDS[t]}{(' ' + c) if c else ''}"
    return err["msg"][0].lower() + err["msg"][1:]


def _source(key: str, overrides: Sequence[str], choices: Mapping[str, str] | None, file: str | None) -> str:
    """Where the value at ``key`` came from: the most specific override (URL user-info masked),
    else the conf/ file of its group option (or params.yaml when validating a written file)."""
    overrides = [mask_urls_in_text(mask_url(o)) if "@" in o else o for o in overrides]
    best = None
    for o in overrides:
        k = o.split("=", 1)[0].lstrip("+~")
        if (key == k or key.startswith(k + ".")) and (best is None or len(k) > len(best[0])):
            best = (k, o)
    group = key.split(".", 1)[0]
    if best is not None and not (choices and best[0] == group and group in choices):
        return f"override '{best[1]}'"
    inner = [o for o in overrides if o.split("=", 1)[0].lstrip("+~").startswith(key + ".")]
    if inner:  # a rule over a mapping whose entries were overridden
        return "override " + ", ".join(f"'{o}'" for o in inner)
    if file:
        return file
    if choices and group in choices and choices[group]:
        src = f"conf/{group}/{choices[group]}.yaml"
        return src + (f", chosen by override '{best[1]}'" if best else "")
    return "conf/config.yaml"


def problems(data: Mapping, *, overrides: Sequence[str] = (), choices: Mapping[str, str] | None = None,
             file: str | None = None, root: str | os.PathLike | None = None, check_files: bool = True) -> list[str]:
    """One line per problem of the composed config ``data`` (empty when it is valid).

    ``check_files``: also require the files the config names to exist (the review labels
    file of a two-reviewer policy). Composition checks them; a stage loading params.yaml
    does not (a labelling session may come after the stages that do not read labels)."""
    try:
        _root().model_validate(data, context={"root": str(root or "."), "check_files": check_files})
        return []
    except ValidationError as e:
        return error_lines(e, data, (), lambda key: _source(key, overrides, choices, file))


def error_lines(e: ValidationError, data, at: Sequence[str], source) -> list[str]:
    """One line per error of ``e``, raised validating ``data``, the value at key path ``at`` of
    the config: key, value, ``source(key)`` and what was expected."""
    out = []
    for err in e.errors(include_url=False):
        loc = [*at, *(str(x) for x in err["loc"] if not (isinstance(x, str) and "[" in x))]
        exc = (err.get("ctx") or {}).get("error")
        if isinstance(exc, _Rule):
            loc = loc + [p for p in exc.key.split(".") if p]
            key, value, expected = ".".join(loc), exc.value, exc.expected
        else:
            key = ".".join(loc)
            found, value = _lookup(data, err["loc"])
            value = value if found else err.get("input")
            expected = _expectation(err, [*at, *err["loc"]])
        shown = "(missing)" if err["type"] == "missing" else _fmt(value)
        out.append(f"{key} = {shown} ({source(key)}): expected {expected}")
    return out


def validate(data: Mapping, **kw):
    """The typed settings of ``data``; :class:`ConfigError` (one line per problem) when invalid."""
    bad = problems(data, **kw)
    if bad:
        raise ConfigError("\n".join(bad))
    return _root().model_validate(data, context={"root": str(kw.get("root") or "."), "check_files": False})

