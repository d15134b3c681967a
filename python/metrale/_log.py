"""The library's log lines (guard verdicts once per slot, bundle and cache notes, build
failures) through Python's ``logging``, as the logger "metrale", instead of raw stderr.

Configure it as any other logger (``logging.basicConfig(level=logging.INFO)`` shows the
info lines; without configuration Python prints warnings and errors only). The library
filters first: METRALE_LOG_LEVEL (default info) decides which lines reach Python at all.
Invariant: installed once, when the package is imported (before any runtime opens), and
removed at interpreter exit, so a background thread never calls into a finalising interpreter.
"""

from __future__ import annotations

import atexit
import logging

from . import _native

logger = logging.getLogger("metrale")

# The C ABI's levels (metrale_log_level: trace .. critical) as logging's.
_LEVELS = (logging.DEBUG - 5, logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)


def _emit(level: int, line: str) -> None:
    logger.log(_LEVELS[level] if 0 <= level < len(_LEVELS) else logging.INFO, "%s", line)


def install() -> None:
    """Routes the library's log lines to the "metrale" logger from now until exit."""
    _native.set_log_handler(_emit)
    atexit.register(_native.set_log_handler, None)
