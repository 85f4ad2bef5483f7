"""The projection of benchmarks/bench_index.py: model fits recover known growth, the
infini-gram disk layout follows the pointer width, and `--project` redoes the projection
from a saved result."""

from __future__ import annotations

import json
import math
import sys

import pytest

from testleak.config import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_index as bi  # noqa: E402

SIZES = [25e6, 50e6, 100e6]


def _rows(build=lambda n: 2e-7 * n * math.log2(n), p50=lambda n: 0.5 + 0.02 * math.log2(n),
          p95=lambda n: 3 + 1e-7 * n):
    rows = []
    for n in SIZES:
        files = int(n / 1e6 * 87)
        ig_bytes = int(n * (1 + math.ceil(math.log2(n) / 8)) + files * 160)
        lat = {"p50_ms": p50(n), "p95_ms": p95(n), "max_ms": 2 * p95(n)}
        rows.append({"corpus_mb": n / 1e6, "corpus_bytes": int(n), "files": files,
                     "build_s": {"infinigram": build(n), "fts5": build(n) / 3, "scan": 0.0},
                     "index_bytes": {"infinigram": ig_bytes, "fts5": int(1.2 * n)},
                     "index_over_corpus": {"infinigram": ig_bytes / n, "fts5": 1.2, "scan": 1.0},
                     "latency": {"infinigram": lat, "fts5": lat, "scan": lat}})
    return rows


@pytest.mark.parametrize("model,a,b", [("n", 3.0, 1e-7), ("log n", 0.5, 0.02), ("n log n", 0.0, 2e-7)])
def test_fit_model_recovers_the_generating_coefficients(model, a, b):
    f = bi._F[model]
    fa, fb = bi.fit_model(SIZES, [a + b * f(n) for n in SIZES], model)
    assert fa == pytest.approx(a, rel=1e-6, abs=1e-6) and fb == pytest.approx(b, rel=1e-6)


def test_fit_model_keeps_coefficients_non_negative():
    # latency falling with size (noise) must not extrapolate to a negative time
    a, b = bi.fit_model(SIZES, [9.0, 6.0, 3.0], "n")
    assert a > 0 and b == 0


def test_projection_extrapolates_each_engine_by_its_model():
    proj = bi.project(_rows())
    ig = proj["engines"]["infinigram"]
    n = 1e12
    assert ig["build_s"]["model"] == "n log n"
    assert ig["build_s"]["at"]["1TB"] == pytest.approx(2e-7 * n * math.log2(n), rel=1e-6)
    assert ig["p50_ms"]["at"]["1TB"] == pytest.approx(0.5 + 0.02 * math.log2(n), rel=1e-6)
    assert ig["p95_ms"]["at"]["100GB"] == pytest.approx(3 + 1e-7 * 1e11, rel=1e-6)
    # 5-byte pointers from 4 GB of text on: 6 bytes per corpus byte plus the per-file tables
    assert ig["disk"]["per_doc_bytes"] == pytest.approx(160, abs=1)
    assert ig["disk"]["at"]["1TB"] == pytest.approx(6 * n + n * 87e-6 * 160, rel=1e-3)
    assert proj["engines"]["fts5"]["disk"]["at"]["100GB"] == pytest.approx(1.2e11)
    assert "build_s" not in proj["engines"]["scan"]
    table = bi.projection_table(proj)
    assert table.count("\n") == 1 + 3 * 2 and "| infinigram | 1TB |" in table


def test_project_option_reads_a_saved_result(tmp_path, capsys):
    saved = tmp_path / "out.json"
    saved.write_text(json.dumps({"sizes": _rows(), "projection": {}, "disagreements": 0}))
    assert bi.main(["--project", str(saved)]) == 0
    out = capsys.readouterr().out
    assert '"n log n"' in out and "| fts5 | 100GB |" in out
