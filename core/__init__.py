"""Eva's memory engine. Pure Python: no UI and no concrete model is imported here.

The public API is :class:`core.memory.facade.Memory`; the turn context of SPEC §1 is
:class:`core.privacy.TurnContext`."""

from core.clock import ManualClock, SystemClock
from core.config import MemoryConfig
from core.embedding import Embedder
from core.errors import MemoryOpError, NotFound, Refused
from core.memory.facade import Memory, RecallStatus, SaveResult, SearchHit, Similar
from core.memory.prompt_section import PromptSection
from core.privacy import (
    OWNER_IN_GROUP,
    OWNER_TRUSTED,
    OWNER_UNTRUSTED,
    PUBLIC,
    AccessDenied,
    Audience,
    Speaker,
    Surface,
    TurnContext,
)
from core.store.records import Actor, ArchivedRecord, Kind, Record, Source

__version__ = "0.1.0"

__all__ = [
    "OWNER_IN_GROUP",
    "OWNER_TRUSTED",
    "OWNER_UNTRUSTED",
    "PUBLIC",
    "AccessDenied",
    "Actor",
    "ArchivedRecord",
    "Audience",
    "Embedder",
    "Kind",
    "ManualClock",
    "Memory",
    "MemoryConfig",
    "MemoryOpError",
    "NotFound",
    "PromptSection",
    "RecallStatus",
    "Record",
    "Refused",
    "SaveResult",
    "SearchHit",
    "Similar",
    "Source",
    "Speaker",
    "Surface",
    "SystemClock",
    "TurnContext",
    "__version__",
]
