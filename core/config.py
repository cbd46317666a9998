"""Memory settings (SPEC §2–§5). The numbers are the SPEC's defaults; the owner changes them in
config (the TUI's config loader builds a :class:`MemoryConfig` from the ``[memory]`` table)."""

from __future__ import annotations

from dataclasses import dataclass, fields

DAY = 86_400.0


def _known(cls, data: dict, where: str):
    """``cls(**data)``; unknown keys are an error naming them."""
    unknown = sorted(set(data) - {f.name for f in fields(cls)})
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    return cls(**data)


@dataclass(frozen=True)
class MemoryConfig:
    max_chars: int = 500  # one record's content
    dedup_jaccard: float = 0.7  # stem-set Jaccard at which a save reinforces instead of adding
    half_life_days: float = 30.0  # facts; events fade 4x faster
    event_half_life_factor: float = 0.25
    top_k: int = 8
    public_top_k: int = 3  # other people's turns
    name_links: int = 2  # a turn's section adds this many records naming whom its best recalled
    name_links_from: int = 3  # … ones (that many of them) name, newest first
    # a record already recalled earlier in the live window is shown again for a question when it
    # is among the best this many of its recall (a small model reads only the nearest lines)
    repeat_best: int = 2
    recall_floor: float = 0.15  # relative to the best score of the same selection
    freshness_floor: float = 0.8  # what an old, never-used record keeps of its score (§4)
    # a question naming a time ("on 3 June", "в мае", "last week"): a record said then counts
    # as this much more relevant, relevance × (1 + boost) (core.timeframe); 0 turns it off
    timeframe_boost: float = 1.0
    # the best this many candidates of a recall are scored by their clauses too: a record that
    # says several things is as relevant as its best clause (core.recall.parts); 0 turns it off
    part_candidates: int = 48
    lexical_weight: float | None = None  # BM25's share of hybrid relevance; None: the embedder's
    prompt_budget: int = 8000  # characters of the memory section
    core_share: float = 0.6  # at most this share of the budget for core + pinned
    max_pinned: int = 20  # per scope
    archive_ttl_days: float = 30.0
    similar_on_save: int = 3  # how many similar records a save answer lists
    embedding_model: str | None = None  # None: lexical recall only
    background_cosine: float = 0.4  # default b when no calibration is stored for the model
    # how many updates and forgets the model may make in one turn (issue 15: an injected text
    # cannot make a turn archive or rewrite the whole memory); the owner's own edits are free
    model_changes_per_turn: int = 3

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
        if self.name_links < 0 or self.name_links_from < 0:
            problems.append("name_links and name_links_from must be >= 0")
        if self.repeat_best < 0:
            problems.append("repeat_best must be >= 0")
        if self.top_k < 1 or self.public_top_k < 0:
            problems.append("top_k must be >= 1 and public_top_k >= 0")
        if not 0 <= self.recall_floor < 1:
            problems.append("recall_floor must be in [0, 1)")
        if not 0 <= self.freshness_floor <= 1:
            problems.append("freshness_floor must be in [0, 1]")
        if not 0 <= self.part_candidates <= 10_000:
            problems.append("part_candidates must be in [0, 10000]")
        if not 0 <= self.timeframe_boost <= 10:
            problems.append("timeframe_boost must be in [0, 10]")
        if self.lexical_weight is not None and not 0 <= self.lexical_weight <= 1:
            problems.append("lexical_weight must be in [0, 1]")
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
        if self.model_changes_per_turn < 0:
            problems.append("model_changes_per_turn must be >= 0")
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
        return _known(cls, data, "memory config")


@dataclass(frozen=True)
class SleepConfig:
    """Sleep settings (SPEC §7), the ``[sleep]`` table. Times in seconds unless named in days.

    The planner's model chain is ``memory_model`` (``sleep.memory.model``) → ``smartest``
    (``llm.model.smartest``) → ``general`` (``llm.model.general``); see
    :func:`core.sleep.plan.resolve_planner`."""

    every: float = DAY  # one night per this many seconds
    idle_for: float = 900.0  # the conversation must have been quiet this long
    min_memories: int = 20  # a smaller corpus skips the memory stage
    # The archive's TTL is one setting, MemoryConfig.archive_ttl_days (the archive's purge date
    # and sleep's hygiene both read it). This copy of the SPEC's `sleep.archive_ttl` is read by
    # nothing in core; eva_runtime/config.py keeps the two equal until it moves the key for good.
    archive_ttl_days: float = 30.0
    cluster_jaccard: float = 0.5  # stem-set Jaccard that links two records
    cluster_cosine: float = 0.6  # calibrated cosine that links two records
    max_cluster: int = 8  # bigger components are cut at their weakest edges
    max_ops: int = 40  # applied ops per night
    max_forget: int = 10  # records forgotten (archived for good reason) per night
    keep_recent: float = 2.0  # days: younger records are neither forgotten nor rewritten
    dry_run: bool = False  # plan and journal, apply nothing (the mode for the first weeks)
    call_timeout: float = 300.0  # wall-clock limit of one planner call
    memory_model: str | None = None  # sleep.memory.model
    smartest: str | None = None  # llm.model.smartest
    general: str | None = None  # llm.model.general
    # model calls per night (the rest waits for the next night); with review = "decide" a call is
    # one short decision (measured ~74 for a first night over 130 labelled memories)
    max_calls: int = 150
    max_neighbours: int = 16  # semantic edges kept per record (strongest first)
    calibrate_chars: int = 12_000  # size of the compact corpus of the kinds/importance phase
    retry_after: float = 3600.0  # a failed night is retried after this long, not at once
    # how clusters are reviewed: "decide" — arithmetic proposes candidates and the model answers
    # small grammar-forced questions (issue 17); "plan" — one open-ended plan per cluster
    review: str = "decide"

    def __post_init__(self) -> None:
        problems = []
        if self.every <= 0:
            problems.append("every must be > 0 seconds")
        if self.idle_for < 0:
            problems.append("idle_for must be >= 0 seconds")
        if self.min_memories < 0:
            problems.append("min_memories must be >= 0")
        if self.archive_ttl_days < 0:
            problems.append("archive_ttl_days must be >= 0")
        if not 0 < self.cluster_jaccard <= 1:
            problems.append("cluster_jaccard must be in (0, 1]")
        if not 0 < self.cluster_cosine <= 1:
            problems.append("cluster_cosine must be in (0, 1]")
        if self.max_cluster < 2:
            problems.append("max_cluster must be >= 2")
        if self.max_ops < 0 or self.max_forget < 0:
            problems.append("max_ops and max_forget must be >= 0")
        if self.keep_recent < 0:
            problems.append("keep_recent must be >= 0 days")
        if not isinstance(self.dry_run, bool):
            problems.append("dry_run must be true or false")
        if self.call_timeout <= 0:
            problems.append("call_timeout must be > 0 seconds")
        for name in ("memory_model", "smartest", "general"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                problems.append(f"{name} must be a model name or unset")
        if self.max_calls < 0:
            problems.append("max_calls must be >= 0")
        if self.review not in ("decide", "plan"):
            problems.append("review must be 'decide' or 'plan'")
        if self.max_neighbours < 1:
            problems.append("max_neighbours must be >= 1")
        if self.calibrate_chars < 500:
            problems.append("calibrate_chars must be >= 500")
        if self.retry_after <= 0:
            problems.append("retry_after must be > 0 seconds")
        if problems:
            raise ValueError("sleep config: " + "; ".join(problems))

    @property
    def keep_recent_seconds(self) -> float:
        return self.keep_recent * DAY

    @property
    def model_chain(self) -> tuple[str, ...]:
        """The planner's model names, in order of preference (unset links skipped)."""
        return tuple(n for n in (self.memory_model, self.smartest, self.general) if n)

    @classmethod
    def from_mapping(cls, data: dict) -> SleepConfig:
        """Build from the ``[sleep]`` table; unknown keys are an error naming the key. The
        SPEC's ``archive_ttl`` (days) and a nested ``memory = {model = …}`` are accepted."""
        data = dict(data)
        if "archive_ttl" in data:
            data["archive_ttl_days"] = data.pop("archive_ttl")
        nested = data.pop("memory", None)
        if nested is not None:
            if not isinstance(nested, dict) or set(nested) - {"model"}:
                raise ValueError("sleep config: [sleep.memory] takes only 'model'")
            if "model" in nested:
                data["memory_model"] = nested["model"]
        return _known(cls, data, "sleep config")
