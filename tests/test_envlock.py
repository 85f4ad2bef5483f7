"""The locked environment: requirements.lock pins what the local corpus is built from."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testleak.config import ROOT
from testleak.errors import DataError
from testleak.verify.envlock import PROJECT, check_locked, differences, installed, normalize, read_lock
from tests.project import env_for, local_search, make_project, shared_cache


def test_the_committed_lock_is_this_environment():
    """The venv that runs the tests (and the committed default run) is the lock, exactly."""
    locked = read_lock(ROOT / "requirements.lock")
    assert {"torch", "faker", "dvc", "xllamacpp", "pip"} <= set(locked)
    assert locked["torch"] == "2.13.0+cpu"
    assert PROJECT not in locked and PROJECT not in installed()
    assert differences(locked, installed()) == []
    check_locked(ROOT / "requirements.lock")


def test_every_kind_of_difference_is_named_in_one_line(tmp_path):
    assert normalize("Foo_Bar.baz") == "foo-bar-baz"
    assert differences({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "2.1", "d": "4"}) == [
        "b 2.1 installed, 2 locked", "c 3 locked, not installed", "d 4 installed, not locked"]
    lock = tmp_path / "requirements.lock"
    text = (ROOT / "requirements.lock").read_text()
    lock.write_text(text.replace("\nfaker==", "\nfaker==0.0.1\n# was faker==", 1))
    with pytest.raises(DataError) as ei:
        check_locked(lock)
    msg = str(ei.value)
    assert "\n" not in msg and "faker" in msg and "0.0.1 locked" in msg and "bootstrap.sh setup" in msg


def test_the_index_stage_refuses_an_environment_that_is_not_the_lock(tmp_path):
    """Through the real stage launcher: a lock that pins another version stops the index stage
    before it builds anything, with one line naming the difference and the fix."""
    proj = make_project(tmp_path / "proj", git=False)
    lock = proj / "requirements.lock"
    lock.write_text(lock.read_text().replace("\nrequests==", "\nrequests==0.1.0\n# was requests==", 1))
    env = env_for(shared_cache(tmp_path))
    p = subprocess.run(["sh", "stages/run", "index"], cwd=proj, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode != 0
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "requests" in lines[0] and "0.1.0 locked" in lines[0], p.stderr
    assert not (proj / "data" / "index" / "corpus.sqlite").exists()


def test_the_corpus_holds_no_file_of_the_project_itself():
    """The project's own distribution (its editable finder holds the checkout's path) is not
    third-party code: indexing it would make the corpus depend on where the project lies."""
    from testleak.verify.index import corpus_manifest, iter_site_packages

    repos = {f.repo for f in iter_site_packages([".py"])}
    assert repos and not any(normalize(r) == PROJECT for r in repos)
    assert all(normalize(d["name"]) != PROJECT for d in corpus_manifest(local_search(corpus="site-packages"))["distributions"])
    assert Path(ROOT / "requirements.lock").is_file()


def test_ci_fails_when_a_regenerated_output_differs_from_the_committed_one(tmp_path):
    """scripts/check_reproduced.sh (step 4 of .ci/run): 0 on an unchanged tree; 1, naming the file,
    when a report differs, when metrics/ gains an uncommitted file, or when dvc.lock changed."""
    from tests.project import run

    repo = tmp_path / "r"
    (repo / "reports").mkdir(parents=True)
    (repo / "metrics").mkdir()
    (repo / "reports" / "table3.md").write_text("| LP>=1 | 12.00 |\n")
    (repo / "dvc.lock").write_text("schema: '2.0'\nstages:\n  report:\n    outs:\n    - path: reports/table3.md\n      md5: aa\n")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]):
        run(cmd, repo)
    script = ROOT / "scripts" / "check_reproduced.sh"

    def check():
        return subprocess.run(["bash", str(script), str(repo)], capture_output=True, text=True)

    assert check().returncode == 0
    (repo / "reports" / "table3.md").write_text("| LP>=1 | 13.00 |\n")
    p = check()
    assert p.returncode == 1 and "reports/table3.md" in p.stderr
    run(["git", "checkout", "--", "reports"], repo)
    (repo / "metrics" / "ours.json").write_text("{}")
    p = check()
    assert p.returncode == 1 and "new, not committed: metrics/ours.json" in p.stderr
    (repo / "metrics" / "ours.json").unlink()
    (repo / "dvc.lock").write_text((repo / "dvc.lock").read_text().replace("md5: aa", "md5: bb"))
    p = check()
    assert p.returncode == 1 and "dvc.lock" in p.stderr and "md5: bb" in p.stderr
