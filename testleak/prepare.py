"""`python -m testleak.prepare [MODEL]`: assemble and check the local GGUF files a run needs:
every local model the composed experiment talks to (``model``, each run's model in
``experiment.runs`` - several with ``experiment.models`` -, ``judge`` and ``questioner``),
once each, and the division scorer's model (``library.division.model`` of ``library.division.models_file``,
unless the scorer is the masked LM). Hosted models need nothing here."""

from __future__ import annotations

import sys

from .config import compose_dict, run_model, typed
from .errors import TestleakError
from .library.division import scorer_model_cfg
from .paths import Paths
from .llm.local import ensure_model


def local_models(cfg: dict) -> list[tuple[str, dict]]:
    """(role, model config) of every distinct local model of the composition, in order."""
    roles = [("model", cfg["model"])]
    roles += [(f"model of run {run}", run_model(cfg, run)) for run, spec in (cfg["experiment"].get("runs") or {}).items()
              if spec.get("model")]
    roles += [(key, cfg[key]) for key in ("judge", "questioner") if cfg.get(key)]
    seen, out = set(), []
    for role, m in roles:
        key = (m.get("gguf") or {}).get("sha256") or m["name"]   # two names, one file: assembled once
        if m.get("provider") == "local" and key not in seen:
            seen.add(key)
            out.append((role, m))
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    overrides = [f"model={argv[0]}"] if argv else []
    # the labels file of a human-review policy may not exist yet: preparing models does not need it
    cfg = compose_dict(overrides, check_files=False)
    todo = local_models(cfg)
    if not todo:
        print(f"model {cfg['model']['name']} is hosted; nothing to prepare for it")
    div = typed(cfg, "library.division")
    try:
        if div.scorer != "mlm_pll":
            todo.append(("division scorer model", scorer_model_cfg(div)))
        for what, model_cfg in todo:
            print(f"{what} ready: {ensure_model(model_cfg, Paths().models)}")
    except TestleakError as e:
        print(f"testleak: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
