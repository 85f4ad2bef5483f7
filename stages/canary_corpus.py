"""Stage ``canary_corpus``: plant seeded canaries into sampled real code (issue 8; testleak.canary.plant).

    python -m stages.canary_corpus

Reads params: canary (spec, spec_dep, duplication, n, seed, files, file_bytes, attributes,
check_index), taxonomy, verifier.local.extensions; the spec file when canary.spec is set
(validated line by line, testleak.canary.spec). Writes data/canary/corpus/<repo>/<path> (the planted files),
data/canary/ground_truth.jsonl (canary/2: id, attribute, value, source, duplication, context,
copies [{file, line}], ...),
data/canary/original/<repo>/<path> (the untouched sampled files, for the control counts) and
data/canary/stats.json. Prints counts only (no raw values).
"""

from __future__ import annotations

import sys

from testleak.canary.pipeline import make_canary_corpus
from testleak.paths import Paths
from testleak.stage import entry, load_stage_params


def main(argv: list[str] | None = None) -> int:
    params = load_stage_params()
    stats = make_canary_corpus(params, Paths())
    print(f"canary_corpus: {stats['canaries']} canaries over {stats['attributes']} attributes in "
          f"{stats['files']} files ({stats['redrawn']} values redrawn)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
