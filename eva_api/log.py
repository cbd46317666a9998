"""``eva serve``'s log: a private, rotated file that never holds memory content or the token."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path
from typing import Any

from core import ownership

LOG_FILE = "serve.log"
LOG_BYTES = 1024 * 1024  # rotated at 1 MB, three old files kept
LOG_BACKUPS = 3


class PrivateLogFile(logging.handlers.RotatingFileHandler):
    """A rotating log file created (and re-created at each rotation) with mode 0600: the data
    dir is the owner's."""

    def _open(self) -> Any:
        return ownership.open_private(self.baseFilename, "a", encoding=self.encoding or "utf-8")


class TypeOnlyFormatter(logging.Formatter):
    """Errors as their type name only, never a traceback: an exception's text or a frame's
    source may quote memory."""

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return f"({ei[0].__name__ if ei and ei[0] else 'error'}; traceback not logged)"

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
        return ""


def setup_logging(data_dir: Path, stderr: bool = True) -> list[logging.Handler]:
    """``eva serve``'s log: ``<data>/serve.log`` (0600, rotated at 1 MB, three kept) gets the
    access log — request id, method, path (never the query string), status, milliseconds — and
    errors, by type name only; uvicorn's own warnings too. Neither the token nor memory
    content nor a body is ever written. With ``stderr``, warnings and errors are also printed.
    Returns the handlers installed (again: they replace the earlier ones)."""
    ownership.private_dir(data_dir, claim=False)
    fmt = TypeOnlyFormatter("%(asctime)s %(levelname)s %(message)s")
    handler = PrivateLogFile(
        data_dir / LOG_FILE, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    handlers: list[logging.Handler] = [handler]
    if stderr:
        handlers.append(logging.StreamHandler())
        handlers[-1].setLevel(logging.WARNING)
    for h in handlers:
        h.setFormatter(fmt)
        h.set_name("eva-serve-log")
    for name, level in (("eva.serve", logging.INFO), ("uvicorn.error", logging.WARNING)):
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == "eva-serve-log"]:
            logger.removeHandler(old)
            old.close()
        for h in handlers:
            logger.addHandler(h)
        if logger.level == logging.NOTSET or logger.level > level:
            logger.setLevel(level)
    return handlers
