"""Stage ``index``: the corpus index the verifier searches (paper Sec. 4.3, offline GitHub proxy).

    sh stages/run index

Reads params: verifier.backend, verifier.index (where the index goes), verifier.local (corpus,
dirs, extensions, case_sensitive, max_file_bytes, max_files, max_bytes, compress) and, for
``verifier=infinigram``, verifier.infinigram (shards, mem_gib). Builds an SQLite FTS5 trigram
index (backends local and github) or an infini-gram suffix-array directory (backend
infinigram) over the same documents, and writes data/index/stats.json (files, bytes,
repositories, skipped files, index bytes; timings go to stderr only) and
data/index/manifest.json (the distributions and versions, or directories, indexed: the
installed distributions must equal requirements.lock, a dep of this stage; the project's
own distribution is not indexed).
"""

from __future__ import annotations

import sys

from testleak.paths import Paths
from testleak.stage import entry, load_stage_params
from testleak.records import write_json
from testleak.verify.envlock import check_locked
from testleak.verify.index import corpus_manifest
from testleak.verify.search import build_corpus_index


def main(argv: list[str] | None = None) -> int:
    paths = Paths()
    params = load_stage_params()
    local = (params.get("verifier") or {}).get("local") or {}
    if local.get("corpus") == "site-packages":
        check_locked(local.get("lock_file"))
    stats = build_corpus_index(params.get("verifier") or {}, paths)
    seconds = stats.pop("seconds")
    write_json(paths.index_stats, stats)
    write_json(paths.index_manifest, corpus_manifest((params.get("verifier") or {}).get("local") or {}))
    print(f"index ({stats['engine']}): {stats['files']} files, {stats['bytes'] / 1e6:.1f} MB from {stats['repos']} "
          f"repositories in {seconds:.1f}s; index {stats['index_bytes'] / 1e6:.1f} MB ({stats['index_over_corpus']}x); "
          f"skipped {stats['skipped_large']} large, {stats['skipped_unreadable']} unreadable; "
          f"truncated={stats['truncated']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
