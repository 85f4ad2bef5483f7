#!/usr/bin/env bash
# Regenerate requirements.lock (every distribution of testleak[dev,model], pinned with hashes) from
# pyproject.toml with pip-tools, in a venv of its own (.cache/lock-venv), so that pip-tools itself
# never enters the project's environment, whose installed sources are the local corpus.
#   bash scripts/lock.sh                 # resolve anew within pyproject.toml's ranges
#   bash scripts/lock.sh -c FILE         # ... constrained by FILE (e.g. `pip freeze` of a venv)
# Then `bash scripts/bootstrap.sh setup` installs it, and the next `dvc repro` rebuilds the index.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=.cache/lock-venv
if [ ! -x "$tool/bin/pip-compile" ]; then
  python3 -m venv "$tool"
  "$tool/bin/pip" install -q "pip-tools==7.6.2"
fi
# pip itself is locked too: its sources are part of the corpus like every other distribution's.
echo "pip==23.2.1" | "$tool/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links --extra dev --extra model "$@" -o requirements.lock pyproject.toml -
