"""``testleak review``: the terminal UI of the human review (paper Sec. 4.3: two reviewers
inspect each in-window candidate and its corpus context). The policy, labels and agreement
live in testleak/verify/review.py; this module only asks and shows.

A plain line-based loop (``input()``/``print``), so it works in any terminal, tmux and ssh
included. Each in-window candidate is shown masked, with its attribute, rule and judge
verdicts, hit count and matching corpus lines; ``r`` reveals the raw value and its context
(``r`` again masks it), y / l / n / u label it (appended at once to the labels file, so
``q``, Ctrl-D or Ctrl-C lose nothing and the next start resumes at the first candidate this
reviewer has not labelled), ``s`` skips it for this session.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

from .errors import ConfigError
from .privacy import mask, value_key
from .verify.review import LABELS, agreement, append_label, context_lines, latest_labels, read_labels, review_queue

KEYS = {"y": "yes", "l": "likely", "n": "no", "u": "unknown"}
PROMPT = "[y]es [l]ikely [n]o [u]nknown, [r]eveal, [s]kip, [q]uit > "


def review_loop(queue, reviewer: str, labels_path: Path, index_path: Path,
                inp: Callable[[str], str] = input, out=None, key: bytes | None = None) -> dict:
    """Ask ``reviewer`` for a label of every queued candidate they have not labelled yet."""
    out = out or sys.stdout
    done = latest_labels(read_labels(labels_path))
    todo = [t for t in queue if (t[0]["candidate_id"], reviewer) not in done]
    stats = {"total": len(queue), "already": len(queue) - len(todo), "labelled": 0, "skipped": 0}
    p = lambda *a: print(*a, file=out, flush=True)  # noqa: E731
    p(f"reviewer {reviewer}: {len(todo)} of {len(queue)} in-window candidates to label "
      f"({stats['already']} done earlier); labels go to {labels_path}")
    for n, (h, c, v) in enumerate(todo, 1):
        value = c["value"]
        revealed = False
        while True:
            p("")
            p(f"[{n}/{len(todo)}] run={h.get('run')} attribute={c['attribute']} id={c['id']}")
            p(f"  value:   {value if revealed else mask(value)}")
            if v:
                p(f"  rules:   {'ok' if v['rules']['ok'] else 'reject'} - {v['rules']['reason']}")
                j = v["judge"]
                p(f"  judge:   {j.get('status')} plausible={j.get('ok')} - {j.get('reason', '')}")
            p(f"  search:  k={h.get('k')} in {len(h.get('repo_ids') or [])} repositories ({h.get('engine')})")
            for line in context_lines(value, h, index_path, reveal=revealed):
                p(f"    {line}")
            try:
                ans = inp(PROMPT).strip().lower()
            except (EOFError, KeyboardInterrupt):
                ans = "q"
            if ans in ("r", "reveal"):
                revealed = not revealed
                continue
            if ans in ("q", "quit"):
                p(f"\nstopped: {stats['labelled']} labelled now; run the same command to resume")
                return stats
            if ans in ("s", "skip", ""):
                stats["skipped"] += 1
                break
            label = ans if ans in LABELS else KEYS.get(ans) if len(ans) == 1 else None
            if label is None:
                p(f"  unknown answer {ans!r}: type y, l, n, u, r, s or q")
                continue
            append_label(labels_path, c["id"], value, reviewer, label, key)
            stats["labelled"] += 1
            break
    p(f"done: {stats['labelled']} labelled, {stats['skipped']} skipped")
    return stats


def run(args, inp: Callable[[str], str] = input, out=None) -> int:
    """``testleak review`` with parsed arguments (testleak/cli.py defines them)."""
    from .config import load_params, run_spec, typed
    from .paths import Paths

    out = out or sys.stdout
    paths = Paths(args.root) if args.root else Paths()
    params = load_params(paths.root / "params.yaml")
    review = typed(params, "review")
    labels_path = Path(args.labels) if args.labels else paths.root / review.labels_file
    if args.agreement is not None:
        revs = args.agreement or list(review.reviewers)
        print(json.dumps(agreement(read_labels(labels_path), revs)), file=out)
        return 0
    if not args.reviewer:
        raise ConfigError("say who you are: testleak review --reviewer NAME (or --agreement A B)")
    runs = args.run or list((params.get("experiment") or {}).get("runs") or {})
    for r in runs:
        run_spec(params, r)  # an unknown run: one line naming the runs the experiment defines
    if not runs:
        raise ConfigError("no runs to review: pass --run RUN or set experiment.runs")
    review_loop(review_queue(runs, paths), args.reviewer, labels_path, paths.index, inp=inp, out=out,
                key=value_key(paths.cache))
    return 0
