"""An embedded answer depends only on the request (docs/REPRODUCIBILITY.md): an LLM stage run twice
with empty caches, once on the whole machine and once on one CPU beside a process that keeps that
CPU busy (so one server instead of two, other timing, other request interleaving), writes the
same bytes."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess

import pytest

from tests.project import SMALL_MODEL, env_for, make_project, shared_cache

pytestmark = pytest.mark.slow


def _spin(stop) -> None:
    os.sched_setaffinity(0, {0})
    while not stop.is_set():
        pass


def _questions(tmp_path, name: str, cpus: set[int] | None) -> tuple[bytes, dict]:
    proj = make_project(tmp_path / name, ["experiment=tiny", *SMALL_MODEL], git=False)
    env = env_for(shared_cache(tmp_path / f"{name}-cache"))     # an empty LLM cache of its own
    cmd = ["sh", "stages/run", "questions"]
    if cpus is not None:
        cmd = ["taskset", "-c", ",".join(map(str, sorted(cpus))), *cmd]
    p = subprocess.run(cmd, cwd=proj, env=env, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    out = proj / "data" / "questions"
    return (out / "questions.jsonl").read_bytes(), json.loads((out / "stats.json").read_text())


def test_an_llm_stage_gives_the_same_bytes_under_other_cpus_and_load(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs to vary the CPUs a run may use")
    whole, stats_whole = _questions(tmp_path, "whole", None)
    stop = mp.Event()
    spinner = mp.Process(target=_spin, args=(stop,))
    spinner.start()
    try:
        one, stats_one = _questions(tmp_path, "one-cpu", {0})
    finally:
        stop.set()
        spinner.join(10)
    records = [json.loads(x) for x in whole.decode().splitlines()]
    assert records and all(r["text"].strip() for r in records)
    assert one == whole
    assert stats_one == stats_whole
