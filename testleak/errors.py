"""The project's exceptions. Messages say what to do next; the CLI prints them."""


class TestleakError(Exception):
    """Base class of every error testleak raises on purpose."""


class ConfigError(TestleakError):
    """A configuration value is missing, unknown or inconsistent."""


class ModelNotInstalledError(TestleakError):
    """The packaged model weights are not installed."""


class LLMError(TestleakError):
    """A request to an LLM failed for good (after retries, or not retryable)."""

    def __init__(self, message: str, status: int | None = None, kind: str = "error"):
        super().__init__(message)
        self.status = status
        self.kind = kind


class AuthError(LLMError):
    """401/403 from a model endpoint: a key is missing or wrong."""


class StageFailedError(TestleakError):
    """A stage wrote its outputs but too many of its calls failed (``max_error_share``)."""


class BudgetReached(StageFailedError):
    """A stage stopped at the experiment's spending cap (``budget``): its outputs are written and
    marked partial, not final. Exit code 3 (DVC records nothing; rerun with a raised cap)."""

    exit_code = 3


class DataError(TestleakError):
    """An input artifact is missing or malformed."""
