"""Errors of memory operations. Their messages are written for the model and the owner to read:
they name what was wrong and never quote a memory the caller may not see."""


class MemoryOpError(ValueError):
    """A bad argument or a refused operation; nothing was written."""

    def __init__(self, message: str, code: str = "bad_argument") -> None:
        super().__init__(message)
        self.code = code


class NotFound(MemoryOpError):
    def __init__(self, record_id: object) -> None:
        super().__init__(f"there is no memory #{record_id}", code="not_found")


class Refused(MemoryOpError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="refused")


class StoreError(RuntimeError):
    """The store cannot be used (newer schema, corrupt file, …)."""


CLIP = 80  # characters of a value an error message quotes at most (issue 25 item C5)


def clip(value: object, limit: int = CLIP) -> str:
    """``value`` as an error message quotes it: its repr, cut to ``limit`` characters with "…".
    A megabyte of bad input is never echoed whole, and a number too long for ``str`` (Python's
    4300-digit limit) is described instead of raising."""
    if isinstance(value, str) and len(value) > limit:
        value = value[: limit + 1]  # repr only what may be shown
    try:
        text = repr(value)
    except ValueError:  # int too long to convert to a string
        text = f"a {type(value).__name__} too long to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip_text(text: str, limit: int = 4 * CLIP) -> str:
    """A message (not a value) cut to ``limit`` characters with "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
