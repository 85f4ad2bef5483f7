"""``python -m stages STAGE [ARGS]``: run stages/STAGE.py as a program (what ``sh stages/run``
execs with the project's interpreter). An unknown stage name, or an interpreter that lacks
the project's packages, ends with one line that says what to do."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETUP = "bash scripts/bootstrap.sh setup"


def known() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in known():
        got = repr(argv[0]) if argv else "nothing"
        print(f"stages/run: unknown stage {got}; usage: sh stages/run STAGE [RUN] with STAGE one of "
              f"{', '.join(known())}", file=sys.stderr)
        return 2
    stage = argv[0]
    for pkg in ("omegaconf", "testleak"):   # a third-party package of the project, then the project
        if importlib.util.find_spec(pkg) is None:
            print(f"stages/run {stage}: {sys.executable} lacks the package {pkg!r} (not the project's "
                  f"interpreter, or an incomplete install): run {SETUP}", file=sys.stderr)
            return 2
    sys.argv = [str(HERE / f"{stage}.py"), *argv[1:]]
    try:
        runpy.run_module(f"stages.{stage}", run_name="__main__", alter_sys=True)
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if not top or top == "stages" or (top == "testleak" and e.name != "testleak"):
            raise                                  # a missing module inside the project: a bug
        print(f"stages/run {stage}: {sys.executable} lacks the package {top!r} (not the project's "
              f"interpreter, or an incomplete install): run {SETUP}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
