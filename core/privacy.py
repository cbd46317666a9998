"""Turns, surfaces and audiences (SPEC §1): who may see and change which memory.

Access is computed from the **audience**, not from the speaker: in a group the owner asks but
everybody reads the answer. Private memories exist only for owner turns on a trusted surface
whose audience is the owner alone; everywhere else they are absent from every output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class Speaker(StrEnum):
    OWNER = "owner"
    OTHER = "other"


class Surface(StrEnum):
    TRUSTED = "trusted"  # the TUI, the owner's own phone app, the owner's private DM with Eva
    UNTRUSTED = "untrusted"


class Audience(StrEnum):
    OWNER_ONLY = "owner"  # only the owner reads the answer
    GROUP = "group"  # a group or the public reads it


WITHHELD_FOOTNOTE = (
    "Private memories are withheld in this conversation because it is not the owner's private "
    "trusted channel. Missing details may exist: do not invent them; say you can't go into "
    "private matters here."
)


@dataclass(frozen=True)
class TurnContext:
    speaker: Speaker = Speaker.OWNER
    surface: Surface = Surface.TRUSTED
    audience: Audience = Audience.OWNER_ONLY
    persona: str | None = None  # the persona scope this turn reads besides global
    turn_id: str | None = None  # recorded on every memory write this turn makes

    def __post_init__(self) -> None:
        # Accept plain strings from configs and API clients, but reject anything unknown.
        object.__setattr__(self, "speaker", Speaker(self.speaker))
        object.__setattr__(self, "surface", Surface(self.surface))
        object.__setattr__(self, "audience", Audience(self.audience))

    @property
    def is_owner(self) -> bool:
        return self.speaker is Speaker.OWNER

    @property
    def sees_private(self) -> bool:
        """Private memory is visible only to the owner alone on a trusted surface."""
        return (
            self.speaker is Speaker.OWNER
            and self.surface is Surface.TRUSTED
            and self.audience is Audience.OWNER_ONLY
        )

    @property
    def can_mutate(self) -> bool:
        """memory_save / update / forget / consolidate and the writing rule: owner turns only."""
        return self.is_owner

    @property
    def can_list(self) -> bool:
        """memory_list is a dump, and a dump carries private entries: private-visible turns only."""
        return self.sees_private

    @property
    def gets_withheld_footnote(self) -> bool:
        """An owner turn that cannot see private memory is told so, so the model does not read
        the gap as ignorance. Always given in such turns (not only when a private record
        matched), so the footnote itself says nothing about what is stored."""
        return self.is_owner and not self.sees_private

    @property
    def public_cut(self) -> bool:
        """Other people's turns get the recalled selection cut to ``memory.public_top_k``."""
        return not self.is_owner

    def scopes(self) -> tuple[str, ...]:
        from core.store.records import GLOBAL_SCOPE

        return (GLOBAL_SCOPE,) if not self.persona else (GLOBAL_SCOPE, self.persona)

    def with_turn(self, turn_id: str | None) -> TurnContext:
        return replace(self, turn_id=turn_id)


# The TUI is always owner / trusted / owner-only.
OWNER_TRUSTED = TurnContext()
# The owner writing from an untrusted place (e.g. a bridge to a messenger).
OWNER_UNTRUSTED = TurnContext(surface=Surface.UNTRUSTED)
# The owner asking in a group: everybody reads the answer.
OWNER_IN_GROUP = TurnContext(surface=Surface.UNTRUSTED, audience=Audience.GROUP)
# Somebody else in a public/group conversation.
PUBLIC = TurnContext(speaker=Speaker.OTHER, surface=Surface.UNTRUSTED, audience=Audience.GROUP)


class AccessDenied(PermissionError):
    """An operation this turn context may not perform (its message is safe to show the model)."""
