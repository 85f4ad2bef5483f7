#!/usr/bin/env bash
# After `dvc repro` on a clean checkout: the regenerated dvc.lock, metrics/ and reports/ must equal
# the committed ones (docs/REPRODUCIBILITY.md). Prints the differing files and exits 1 otherwise.
set -uo pipefail
cd "${1:-.}"
new=$(git ls-files --others --exclude-standard -- metrics reports)
if git diff --quiet -- dvc.lock metrics reports && [ -z "$new" ]; then
  echo "[reproduced] dvc.lock, metrics/ and reports/ equal the committed ones"
  exit 0
fi
echo "[reproduced] the regenerated outputs differ from the committed ones:" >&2
git diff --stat -- dvc.lock metrics reports >&2
[ -z "$new" ] || printf '%s\n' "$new" | sed 's/^/  new, not committed: /' >&2
# the stage outputs whose hash changed (dvc.lock lists path before md5)
git diff -U1 -- dvc.lock | grep -E '^[-+ ] +- path:|^[-+] +md5:' | head -60 >&2 || true
exit 1
