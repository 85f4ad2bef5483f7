"""What every DVC stage entry point (stages/<name>.py) shares: the RUN argument and the
exit path that turns library errors into one-line messages."""

from __future__ import annotations

import sys
from typing import Callable, Mapping, Sequence

from .errors import ConfigError, TestleakError


def run_argument(argv: Sequence[str], params: Mapping, stage: str, runs_key: str = "runs") -> str:
    """The single RUN argument of a per-run stage, checked against experiment.<runs_key>."""
    if len(argv) != 1:
        raise ConfigError(f"usage: python -m stages.{stage} RUN (a key of experiment.{runs_key} in params.yaml)")
    run = argv[0]
    runs = (params.get("experiment") or {}).get(runs_key) or {}
    if run not in runs:
        raise ConfigError(f"unknown run {run!r}; experiment {params['experiment'].get('name')!r} defines: "
                          f"{', '.join(runs) or '(none)'}")
    return run


def entry(main: Callable[[list[str]], int | None]) -> None:
    """Run a stage's ``main(argv)`` as a program: exit 2 with the message on a TestleakError."""
    try:
        code = main(sys.argv[1:])
    except TestleakError as e:
        print(f"error: {e}", file=sys.stderr)
        code = 2
    sys.exit(code or 0)
