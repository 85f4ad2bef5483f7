"""`python -m testleak.llm.prepare [MODEL]`: assemble and check the local GGUF files a run needs:
the model under test (``model``, when local) and the division scorer's model
(``library.division.models[library.division.model]``, unless the scorer is the masked LM)."""

from __future__ import annotations

import sys

from ..config import compose_dict
from ..errors import TestleakError
from ..library.division import scorer_model_cfg
from ..paths import Paths
from .local import ensure_model


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    overrides = [f"model={argv[0]}"] if argv else []
    cfg = compose_dict(overrides)
    todo = []
    if cfg["model"].get("provider") == "local":
        todo.append(("model", cfg["model"]))
    else:
        print(f"model {cfg['model']['name']} is hosted; nothing to prepare for it")
    div = cfg["library"]["division"]
    try:
        if div.get("scorer") != "mlm_pll":
            todo.append(("division scorer model", scorer_model_cfg(div)))
        for what, model_cfg in todo:
            print(f"{what} ready: {ensure_model(model_cfg, Paths().models)}")
    except TestleakError as e:
        print(f"testleak: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
