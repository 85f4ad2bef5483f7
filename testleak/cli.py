"""`testleak <command>`: the command line. Library errors become one-line messages here."""

from __future__ import annotations

import argparse
import sys
import time

from .errors import TestleakError


def _cmd_check_model(args) -> int:
    from .config import compose_dict, load_params
    from .llm import open_gateway
    from .paths import Paths

    if args.model:
        cfg = compose_dict([f"model={args.model}"])["model"]
    else:
        cfg = load_params()["model"]
    t = time.monotonic()
    with open_gateway(cfg, Paths()) as gw:
        c = gw.chat([{"role": "user", "content": args.prompt}], sample=args.sample, max_tokens=args.max_tokens,
                    purpose="cli")
    if c.status != "ok":
        print(f"model {gw.name}: {c.status}: {c.error}", file=sys.stderr)
        return 1
    print(c.text)
    print(f"\n[{gw.name}] latency {c.latency_s:.2f}s (total {time.monotonic() - t:.2f}s incl. start-up), "
          f"tokens in/out {c.usage['prompt_tokens']}/{c.usage['completion_tokens']}, cached={c.cached}",
          file=sys.stderr)
    return 0


def _cmd_dvc_yaml(args) -> int:
    from .graph import main

    return main(["--check"] if args.check else [])


def _cmd_params(args) -> int:
    from .config import compose, dump_params

    cfg = compose(args.overrides)
    dump_params(cfg, args.output)
    print(f"wrote {args.output}")
    return 0


def _cmd_plan(args) -> int:
    import json

    from omegaconf import OmegaConf

    from .config import compose, load_params
    from .plan import format_plan, plan

    overrides = list(args.overrides) + list(args.set or [])
    cfg = compose(overrides, check_files=False) if overrides else load_params()
    data = OmegaConf.to_container(cfg, resolve=False)
    data.pop("validated_by", None)   # validated by compose (its resolver would check the labels file again)
    p = plan(OmegaConf.to_container(OmegaConf.create(data), resolve=True))
    print(json.dumps(p, indent=2, default=str) if args.json else format_plan(p))
    return 0


def _cmd_models(args) -> int:
    from .config import CONF_DIR

    for p in sorted((CONF_DIR / "model").glob("*.yaml")):
        print(p.stem)
    return 0


def _cmd_serve(args) -> int:
    from .config import compose_dict, load_params
    from .llm.local import LocalServer, ensure_model, server_settings
    from .paths import Paths

    cfg = compose_dict([f"model={args.model}"])["model"] if args.model else load_params()["model"]
    if cfg.get("provider") != "local":
        print(f"model {cfg['name']} is hosted, not served locally", file=sys.stderr)
        return 2
    flags = {"n_parallel": args.parallel, "n_threads": args.threads}
    sc = server_settings(cfg).model_copy(update={k: v for k, v in flags.items() if v is not None})
    path = ensure_model(cfg, Paths().models)
    with LocalServer(path, sc, alias=cfg.get("api_model")) as server:
        print(server.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


def _cmd_review(args) -> int:
    from .cli_review import run

    return run(args)


def _cmd_placeholders(args) -> int:
    from .privacy import mask
    from .verify import rules

    if args.action == "add":
        path = args.file or rules.placeholders_path()
        for v, (h, added) in zip(args.values, rules.add_placeholders(args.values, args.list, args.category, path)):
            print(f"{'added' if added else 'already listed'}: {mask(v)} -> {args.list}"
                  f"{':' + args.category if args.list == 'values' else ''} {h}")
        print(f"wrote {path}", file=sys.stderr)
        return 0
    why = rules.placeholder_reason(args.values[0], path=args.file)
    print(f"{mask(args.values[0])}: " + (f"placeholder ({why})" if why else "not a placeholder"))
    return 0 if why else 1


def _cmd_labels_migrate(args) -> int:
    from pathlib import Path

    from .paths import Paths
    from .privacy import value_key
    from .verify.review import migrate_labels

    paths = Paths(args.root) if args.root else Paths()
    labels = Path(args.labels) if args.labels else paths.labels
    st = migrate_labels(labels, paths.data, value_key(paths.cache), args.drop_unavailable)
    print(f"{labels}: {st['kept']} of {st['labels']} labels under key {st['key_id']} ({st['rehashed']} rehashed, "
          f"{st['dropped']} dropped: no candidate under {paths.data})")
    return 0


def _cmd_privacy_check(args) -> int:
    from .privacy_check import privacy_check

    return privacy_check(args.root, args.min_length)


def _add_check_model(sub) -> None:
    p = sub.add_parser("check-model", help="send one prompt to a configured model and print the answer and latency")
    p.add_argument("--model", help="model config name (conf/model/*.yaml); default: params.yaml's model")
    p.add_argument("--prompt", default="Write a Python function that validates an email address. Code only.")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--sample", type=int, default=0, help="sample index (part of the cache key)")
    p.set_defaults(func=_cmd_check_model)


def _add_params(sub) -> None:
    p = sub.add_parser("params", help="compose conf/ with Hydra overrides into params.yaml (what `dvc exp run` does)")
    p.add_argument("overrides", nargs="*", help="e.g. model=gpt-4o experiment=paper")
    p.add_argument("-o", "--output", default="params.yaml")
    p.set_defaults(func=_cmd_params)


def _add_plan(sub) -> None:
    p = sub.add_parser("plan", help="dry run: LLM calls, tokens, GitHub searches, time and cost of an experiment",
                       description="What the experiment will cost before it runs: LLM calls per stage, run and model, "
                       "prompt/completion tokens (refined by logs/llm_calls.jsonl), GitHub search requests and their "
                       "minimum wall time, and the cost at the models' prices. Without overrides: params.yaml (what "
                       "`dvc repro` runs); with overrides: that composition (what `dvc exp run -S ...` runs).")
    p.add_argument("overrides", nargs="*", help="e.g. experiment=paper model=gpt-4o (as for `testleak params`)")
    p.add_argument("-S", "--set", action="append", metavar="OVERRIDE", help="an override, as for `dvc exp run -S` (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_cmd_plan)


def _add_dvc_yaml(sub) -> None:
    p = sub.add_parser("dvc-yaml", help="write dvc.yaml from the stage declarations in testleak/graph.py")
    p.add_argument("--check", action="store_true", help="only check that dvc.yaml equals the generation (exit 1 if not)")
    p.set_defaults(func=_cmd_dvc_yaml)


def _positive(text: str) -> int:
    """An integer >= 1 (the range of ``server.n_parallel`` and ``server.n_threads``)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1")
    return n


def _add_serve(sub) -> None:
    p = sub.add_parser("serve", help="serve a local model on 127.0.0.1 (prints its OpenAI base URL) until interrupted")
    p.add_argument("--model", help="local model config name; default: params.yaml's model")
    p.add_argument("--parallel", type=_positive, help="slots (concurrent requests); default: the model's server.n_parallel")
    p.add_argument("--threads", type=_positive, help="CPU threads; default: the model's server.n_threads")
    p.set_defaults(func=_cmd_serve)


def _add_models(sub) -> None:
    p = sub.add_parser("models", help="list the model configs")
    p.set_defaults(func=_cmd_models)


def _add_review(sub) -> None:
    p = sub.add_parser("review", help="label in-window candidates in the terminal (masked; resumes)",
                       description="Label each in-window candidate yes / likely / no / unknown (shown masked; "
                       "r reveals). Labels are appended to the labels file at once: quit any time, the same "
                       "command resumes. --agreement prints Cohen's kappa of two reviewers instead.")
    p.add_argument("--reviewer", help="your reviewer name (labels are kept per reviewer)")
    p.add_argument("--run", action="append", help="run to review, repeatable (default: every run of experiment.runs)")
    p.add_argument("--labels", help="labels file (default: params review.labels_file, labels/labels.jsonl)")
    p.add_argument("--agreement", nargs="*", metavar="REVIEWER",
                   help="print Cohen's kappa of two reviewers (default: review.reviewers) as JSON and exit")
    p.add_argument("--root", help="project root (default: the current directory)")
    p.set_defaults(func=_cmd_review)


def _add_placeholders(sub) -> None:
    p = sub.add_parser("placeholders", help="add values to the placeholder list (as keyed hashes) or check one",
                       description="The placeholder list (testleak/resources/placeholders.yaml) holds its exact values "
                       "as keyed hashes, so that no raw value a model may echo is in git. `add` hashes and appends "
                       "values (comments and order kept); `check` says whether a value is rejected as a placeholder "
                       "(exact lists, email domains, test cards and the pattern rules; exit 0 yes, 1 no). Values are "
                       "printed masked.")
    psub = p.add_subparsers(dest="action", required=True)
    pa = psub.add_parser("add", help="hash and append values to a list")
    pa.add_argument("values", nargs="+", metavar="VALUE")
    pa.add_argument("--list", default="values", choices=("values", "email_domains", "test_cards"),
                    help="which exact list to extend (default: values)")
    pa.add_argument("--category", help="group of the values list, e.g. names, accounts, passwords (required with "
                    "--list values; a new name starts a group)")
    pc = psub.add_parser("check", help="is VALUE rejected as a placeholder? (exit 0 yes, 1 no)")
    pc.add_argument("values", nargs=1, metavar="VALUE")
    for q in (pa, pc):
        q.add_argument("--file", help="placeholder list file (default: testleak/resources/placeholders.yaml)")
        q.set_defaults(func=_cmd_placeholders)


def _add_labels(sub) -> None:
    p = sub.add_parser("labels", help="label files: migrate to the project's value key (keyed hashes)")
    lsub = p.add_subparsers(dest="action", required=True)
    pm = lsub.add_parser("migrate", help="rehash a label file with the project's value key (docs/PRIVACY.md)",
                         description="Rewrites every label as label/2 with the keyed hash of its candidate's raw value "
                         "(read from data/**/candidates.jsonl) under the project's value key ($TESTLEAK_VALUE_KEY, "
                         "else .cache/value-key). A label whose candidate is not under data/ cannot be rehashed: "
                         "nothing is written unless --drop-unavailable drops those labels.")
    pm.add_argument("--labels", help="label file (default: labels/labels.jsonl)")
    pm.add_argument("--root", help="project root (default: the current directory)")
    pm.add_argument("--drop-unavailable", action="store_true",
                    help="drop labels whose candidate (raw value) is no longer under data/")
    pm.set_defaults(func=_cmd_labels_migrate)


def _add_privacy_check(sub) -> None:
    p = sub.add_parser("privacy-check", help="find raw candidate values of data/ in git-tracked files (exit 1: a "
                       "value that is neither an echo nor a placeholder)",
                       description="Reads every candidate record under data/ and looks for each value (>= --min-length "
                       "characters) in the files `git ls-files` lists. Prints each hit masked with file, line, record "
                       "status, echo source and placeholder reason. Exit 0: every hit is an echo of a prompt or a "
                       "placeholder; 1: some other value is in a tracked file; 2: error.")
    p.add_argument("--root", default=".", help="project root: its data/ and git work tree (default: .)")
    p.add_argument("--min-length", type=int, default=6, help="shortest value searched, in characters (default: 6)")
    p.set_defaults(func=_cmd_privacy_check)


#: The subcommands in the order ``testleak --help`` lists them; each adds its parser to ``sub``.
_SUBCOMMANDS = (_add_check_model, _add_params, _add_plan, _add_dvc_yaml, _add_serve, _add_models, _add_review,
                _add_placeholders, _add_labels, _add_privacy_check)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand: each ``_add_*`` function declares one command's arguments
    and the ``_cmd_*`` function that runs it."""
    ap = argparse.ArgumentParser(prog="testleak", description="Audit privacy leaks of code LLMs via test generation "
                                 "(arXiv 2605.15248). Pipelines run with `dvc repro`; these commands help around it.")
    sub = ap.add_subparsers(dest="command", required=True)
    for add in _SUBCOMMANDS:
        add(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TestleakError as e:
        print(f"testleak: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"testleak {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
