"""Stage candidates@RUN: ExtractPII over the run's responses (paper Sec. 4.2, App. B.2)."""

from __future__ import annotations

import sys

from testleak.config import load_params
from testleak.extract import candidates_from_responses
from testleak.paths import Paths
from testleak.stage import entry, run_argument
from testleak.records import read_jsonl, write_json, write_jsonl
from testleak.taxonomy import Taxonomy


def main(argv: list[str]) -> int:
    paths = Paths()
    params = load_params()
    run = run_argument(argv, params, "candidates")
    tax = Taxonomy.from_config(params)
    cands, stats = candidates_from_responses(read_jsonl(paths.responses(run), kind="response"), tax)
    write_jsonl(paths.candidates(run), cands, kind="candidate")
    write_json(paths.run_dir(run) / "candidates_stats.json", {"run": run, **stats})
    print(f"candidates@{run}: {stats['candidates']} from {stats['responses']} responses "
          f"(skipped {stats['skipped']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
