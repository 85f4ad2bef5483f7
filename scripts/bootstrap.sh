#!/usr/bin/env bash
# Set up everything from nothing, then run a job.
#   scripts/bootstrap.sh repro [dvc repro args]   -> venv, packages, model, then `dvc repro`
#   scripts/bootstrap.sh test  [pytest args]      -> venv, packages, model, then the test suite
# Idempotent: a second call skips what is already installed (keyed by requirements.lock and pyproject.toml).
# requirements.lock: `bash scripts/lock.sh` regenerates it from pyproject.toml (docs/REPRODUCIBILITY.md).
set -euo pipefail
cd "$(dirname "$0")/.."
job=${1:-repro}
shift || true
PY=${PYTHON:-python3}
export DVC_NO_ANALYTICS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x .venv/bin/python ]; then
  echo "[bootstrap] creating .venv with $($PY --version)"
  $PY -m venv .venv
fi
stamp=.venv/.testleak-installed
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "[bootstrap] installing the locked environment (requirements.lock, hashes checked), then testleak"
  # Every distribution at its locked version and hash (the CPU build of torch 2.13.0 included):
  # the local corpus is built from them, so the lock makes it the same on every machine.
  # (pip's exit status is the pipeline's: pipefail; the filter only drops pip's noise about mirrors)
  .venv/bin/pip install -q --require-hashes --no-deps -r requirements.lock 2>&1 | { grep -v "^WARNING: Location" || true; }
  .venv/bin/pip install -q --no-deps -e . 2>&1 | { grep -v "^WARNING: Location" || true; }
  .venv/bin/python -c "import torch, xllamacpp, dvc, testleak" # fail loudly if the install is broken
  .venv/bin/python -m pip check >/dev/null || { .venv/bin/python -m pip check >&2; exit 1; }
  echo "$want" > "$stamp"
fi
echo "[bootstrap] preparing the embedded model (assembled once, sha256 checked)"
.venv/bin/python -m testleak.prepare

if [ ! -d .git ] && ! git rev-parse --git-dir >/dev/null 2>&1; then
  git init -q && git add -A && git -c user.email=testleak@localhost -c user.name=testleak commit -qm "initial" || true
fi

case "$job" in
  repro) exec .venv/bin/dvc repro "$@" ;;
  test) exec .venv/bin/python -m pytest "$@" ;;
  setup) echo "[bootstrap] ready: .venv/bin/dvc repro, .venv/bin/testleak --help" ;;
  *) echo "usage: scripts/bootstrap.sh repro|test|setup [args]" >&2; exit 2 ;;
esac
