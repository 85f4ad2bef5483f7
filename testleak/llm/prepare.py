"""`python -m testleak.llm.prepare [MODEL]`: assemble and check a local model's GGUF file."""

from __future__ import annotations

import sys

from ..config import compose_dict
from ..errors import TestleakError
from ..paths import Paths
from .local import ensure_model


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    overrides = [f"model={argv[0]}"] if argv else []
    cfg = compose_dict(overrides)["model"]
    if cfg.get("provider") != "local":
        print(f"model {cfg['name']} is hosted; nothing to prepare")
        return 0
    try:
        path = ensure_model(cfg, Paths().models)
    except TestleakError as e:
        print(f"testleak: error: {e}", file=sys.stderr)
        return 2
    print(f"model ready: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
