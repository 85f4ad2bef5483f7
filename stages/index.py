"""Stage ``index``: the corpus index the verifier searches (paper Sec. 4.3, offline GitHub proxy).

    python -m stages.index

Reads params: verifier.backend, verifier.index (where the index goes), verifier.local (corpus,
dirs, extensions, case_sensitive, max_file_bytes, max_files, max_bytes, compress) and, for
``verifier=infinigram``, verifier.infinigram (shards, mem_gib). Builds an SQLite FTS5 trigram
index (backends local and github) or an infini-gram suffix-array directory (backend
infinigram) over the same documents, and writes data/index/stats.json (files, bytes,
repositories, skipped files, index bytes; timings go to stderr only).
"""

from __future__ import annotations

import sys

from omegaconf import OmegaConf

from testleak.config import load_params
from testleak.paths import Paths
from testleak.stage import entry
from testleak.records import write_json
from testleak.verify.index import build_index


def main(argv: list[str] | None = None) -> int:
    paths = Paths()
    params = OmegaConf.to_container(load_params(), resolve=True)
    ver = params.get("verifier") or {}
    local = ver.get("local") or {}
    out = paths.corpus_index(ver)
    if ver.get("backend") == "infinigram":
        from testleak.verify.infinigram import build_infinigram

        ig = ver.get("infinigram") or {}
        stats = build_infinigram(local, out, shards=int(ig.get("shards") or 1), mem_gib=int(ig.get("mem_gib") or 4))
        engine, size = "infini-gram", stats["index_bytes"]
    else:
        stats = build_index(local, out)
        engine, size = "fts5-trigram", stats["db_bytes"]
    seconds = stats.pop("seconds")
    stats["engine"], stats["index_bytes"] = engine, size
    stats["index_over_corpus"] = round(size / max(1, stats["bytes"]), 3)
    write_json(paths.index.parent / "stats.json", stats)
    print(f"index ({engine}): {stats['files']} files, {stats['bytes'] / 1e6:.1f} MB from {stats['repos']} "
          f"repositories in {seconds:.1f}s; index {size / 1e6:.1f} MB ({stats['index_over_corpus']}x); skipped "
          f"{stats['skipped_large']} large, {stats['skipped_unreadable']} unreadable; truncated={stats['truncated']}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
