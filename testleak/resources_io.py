"""The one loader of shipped data files (testleak/resources/) and of the data files params.yaml names.

A relative path is taken from the project directory; a shipped resource (under
``testleak/resources/``) missing there, as in a project directory other than the source
checkout, is taken from the source checkout. The schema (testleak/settings/) checks what
these files hold; this module only finds and parses them.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

from .errors import ConfigError

SOURCE_ROOT = Path(__file__).resolve().parent.parent   # testleak.config.ROOT (no import: no cycle)
SHIPPED = "testleak/resources/"
RESOURCES = SOURCE_ROOT / SHIPPED


def locate(file: str | Path, root: str | Path = ".") -> Path:
    """``file`` as the project directory ``root`` sees it: absolute as is; relative under ``root``,
    else (a shipped resource missing there) in the source checkout; else the path under ``root``."""
    p = Path(file)
    if p.is_absolute():
        return p
    here = Path(root) / p
    shipped = SOURCE_ROOT / p
    if not here.exists() and p.as_posix().startswith(SHIPPED) and shipped.exists():
        return shipped
    return here


def resource(name: str | Path) -> Path:
    """A shipped resource by file name (``codexleaks.yaml``): a path that exists as given, else
    the file of testleak/resources/."""
    p = Path(name)
    return p if p.is_absolute() or p.exists() else RESOURCES / name


@lru_cache(maxsize=64)
def _parse_yaml(text: str):
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def parse_yaml(text: str):
    """``yaml.safe_load(text)``, with libyaml's parser when PyYAML has it (about 18 times faster;
    a test checks it reads every shipped file alike) and each distinct text parsed once per process:
    `testleak plan` of the paper experiment reads the taxonomy and the library per run. The caller
    gets its own copy, so it may change it."""
    return copy.deepcopy(_parse_yaml(text))


def load_yaml_data(file: str, root: Path, what: str) -> dict:
    """The YAML mapping of a file params.yaml names (:func:`locate`); :class:`ConfigError` naming
    ``what`` when it is missing, not YAML or not a mapping."""
    import yaml

    p = locate(file, root)
    if not p.is_file():
        raise ConfigError(f"{what} {p} not found (relative to the project root)")
    try:
        data = parse_yaml(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{what} {p} is not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {p} is not a mapping")
    return data


def load_taxonomy_file(file: str, root: Path) -> dict:
    """The data of a taxonomy file (``taxonomy.file``: categories, attributes, scenarios). Stages
    that read it declare ``${taxonomy.file}`` as a DVC dep (testleak/graph.py)."""
    return load_yaml_data(file, root, "taxonomy file")


def read_presidio_entities(file: str, root: Path) -> dict:
    """The entity table of ``presidio.entities_file``: ``{entity type: attribute or None}``."""
    raw = load_yaml_data(file, root, "presidio entities file")
    bad = [f"{k}: {v!r}" for k, v in raw.items() if not (v is None or (isinstance(v, str) and v))]
    if bad:
        raise ConfigError(f"presidio entities file {file}: expected entity type -> attribute or null, got "
                          + ", ".join(bad))
    return raw
