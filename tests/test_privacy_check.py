"""`testleak privacy-check` on a real (temporary) git repository with a tiny data/ tree."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from testleak.cli import main
from testleak.privacy import mask, value_hash
from testleak.privacy_check import candidate_values, privacy_check
from testleak.records import write_jsonl

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

ECHO, LEAK, PLACEHOLDER, SHORT = "Wei Zhang", "zorg_admin77", "John Doe", "qx7Rk"


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    run = root / "data" / "runs" / "ours"
    cands = [("c1", "name", ECHO, {"echo_of": "library:name:fragment", "echo_match": "equal"}),
             ("c2", "username", LEAK, {}), ("c3", "name", PLACEHOLDER, {}), ("c4", "password", SHORT, {})]
    write_jsonl(run / "candidates.jsonl", [{"id": i, "response_id": "r1", "attribute": a, "value": v,
                                            "value_hash": value_hash(v), **extra} for i, a, v, extra in cands],
                kind="candidate")
    write_jsonl(run / "judged.jsonl", [
        {"candidate_id": "c1", "attribute": "name", "value_hash": value_hash(ECHO), "kept": False,
         "rules": {"ok": False, "reason": "echo of library:name:fragment (equal)", "status": "echo"},
         "judge": {"ok": None, "reason": "not asked", "status": "skipped"}},
        {"candidate_id": "c2", "attribute": "username", "value_hash": value_hash(LEAK), "kept": True,
         "rules": {"ok": True, "reason": "user-name shape", "status": "ok"},
         "judge": {"ok": True, "reason": "plausible", "status": "ok"}}], kind="verdict")
    write_jsonl(run / "confirmed.jsonl", [
        {"candidate_id": "c2", "attribute": "username", "value_hash": value_hash(LEAK), "outcome": "in_window",
         "policy": "auto", "status": "confirmed"}], kind="confirmed")
    (root / "docs").mkdir()
    (root / "docs" / "notes.md").write_text(f"intro\nhint `{ECHO}`\nseen: {LEAK} and {SHORT}\n", encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "t.py").write_text(f"assert is_placeholder('{PLACEHOLDER}')\n", encoding="utf-8")
    (root / ".gitignore").write_text("data/\n", encoding="utf-8")
    _git(root.parent, "init", "-q", str(root))
    _git(root, "add", "docs", "tests", ".gitignore")
    (root / "scratch.txt").write_text(f"untracked {LEAK}\n", encoding="utf-8")   # not tracked: not scanned
    return root


def test_values_and_their_records(project):
    vals = candidate_values(project / "data", window_max=100)
    assert set(vals) == {ECHO, LEAK, PLACEHOLDER}            # the 5-character value is below the minimum
    assert vals[ECHO].kind == "echo" and vals[ECHO].statuses == {"echo"} and vals[ECHO].runs == {"ours"}
    assert vals[LEAK].kind == "leak" and vals[LEAK].statuses == {"confirmed"}
    assert vals[PLACEHOLDER].kind == "placeholder" and vals[PLACEHOLDER].statuses == {"candidate"}


def test_fails_on_a_value_that_is_neither_echo_nor_placeholder(project):
    lines: list[str] = []
    assert privacy_check(project, out=lines.append) == 1
    text = "\n".join(lines)
    assert LEAK not in text and ECHO not in text and PLACEHOLDER not in text     # printed masked only
    assert f"docs/notes.md:3: {mask(LEAK)} (1x) kind=leak status=confirmed runs=ours echo=no placeholder=no" in lines
    assert f"docs/notes.md:2: {mask(ECHO)} (1x) kind=echo status=echo runs=ours echo=library:name:fragment " \
           f"placeholder=no" in lines
    assert any(ln.startswith(f"tests/t.py:1: {mask(PLACEHOLDER)} (1x) kind=placeholder") for ln in lines)
    assert lines[0].startswith("docs/notes.md:3:")                                # failures first
    assert "scratch.txt" not in text and "(echo 1, generic 0, placeholder 1, common 0, none of these 1)" in text and "FAILED" in text


def test_passes_when_only_echoes_and_placeholders_remain(project, capsys):
    (project / "docs" / "notes.md").write_text(f"hint `{ECHO}`\n", encoding="utf-8")
    assert main(["privacy-check", "--root", str(project)]) == 0
    out = capsys.readouterr().out
    assert "kind=echo" in out and "kind=placeholder" in out and "none of these 0" in out


def test_min_length_and_errors(project, tmp_path, capsys):
    (project / "docs" / "notes.md").write_text(f"pin {SHORT}\n", encoding="utf-8")
    assert main(["privacy-check", "--root", str(project)]) == 0
    assert main(["privacy-check", "--root", str(project), "--min-length", "5"]) == 1
    assert f"{mask(SHORT)} (1x) kind=leak status=candidate" in capsys.readouterr().out
    (tmp_path / "nogit").mkdir()
    assert main(["privacy-check", "--root", str(tmp_path / "nogit")]) == 2
    assert "not a git work tree" in capsys.readouterr().err
    assert main(["privacy-check", "--root", str(project), "--min-length", "0"]) == 2


def test_a_value_above_the_corpus_window_is_common_not_a_leak(project):
    """By the paper's window (1 <= hits <= 100) a value found in more corpus files is public:
    the check counts it as ``common`` (an exception class name a baseline's NER took for a
    name), and the window's bound comes from params.yaml."""
    run = project / "data" / "runs" / "ours"
    write_jsonl(run / "verified.jsonl", [
        {"candidate_id": "c2", "attribute": "username", "value_hash": value_hash(LEAK), "outcome": "in_window", "k": 250}],
        kind="hit")
    lines: list[str] = []
    assert privacy_check(project, out=lines.append) == 0
    assert any(f"{mask(LEAK)} (1x) kind=common" in ln and "corpus_hits>=250" in ln for ln in lines)
    (project / "params.yaml").write_text("verifier:\n  window: {min: 1, max: 500}\n", encoding="utf-8")
    assert privacy_check(project, out=lines.append) == 1          # 250 hits are inside a window up to 500


def test_taxonomy_words_are_generic_and_withheld_records_hold_nothing(project):
    """A published-run value equal to a taxonomy word (``Password``) is ``generic``, not a leak;
    a candidate that withheld its value (hash and mask only) gives the check nothing to find."""
    from testleak.config import compose_dict, dump_params
    from testleak.taxonomy import Taxonomy

    params = compose_dict(["experiment=tiny"])
    dump_params(params, project / "params.yaml")
    pub = project / "data" / "runs" / "codexleaks"
    secret = "Xq9!vLm2#Tz"
    write_jsonl(pub / "candidates.jsonl", [
        {"id": "p1", "response_id": "r9", "attribute": "password", "value": "Password", "value_hash": value_hash("Password")},
        {"id": "p2", "response_id": "r9", "attribute": "password", "value_hash": value_hash(secret),
         "masked": mask(secret), "withheld": "placeholder", "withheld_reason": "placeholder: x"}], kind="candidate")
    (project / "docs" / "notes.md").write_text(f"hint `{ECHO}`\nthe Password field; {secret}\n", encoding="utf-8")
    vals = candidate_values(project / "data", window_max=100, taxonomy=Taxonomy.from_config(params))
    assert vals["Password"].kind == "generic" and secret not in vals
    lines: list[str] = []
    assert privacy_check(project, out=lines.append) == 0
    assert any("kind=generic" in ln for ln in lines) and "generic 1" in lines[-1]


def test_a_value_counts_only_as_a_whole_token(project):
    # the same characters inside a longer word or hex digest are not the value; beside punctuation they are
    notes = project / "docs" / "notes.md"
    notes.write_text(f"sha256:ab{LEAK}9f and x{LEAK}\n", encoding="utf-8")
    _git(project, "add", "docs")
    assert privacy_check(project, out=[].append) == 0
    notes.write_text(f"sha256:ab{LEAK}9f\nuser=\"{LEAK}\";\n", encoding="utf-8")
    lines: list[str] = []
    assert privacy_check(project, out=lines.append) == 1
    assert f"docs/notes.md:2: {mask(LEAK)} (1x) kind=leak status=confirmed runs=ours echo=no placeholder=no" in lines


def test_hand_labels_under_data_labels_are_checked_too(project):
    """An annotator's raw label (data/labels/**) is a raw value like a candidate's: in a tracked
    file it fails the check unless its response's prompt holds it (echo), its labeller marked it a
    placeholder, or it is one by the rules."""
    from testleak.privacy_check import label_values

    fresh = project / "data" / "labels" / "fresh" / "seed9" / "ours"
    given, private, stand_in = "Karolina Brzeska", "vT7#qa_Lmz9", "Generic Corp Bank"
    write_jsonl(fresh / "responses.jsonl", [
        {"id": "r1", "turn1": {"messages": [{"role": "user", "content": f"a profile for {given}"}]},
         "tests_text": f"p = Profile('{given}', '{private}', '{stand_in}')"}])
    write_jsonl(fresh / "batches" / "raw_1.jsonl", [
        {"response_id": "r1", "value": v, "attribute": a, "placeholder": p}
        for v, a, p in ((given, "name", False), (private, "password", False), (stand_in, "bank_statement", True))])
    vals = label_values(project / "data" / "labels", window_max=100)
    assert {v: i.kind for v, i in vals.items()} == {given: "echo", private: "leak", stand_in: "placeholder"}
    assert vals[private].runs == {"labels/fresh/seed9/ours/batches"} and vals[private].statuses == {"hand label"}
    (project / "docs" / "notes.md").write_text(f"hint `{ECHO}`\n{given}; {stand_in}\n", encoding="utf-8")
    lines: list[str] = []
    assert privacy_check(project, out=lines.append) == 0                     # echo and placeholder only
    (project / "docs" / "notes.md").write_text(f"hint `{ECHO}`\nthe password {private}\n", encoding="utf-8")
    lines.clear()
    assert privacy_check(project, out=lines.append) == 1
    assert f"docs/notes.md:2: {mask(private)} (1x) kind=leak status=hand label runs=labels/fresh/seed9/ours/batches " \
           f"echo=no placeholder=no" in lines and private not in "\n".join(lines)


def test_a_hand_label_found_in_the_projects_prompt_resources_is_an_echo(project):
    from testleak.privacy_check import label_values

    fresh = project / "data" / "labels" / "fresh" / "seed9" / "codexleaks"
    shipped = "Orlaith Quenby"
    write_jsonl(fresh / "responses.jsonl", [{"id": "r1", "prompt": "x = ", "tests_text": f"x = '{shipped}'"}])
    write_jsonl(fresh / "raw_all.jsonl", [{"response_id": "r1", "value": shipped, "attribute": "name", "placeholder": False}])
    assert label_values(project / "data" / "labels", window_max=100)[shipped].kind == "leak"
    vals = label_values(project / "data" / "labels", window_max=100, prompts=f"templates:\n  - name: {shipped}\n")
    assert vals[shipped].kind == "echo" and vals[shipped].echo_of == {"prompt resource"}
