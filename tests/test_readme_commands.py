"""Every command in the ```bash blocks of README.md and of the pages docs/*.md either runs here or
is listed in SKIPPED with its reason (issue #11 item 4): a documented command that no longer
works fails the suite, and a new documented command that is neither run nor listed fails
`test_every_readme_command_is_classified`. README.md and docs/*.md are one list of commands
(a command moved from the README to a docs page keeps its runner or SKIPPED entry).

Commands are the lines of fenced blocks tagged bash/sh/shell/console (`\\` continues a line,
`#` starts a comment); untagged blocks are diagrams and outputs. Cheap commands run through
the venv's entry points (`testleak`, `dvc`, as `.venv/bin/...`) with no venv on PATH:
`testleak params ...` in a temporary copy (it writes params.yaml), `testleak review ...` on a
small review fixture, `dvc exp show` / `dvc metrics diff` / `dvc plots show` in a test
project (a git repository with the default experiment's committed metrics; marked slow)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from testleak.config import ROOT
from tests.project import BIN, make_project, shared_cache, shim_env
from tests.test_verify_review import project  # noqa: F401  (fixture: params + records of run `ours`)

SKIPPED = {
    "bash scripts/bootstrap.sh repro": "the default experiment, ~12 min of both cores: .ci/run runs it "
                                       "(failing python shim on PATH, then dvc status must be clean)",
    "bash scripts/bootstrap.sh test": "the test suite itself: .ci/run runs it",
    ".venv/bin/dvc repro": "the default experiment; single stages through dvc repro: tests/test_stage_launcher.py",
    "dvc exp run -S model=gpt-4o -S judge=gpt-4o": "hosted model: needs OPENAI_API_KEY and the network",
    "dvc exp run -S model=deepseek-v3 -S judge=deepseek-v3": "hosted model: needs DEEPSEEK_API_KEY and the network",
    "GPT_OSS_BASE_URL=http://host:8000/v1 dvc exp run -S model=gpt-oss-120b": "hosted model at a placeholder URL",
    "testleak check-model --model gpt-4.1": "hosted model: needs OPENAI_API_KEY and the network "
                                            "(the code path: tests/test_gateway.py against a local fake server)",
    "dvc exp run --queue -S 'model=qwen2.5-coder-0.5b,qwen2.5-coder-1.5b' -S 'ablation=none,no_fl'":
        "a 4-experiment sweep needing the 1.5B model parts; a queued sweep: tests/test_e2e_dvc.py",
    "dvc queue start -j 2": "runs the queued sweep above (tests/test_e2e_dvc.py runs a queue of tiny experiments)",
    "dvc exp run -S review=two_reviewers -S 'review.reviewers=[alice,bob]'":
        "the default experiment again; review=two_reviewers in dvc repro: tests/test_review_terminal.py",
    "dvc exp run -S model=gpt-4o -S judge=gpt-4o -S budget.usd=20": "hosted model: needs OPENAI_API_KEY; the cap "
                                                                     "against a local fake server: tests/test_budget.py",
    "dvc exp run -S experiment=canary": "ours at its protocol: LoRA fine-tuning and hours of calibration runs on 2 cores "
                                        "(conf/experiment/canary.yaml); experiment=canary_tiny: tests/test_canary_slow.py",
    "dvc exp run -S experiment=canary_ablations": "LoRA fine-tuning, ~70 min (reports/canary_measured); "
                                                  "experiment=canary_tiny: tests/test_canary_slow.py",
    "dvc exp run -S experiment=canary -S canary.spec=audit/canaries.jsonl":
        "the canary experiment with a user's spec file (a placeholder path); a spec end to end with "
        "experiment=canary_tiny: tests/test_canary_slow.py",
    ".venv/bin/testleak labels migrate [--labels labels/labels.jsonl] [--drop-unavailable]":
        "a synopsis (options in brackets) over the user's labels; the migration and its refusals: "
        "tests/test_verify_review.py",
    ".venv/bin/dvc remote add -d store /path/or/s3/url && .venv/bin/dvc push":
        "a placeholder remote URL; pushes the user's DVC outputs",
    "tar czf llm-cache.tgz .cache/llm .cache/search":
        "archives the user's answer cache (a sharing recipe, docs/REPRODUCIBILITY.md)",
}


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]   # where documented commands live


def readme_commands(text: str | None = None) -> list[str]:
    """The commands of a page's shell blocks (default: README.md), comments stripped, continuations joined."""
    text = (ROOT / "README.md").read_text(encoding="utf-8") if text is None else text
    cmds = []
    for block in re.findall(r"^```(?:bash|sh|shell|console)[ \t]*\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            words = shlex.split(line, comments=True)
            if words:
                cmds.append(shlex.join(words))
    return cmds


def normalize(cmd: str) -> str:
    return shlex.join(shlex.split(cmd, comments=True))


SKIP = {normalize(c): why for c, why in SKIPPED.items()}


def documented_commands() -> dict[str, str]:
    """Every command of README.md and docs/*.md (first occurrence) -> the page it is on."""
    found: dict[str, str] = {}
    for page in DOCS:
        for cmd in readme_commands(page.read_text(encoding="utf-8")):
            found.setdefault(cmd, page.relative_to(ROOT).as_posix())
    return found


SOURCES = documented_commands()
COMMANDS = list(SOURCES)


def _exe(words: list[str]) -> list[str]:
    name = words[0].removeprefix(".venv/bin/")
    return [str(BIN / name), *words[1:]] if name in ("testleak", "dvc") else words


def _run(words, cwd, env, timeout=300) -> subprocess.CompletedProcess:
    p = subprocess.run(_exe(words), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"documented command {shlex.join(words)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    return p


def run_help(words, tmp_path, request, env):
    out = _run(words, tmp_path, env).stdout
    assert out.startswith("usage:") and "show this help message" in out


def run_models(words, tmp_path, request, env):
    names = _run(words, tmp_path, env).stdout.split()
    assert names == sorted(p.stem for p in (ROOT / "conf/model").glob("*.yaml")) and "qwen2.5-coder-0.5b" in names


def run_params(words, tmp_path, request, env):
    proj = make_project(tmp_path / "p", git=False)
    (proj / "params.yaml").unlink()
    out = _run(words, proj, env).stdout
    assert "wrote params.yaml" in out and (proj / "params.yaml").stat().st_size > 1000


def run_review(words, tmp_path, request, env):
    root, values = request.getfixturevalue("project")
    out = _run(words, root, env).stdout
    if "--agreement" in words:
        assert set(json.loads(out)) == {"reviewers", "n", "kappa", "observed_agreement"}
    else:  # no terminal input: the loop shows the first candidate masked, then stops (resumable)
        assert "3 of 3 in-window candidates to label" in out and "stopped: 0 labelled now" in out
        assert not any(v in out for v in values.values())


def run_plan(words, tmp_path, request, env):
    proj = make_project(tmp_path / "p", git=False)
    out = _run(words, proj, env).stdout
    if "--json" in words:
        p = json.loads(out)
        assert p["rows"] and p["total"]["calls"] == sum(r["calls"] for r in p["rows"]) > 0
    else:
        assert out.startswith("plan of experiment") and "per model:" in out


@pytest.fixture(scope="module")
def dvc_project(tmp_path_factory):
    """A test project with the default experiment's committed metrics, shared by the dvc commands."""
    proj = make_project(tmp_path_factory.mktemp("readme") / "p")
    for f in (ROOT / "metrics").rglob("*"):
        if f.is_file():
            (proj / f.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            (proj / f.relative_to(ROOT)).write_bytes(f.read_bytes())
    subprocess.run(["git", "add", "-A"], cwd=proj, check=True)
    subprocess.run(["git", "commit", "-qm", "metrics"], cwd=proj, check=True)
    return proj


def run_in_dvc_project(words, tmp_path, request, env):
    proj = request.getfixturevalue("dvc_project")
    out = _run(words, proj, env).stdout
    if words[1:3] == ["exp", "show"]:
        assert "workspace" in out and "Experiment" in out
        if "--md" in words:   # README's compact table: every headline metric, about 40 columns
            header = [c.strip() for c in out.splitlines()[0].strip("|").split("|")]
            runs = [p.stem for p in (proj / "metrics").glob("*.json")]
            assert len(header) <= 2 + 12 * len(runs) + 4, header
            assert all(f"metrics/{r}.json:confirmed" in header for r in runs), header
            assert not any(c.startswith(("data/", "testleak/", "taxonomy.")) for c in header), header
    if words[1:3] == ["plots", "show"]:
        assert (proj / "dvc_plots/index.html").stat().st_size > 0


RUNNERS = [  # (command prefix, runner); the first match wins
    (("testleak", "params"), run_params),
    (("testleak", "review"), run_review),
    (("testleak", "models"), run_models),
    (("testleak", "plan"), run_plan),
    (("dvc", "exp", "show"), run_in_dvc_project),
    (("dvc", "metrics"), run_in_dvc_project),
    (("dvc", "plots", "show"), run_in_dvc_project),
]


def runner_for(cmd: str):
    words = shlex.split(cmd)
    words[0] = words[0].removeprefix(".venv/bin/")
    if words[0] in ("testleak", "dvc") and words[-1] in ("--help", "-h"):
        return run_help
    for prefix, fn in RUNNERS:
        if tuple(words[:len(prefix)]) == prefix:
            return fn
    return None


def test_every_readme_command_is_classified():
    assert len(COMMANDS) >= 10, COMMANDS  # the blocks were found
    unclassified = [c for c in COMMANDS if c not in SKIP and runner_for(c) is None]
    assert not unclassified, (f"documented commands neither run nor skipped: "
                              f"{[(c, SOURCES[c]) for c in unclassified]}; add a runner or an "
                              f"entry with its reason to SKIPPED in {Path(__file__).name}")
    stale = [c for c in SKIP if c not in COMMANDS]
    assert not stale, f"SKIPPED lists commands that neither README.md nor docs/*.md has: {stale}"
    assert any(runner_for(c) for c in COMMANDS if c not in SKIP)


def test_extraction_joins_continuations_and_drops_comments_and_outputs():
    text = "```bash\ndvc exp show \\\n  --md   # compact\n# a comment\n```\n```\nnot a command\n```\n"
    assert readme_commands(text) == ["dvc exp show --md"]


@pytest.mark.parametrize("cmd", [pytest.param(c, marks=[pytest.mark.slow] if runner_for(c) is run_in_dvc_project else [])
                                 for c in COMMANDS if c not in SKIP])
def test_readme_command_runs(cmd, tmp_path, request):
    fn = runner_for(cmd)
    assert fn is not None, f"no runner for the command {cmd!r} of {SOURCES[cmd]}"
    env = shim_env(tmp_path, shared_cache(tmp_path))
    env.pop("TESTLEAK_ROOT", None)
    fn(shlex.split(cmd), tmp_path, request, env)
