"""Memory settings (SPEC §2–§5). The numbers are the SPEC's defaults; the owner changes them in
config (the TUI's config loader builds a :class:`MemoryConfig` from the ``[memory]`` table)."""

from __future__ import annotations

from dataclasses import dataclass, fields

DAY = 86_400.0


@dataclass(frozen=True)
class MemoryConfig:
    max_chars: int = 500  # one record's content
    dedup_jaccard: float = 0.7  # stem-set Jaccard at which a save reinforces instead of adding
    half_life_days: float = 30.0  # facts; events fade 4x faster
    event_half_life_factor: float = 0.25
    top_k: int = 8
    public_top_k: int = 3  # other people's turns
    recall_floor: float = 0.15  # relative to the best score of the same selection
    prompt_budget: int = 8000  # characters of the memory section
    core_share: float = 0.6  # at most this share of the budget for core + pinned
    max_pinned: int = 20  # per scope
    archive_ttl_days: float = 30.0
    similar_on_save: int = 3  # how many similar records a save answer lists
    embedding_model: str | None = None  # None: lexical recall only
    background_cosine: float = 0.4  # default b when no calibration is stored for the model

    def __post_init__(self) -> None:
        problems = []
        if self.max_chars < 1:
            problems.append("max_chars must be >= 1")
        if not 0 < self.dedup_jaccard <= 1:
            problems.append("dedup_jaccard must be in (0, 1]")
        if self.half_life_days <= 0:
            problems.append("half_life_days must be > 0")
        if not 0 < self.event_half_life_factor <= 1:
            problems.append("event_half_life_factor must be in (0, 1]")
        if self.top_k < 1 or self.public_top_k < 0:
            problems.append("top_k must be >= 1 and public_top_k >= 0")
        if not 0 <= self.recall_floor < 1:
            problems.append("recall_floor must be in [0, 1)")
        if self.prompt_budget < 200:
            problems.append("prompt_budget must be >= 200 characters")
        if not 0 <= self.core_share <= 1:
            problems.append("core_share must be in [0, 1]")
        if self.max_pinned < 0:
            problems.append("max_pinned must be >= 0")
        if self.archive_ttl_days < 0:
            problems.append("archive_ttl_days must be >= 0")
        if not -1 <= self.background_cosine < 1:
            problems.append("background_cosine must be in [-1, 1)")
        if problems:
            raise ValueError("memory config: " + "; ".join(problems))

    @property
    def half_life_seconds(self) -> float:
        return self.half_life_days * DAY

    @property
    def archive_ttl_seconds(self) -> float:
        return self.archive_ttl_days * DAY

    @classmethod
    def from_mapping(cls, data: dict) -> MemoryConfig:
        """Build from a config table; unknown keys are an error naming the key."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"memory config: unknown key(s) {', '.join(unknown)}")
        return cls(**data)
