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
