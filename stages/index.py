"""Stage ``index``: the local exact-substring corpus index (paper Sec. 4.3, offline GitHub proxy).

    python -m stages.index

Reads params: verifier.local (corpus, dirs, extensions, case_sensitive, max_file_bytes,
max_files, max_bytes, compress). Writes data/index/corpus.sqlite, data/index/stats.json
(files, bytes, repositories, skipped files, build seconds, database bytes) and
data/index/manifest.json (the distributions and versions, or directories, indexed). The
installed distributions follow pyproject.toml (a dep of this stage).
"""

from __future__ import annotations

import sys

from testleak.paths import Paths
from testleak.stage import entry, read_params
from testleak.records import write_json
from testleak.verify.index import build_index, corpus_manifest


def main(argv: list[str] | None = None) -> int:
    paths = Paths()
    params = read_params()
    local = (params.get("verifier") or {}).get("local") or {}
    stats = build_index(local, paths.index)
    stats["db_over_corpus"] = round(stats["db_bytes"] / max(1, stats["bytes"]), 3)
    write_json(paths.index_stats, stats)
    write_json(paths.index_manifest, corpus_manifest(local))
    print(f"index: {stats['files']} files, {stats['bytes'] / 1e6:.1f} MB from {stats['repos']} repositories "
          f"in {stats['seconds']:.1f}s; database {stats['db_bytes'] / 1e6:.1f} MB "
          f"({stats['db_over_corpus']}x); skipped {stats['skipped_large']} large, "
          f"{stats['skipped_unreadable']} unreadable; truncated={stats['truncated']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
