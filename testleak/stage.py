"""What every DVC stage entry point (stages/<name>.py) shares: the RUN argument, the error
threshold (:func:`check_errors`) and the exit path that turns library errors into one-line
messages."""

from __future__ import annotations

import sys
from typing import Callable, Iterable, Mapping, Sequence

from omegaconf import OmegaConf

from .config import load_params, run_spec, typed
from .errors import BudgetReached, ConfigError, StageFailedError, TestleakError


def run_argument(argv: Sequence[str], params: Mapping, stage: str, runs_key: str = "runs") -> str:
    """The single RUN argument of a per-run stage, checked against experiment.<runs_key>."""
    if len(argv) != 1:
        raise ConfigError(f"usage: python -m stages.{stage} RUN (a key of experiment.{runs_key} in params.yaml)")
    # membership only: a stage that uses nothing of its run's entry must not depend on it
    # (dvc.yaml's foreach already guarantees the run exists); run_spec gives the one message
    if argv[0] not in (params["experiment"].get(runs_key) or {}):
        run_spec(params, argv[0], runs_key)
    return argv[0]


def load_stage_params() -> dict:
    """The composed params a stage reads (params.yaml), as a plain dict."""
    return OmegaConf.to_container(load_params(), resolve=True)


def stage_params(argv: Sequence[str], stage: str, runs_key: str = "runs") -> tuple[dict, str]:
    """The composed params (params.yaml, plain dict) and the checked RUN argument of a per-run stage."""
    params = load_stage_params()
    return params, run_argument(argv, params, stage, runs_key)


def describe_endpoint(cfg: Mapping | str | None) -> str:
    """Where a stage's calls went, for messages, with URL credentials masked: a model
    config (local server or base URL), a verifier config (GitHub API or local index), or a
    string."""
    import os

    from .net.urls import mask_url, mask_urls_in_text

    if cfg is None:
        return "(no endpoint)"
    if isinstance(cfg, str):
        return mask_urls_in_text(cfg)
    if "backend" in cfg:  # verifier
        if cfg.get("backend") == "github":
            return f"GitHub code search {mask_url(str((cfg.get('github') or {}).get('api_url')))}"
        return "the local corpus index (data/index/corpus.sqlite)"
    if cfg.get("provider") == "local":
        return f"the embedded local server of model {cfg.get('name')}"
    env = cfg.get("base_url_env")
    url = os.environ.get(env) if env and os.environ.get(env) else cfg.get("base_url")
    return f"{mask_url(str(url))} (model {cfg.get('name')})"


#: The end of the line of a stage that failed after writing its outputs.
NOT_FINAL = ("The outputs are written but not final: fix the endpoint and rerun (dvc repro); successful calls are "
             "cached and not sent again")


def check_errors(stage: str, records: Iterable[Mapping], kind: str, params: Mapping,
                 endpoint: Mapping | str | None = None) -> dict:
    """Fail a stage whose share of failed LLM / search calls exceeds ``max_error_share``.

    Call it after the stage has written its outputs (they stay for inspection; DVC does not
    record a failed stage, so `dvc repro` runs it again, and the gateway cache answers every
    call that succeeded, so only the failed ones are sent again). ``records`` are the stage's
    output records of ``kind`` (see :func:`testleak.records.call_errors`). Raises
    :class:`StageFailedError` naming the count, the first error and the endpoint (URL
    credentials masked); returns ``{"calls", "errors"}`` otherwise.
    """
    from .net.urls import mask_url, mask_urls_in_text
    from .records import call_errors

    calls = errors = 0
    first = None
    for r in records:
        n, errs = call_errors(kind, r)
        calls += max(n, len(errs))
        errors += len(errs)
        first = first or (errs[0] if errs else None)
    limit = typed(params, "max_error_share")
    if errors and errors / max(1, calls) > limit:
        raise StageFailedError(
            f"{stage}: {errors} of {calls} calls failed ({errors / max(1, calls):.0%}, above max_error_share={limit:g}); "
            f"first error: {mask_urls_in_text(first)[:200]}; endpoint: {describe_endpoint(endpoint)}. {NOT_FINAL}")
    return {"calls": calls, "errors": errors}


def check_gateways(stage: str, *gateways, written: str = "") -> None:
    """Stop a stage whose gateway stopped sending: call it after the stage has written its
    outputs. A spending cap (:mod:`testleak.llm.budget`; stats marked ``partial``) raises
    :class:`BudgetReached` (exit 3, so DVC does not record the partial outputs as final); an
    endpoint that failed too many calls in a row (the gateway's circuit breaker,
    ``limits.max_consecutive_failures``) raises :class:`StageFailedError`. One line each."""
    for gw in gateways:
        m = getattr(gw, "meter", None)
        if m is not None and m.reached:
            raise BudgetReached(
                f"{stage}: {m.reached}; {m.refused} calls not sent, outputs written as partial{written}. Raise the "
                f"cap (dvc exp run -S budget.usd=... / budget.completion_tokens=...) and rerun: answered calls "
                f"come from the cache")
        breaker = getattr(gw, "breaker", None)
        if breaker is not None and breaker.reason:
            raise StageFailedError(
                f"{stage}: stopped early: {breaker.reason}; {gw.stats.get('not_sent_breaker', 0)} calls not sent. "
                f"{NOT_FINAL}")


def _interrupt_on_sigterm() -> None:
    """Turn SIGTERM (``kill``, a CI timeout) into the KeyboardInterrupt of Ctrl-C, so cleanup code
    (``finally``: temporary files of atomic writes) runs and the stage ends with one line."""
    import signal

    def stop(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    try:
        signal.signal(signal.SIGTERM, stop)
    except ValueError:      # not the main thread (a stage run inside another program)
        pass


def interrupted_line(what: str, exc: BaseException) -> str:
    """The one line for a program stopped by Ctrl-C or SIGTERM."""
    how = str(exc) or "SIGINT"
    return (f"error: {what} interrupted ({how}): outputs not written; every answered LLM and search call is "
            f"cached: rerun (dvc repro) to go on")


def entry(main: Callable[[list[str]], int | None]) -> None:
    """Run a stage's ``main(argv)`` as a program: exit 1 when too many calls failed
    (:func:`check_errors`) or its endpoint was given up, 3 when a spending cap stopped it
    (:func:`check_gateways`), 2 with the
    message on any other TestleakError, 130 with one line on Ctrl-C or SIGTERM."""
    from pathlib import Path

    _interrupt_on_sigterm()
    try:
        code = main(sys.argv[1:])
    except StageFailedError as e:
        print(f"error: {e}", file=sys.stderr)
        code = getattr(e, "exit_code", 1)
    except TestleakError as e:
        print(f"error: {e}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt as e:
        print(interrupted_line(f"stage {Path(sys.argv[0]).stem}", e), file=sys.stderr)
        code = 130
    sys.exit(code or 0)
