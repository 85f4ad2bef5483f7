"""Configuration: compose conf/ with Hydra, or read the params.yaml that DVC stages use.

Stages read only params.yaml (``load_params``). ``compose`` builds the same structure from
conf/ with overrides (what `dvc exp run -S` does), used by tests and the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import yaml
from omegaconf import DictConfig, OmegaConf

from .errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "conf"


def project_root() -> Path:
    """The project directory: $TESTLEAK_ROOT, else the current directory when it holds
    params.yaml, else the source checkout."""
    env = os.environ.get("TESTLEAK_ROOT")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd()
    if (cwd / "params.yaml").exists():
        return cwd
    return ROOT


def compose(overrides: Sequence[str] = (), conf_dir: str | os.PathLike | None = None) -> DictConfig:
    """Compose conf/ like `dvc exp run` does and return the config."""
    from hydra import compose as h_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    d = Path(conf_dir or CONF_DIR).resolve()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(d), version_base=None):
        cfg = h_compose(config_name="config", overrides=list(overrides))
    return cfg


def compose_dict(overrides: Sequence[str] = (), conf_dir=None) -> dict:
    return OmegaConf.to_container(compose(overrides, conf_dir), resolve=True)


def dump_params(cfg: DictConfig | dict, path: str | os.PathLike) -> None:
    """Write params.yaml exactly as `dvc exp run` does (resolve, then OmegaConf YAML)."""
    c = OmegaConf.create(cfg) if isinstance(cfg, dict) else cfg
    OmegaConf.resolve(c)
    Path(path).write_text(OmegaConf.to_yaml(c), encoding="utf-8")


def load_params(path: str | os.PathLike | None = None) -> DictConfig:
    """Read params.yaml (the composed config) as an OmegaConf object."""
    p = Path(path) if path else project_root() / "params.yaml"
    if not p.exists():
        raise ConfigError(f"{p} not found: run from the project root, or `testleak params` to compose it")
    return OmegaConf.create(yaml.safe_load(p.read_text(encoding="utf-8")))


def select(cfg, key: str, known: Sequence[str], what: str) -> str:
    """Validate a name chosen by config against the known implementations."""
    if key not in known:
        raise ConfigError(f"unknown {what} {key!r}; known: {', '.join(sorted(known))}")
    return key


def ablation_config(value) -> dict:
    """The ablation flags of a run, as composed into params.yaml (``experiment.runs.R.ablation``).

    Ablations are resolved at composition (conf/experiment/*.yaml write ``ablation: '${ablation}'``
    or ``'${experiment.ablations.NAME}'``), so stages read flags from params.yaml only and DVC
    reruns exactly the runs whose flags changed. A bare name is refused: conf/ is not read at
    run time."""
    if isinstance(value, str):
        raise ConfigError(f"ablation {value!r} given by name: a run's ablation must be its flags, resolved when "
                          f"params.yaml is composed (write ablation: '${{experiment.ablations.{value}}}' with "
                          f"`/ablation@ablations.{value}: {value}` in the experiment's defaults)")
    return dict(value)


def run_spec(params, run: str, runs_key: str = "runs") -> dict:
    """The entry ``experiment.<runs_key>.<run>`` of the composed params: the one check of a run
    name (stages, elicitation settings, metrics and the canary calibration all go through it)."""
    exp = params["experiment"]
    runs = exp.get(runs_key) or {}
    if run not in runs:
        raise ConfigError(f"unknown run {run!r}; experiment {exp.get('name', '?')!r} defines: "
                          f"{', '.join(runs) or '(none)'} (experiment.{runs_key} in params.yaml)")
    return dict(runs[run] or {})
