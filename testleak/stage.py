"""What every DVC stage entry point (stages/<name>.py) shares: the RUN argument and the
exit path that turns library errors into one-line messages."""

from __future__ import annotations

import sys
from typing import Callable, Mapping, Sequence

from omegaconf import OmegaConf

from .config import load_params, run_spec
from .errors import ConfigError, TestleakError


def run_argument(argv: Sequence[str], params: Mapping, stage: str, runs_key: str = "runs") -> str:
    """The single RUN argument of a per-run stage, checked against experiment.<runs_key>."""
    if len(argv) != 1:
        raise ConfigError(f"usage: python -m stages.{stage} RUN (a key of experiment.{runs_key} in params.yaml)")
    # membership only: a stage that uses nothing of its run's entry must not depend on it
    # (dvc.yaml's foreach already guarantees the run exists); run_spec gives the one message
    if argv[0] not in (params["experiment"].get(runs_key) or {}):
        run_spec(params, argv[0], runs_key)
    return argv[0]


def read_params() -> dict:
    """params.yaml as plain nested dicts, interpolations resolved: every setting a stage uses
    comes from here (never conf/ at run time), so tests/test_pipeline_graph.py can record
    which keys each stage reads and check them against dvc.yaml."""
    return OmegaConf.to_container(load_params(), resolve=True)


def stage_params(argv: Sequence[str], stage: str, runs_key: str = "runs") -> tuple[dict, str]:
    """The composed params (params.yaml, plain dict) and the checked RUN argument of a per-run stage."""
    params = read_params()
    return params, run_argument(argv, params, stage, runs_key)


def entry(main: Callable[[list[str]], int | None]) -> None:
    """Run a stage's ``main(argv)`` as a program: exit 2 with the message on a TestleakError."""
    try:
        code = main(sys.argv[1:])
    except TestleakError as e:
        print(f"error: {e}", file=sys.stderr)
        code = 2
    sys.exit(code or 0)
