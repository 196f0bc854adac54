"""Exceptions. Every error a user can cause derives from :class:`GearagError`.

The CLI turns a :class:`GearagError` into a one-line message and exit code 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class GearagError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""


class DataError(GearagError):
    """A corpus or question file is malformed; the message names the file and the record."""


class IndexFormatError(GearagError):
    """An index directory is missing, incomplete, corrupt or from an unsupported format version."""


class ConfigError(GearagError):
    """An option or configuration value is invalid."""


class LLMError(GearagError):
    """An LLM endpoint failed for good (after retries), or is not configured."""


class LLMTimeoutError(LLMError):
    """An LLM call that timed out on every attempt it was allowed (at temperature 0, twice: the same prompt
    would time out again). With fallbacks on, the offline engine plays that call (:mod:`gearag.llm.fallback`)."""


class OutputError(GearagError):
    """An output path cannot be used: a special file, a directory, an input file, or not writable."""


class BusyError(GearagError):
    """Another gearag process holds the lock on the index being built."""


class ExecutorError(GearagError):
    """A batch of a distributed build (Ray) failed for good, after its retries; names its rows."""
