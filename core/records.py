"""Memory records (SPEC §2) as the core hands them out: plain, immutable values."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Kind(StrEnum):
    CORE = "core"  # always in the prompt, never scored
    FACT = "fact"  # durable
    EVENT = "event"  # an episode; fades 4x faster than a fact


class Source(StrEnum):
    TOOL = "tool"
    OWNER = "owner"
    SLEEP = "sleep"
    DIALOGUE = "dialogue"
    INIT = "init"


class Actor(StrEnum):
    """Who makes a change: the model through a tool, the owner by hand, or sleep."""

    MODEL = "model"
    OWNER = "owner"
    SLEEP = "sleep"


GLOBAL_SCOPE = "global"


@dataclass(frozen=True)
class Record:
    id: int
    content: str
    kind: Kind
    importance: int
    private: bool
    pinned: bool
    scope: str
    created_at: float
    updated_at: float
    last_access_at: float | None
    access_count: int
    consolidated_at: float | None
    source: Source
    source_turn: str | None
    vector_model: str | None = None
    accesses: tuple[float, ...] = field(default=(), compare=False)

    @property
    def recalled_at(self) -> float:
        """The moment age is measured from: the last access, or creation if never accessed."""
        return self.last_access_at if self.last_access_at is not None else self.created_at


@dataclass(frozen=True)
class ArchivedRecord:
    record: Record
    archived_at: float
    archived_by: str
    why: str
    purge_at: float
