"""What every model of the schema shares: strictness, ``{min, max}`` ranges, data files read at
composition, and names checked against their registry (testleak/registry.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from pydantic import BaseModel, ConfigDict, model_validator

from ..errors import ConfigError
from ..registry import one_of
from .messages import _rule


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Range(_Strict):
    """A ``{min, max}`` pair with min <= max (subclasses set the bounds of each)."""

    @model_validator(mode="after")
    def _order(self):
        if self.min > self.max:
            raise _rule("", {"min": self.min, "max": self.max}, "min <= max")
        return self


def _known(value, registry: Mapping):
    """``value`` when ``registry`` (testleak/registry.py) has it; else the one-line rule listing its names."""
    if value not in registry:
        raise _rule("", value, f"one of {one_of(registry)}")
    return value


def _data_file(info, key: str, file: str, reader, what: str):
    """The data of a file that params.yaml names (taxonomy, scorer models, Presidio entities), read
    with ``reader(file, root)`` at composition (validation context ``check_files``, the default);
    None in a stage's load of params.yaml (only the stages that declare the file as a DVC dep read
    it). A bad file is one line naming the key."""
    ctx = info.context or {}
    if not ctx.get("check_files", True):
        return None
    try:
        return reader(file, Path(ctx.get("root") or "."))
    except ConfigError as e:
        raise _rule(key, file, f"{what} ({e})") from None
