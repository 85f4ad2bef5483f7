"""Where every artifact lives. dvc.yaml names the same paths; stages take them from here.

data/ is DVC-tracked and git-ignored (raw values live only there); .cache/ holds the LLM
and search caches outside stage outputs so that reruns and resumes repeat no call.
"""

from __future__ import annotations

import os
from pathlib import Path

from .config import project_root
from .resources_io import locate

#: The per-run stages of the chain, in order, with the record kind each writes.
RUN_STAGES = {"responses": "response", "candidates": "candidate", "judged": "verdict", "verified": "hit",
              "confirmed": "confirmed"}


class Paths:
    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root else project_root()

    # shared
    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def cache(self) -> Path:
        """$TESTLEAK_CACHE, else the project's .cache. Experiments queued with
        `dvc exp run --queue` run in temporary copies under .dvc/tmp/exps/: they share the
        main project's cache (model file, LLM and search answers) instead of starting empty."""
        env = os.environ.get("TESTLEAK_CACHE")
        if env:
            return Path(env)
        parts = self.root.resolve().parts
        for i in range(len(parts) - 2):
            if parts[i:i + 3] == (".dvc", "tmp", "exps"):
                return Path(*parts[:i]) / ".cache"
        return self.root / ".cache"

    @property
    def models(self) -> Path:
        return self.cache / "models"

    @property
    def llm_cache(self) -> Path:
        return self.cache / "llm"

    @property
    def search_cache(self) -> Path:
        return self.cache / "search"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def resources(self) -> Path:
        """Data shipped with the code (prior library, baseline templates, paper results)."""
        return self.root / "testleak" / "resources"

    @property
    def questions(self) -> Path:
        return self.data / "questions" / "questions.jsonl"

    @property
    def questions_stats(self) -> Path:
        return self.data / "questions" / "stats.json"

    @property
    def index(self) -> Path:
        return self.data / "index" / "corpus.sqlite"

    def corpus_index(self, index: str | None = None) -> Path:
        """The corpus index the verifier searches: ``verifier.index`` (FTS5 database or
        infini-gram directory, relative to the project root), else the FTS5 default."""
        return self.root / index if index else self.index

    @property
    def index_stats(self) -> Path:
        return self.data / "index" / "stats.json"

    @property
    def index_manifest(self) -> Path:
        """Distributions and versions (or directories) the index was built from."""
        return self.index.parent / "manifest.json"

    @property
    def labels_dir(self) -> Path:
        """Review labels (git). The confirmed stages depend on this directory, so a configured
        ``review.labels_file`` must lie inside it."""
        return self.root / "labels"

    @property
    def labels(self) -> Path:
        return self.labels_dir / "labels.jsonl"

    @property
    def canary(self) -> Path:
        return self.data / "canary"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    # per run (method x variant x round)
    def run_dir(self, run: str) -> Path:
        return self.data / "runs" / run

    def responses(self, run: str) -> Path:
        return self.run_dir(run) / "responses.jsonl"

    def candidates(self, run: str) -> Path:
        return self.run_dir(run) / "candidates.jsonl"

    def judged(self, run: str) -> Path:
        return self.run_dir(run) / "judged.jsonl"

    def verified(self, run: str) -> Path:
        return self.run_dir(run) / "verified.jsonl"

    def confirmed(self, run: str) -> Path:
        return self.run_dir(run) / "confirmed.jsonl"

    def library(self, name: str) -> Path:
        """The one resolution of a library name (experiment.runs.R.library, library.prior).

        A path (``testleak/resources/prior_library.yaml``, ``data/library/ours.json``) is
        relative to the project root; a shipped resource missing there (a project directory
        other than the source checkout) is taken from the source checkout. ``prior`` is the
        shipped prior library; any other name is the library built from that run's confirmed
        leaks (``data/library/<name>.json``)."""
        name = str(name)
        if name == "prior":
            name = "testleak/resources/prior_library.yaml"
        elif "/" not in name and not name.endswith((".yaml", ".yml", ".json")):
            return self.data / "library" / f"{name}.json"
        return locate(name, self.root)

    def library_divisions(self, run: str) -> Path:
        return self.data / "library" / f"{run}.divisions.jsonl"

    def library_stats(self, run: str) -> Path:
        return self.data / "library" / f"{run}_stats.json"

    @property
    def figures(self) -> Path:
        return self.reports / "figures"

    def stats(self, stage: str, run: str) -> Path:
        """The counts a per-run stage writes next to its records (a plain DVC output)."""
        return self.run_dir(run) / f"{stage}_stats.json"

    def records(self, stage: str, run: str) -> Path:
        """The records file of per-run stage ``stage`` (responses | candidates | judged | verified | confirmed)."""
        if stage not in RUN_STAGES:
            raise ValueError(f"unknown per-run stage {stage!r}; known: {', '.join(RUN_STAGES)}")
        return getattr(self, stage)(run)

    def library_figures(self, run: str) -> list[Path]:
        return [self.figures / f"{run}_division_scores.png", self.figures / f"{run}_embeddings_fragments.png",
                self.figures / f"{run}_embeddings_templates.png"]

    def metrics(self, run: str) -> Path:
        """Headline metrics of a run, tracked in git (DVC ``metrics:``)."""
        return self.root / "metrics" / f"{run}.json"

    def run_metrics(self, run: str) -> Path:
        """All metrics of a run (Tables 2-4 inputs, confirmed value-hash keys): a plain DVC
        output under data/ (never in git); data/metrics/ holds only these files."""
        return self.data / "metrics" / f"{run}.json"

    def metrics_plot(self, run: str) -> Path:
        """DVC plots: cumulative confirmed instances vs responses of a run (Figure 1 data)."""
        return self.root / "metrics" / "plots" / f"{run}_confirmed_vs_responses.csv"
