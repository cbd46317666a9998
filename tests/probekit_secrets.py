"""The secrets the probes of issue 25 look for (tests/probekit.py): a temporary store whose
private records carry ``zq…`` markers and unique 7-9 digit numbers, and a journal night quoting
them everywhere (plans, whys, op details, a refused op's reason, a phase note, the summary)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

T0 = 1_780_000_000.0


# ---------------------------------------------------------------------------- secrets
@dataclass
class Secrets:
    """What must never reach an untrusted output: marker strings and private numbers."""

    markers: list[str] = field(default_factory=list)
    numbers: list[str] = field(default_factory=list)

    def leaks(self, text: str, typed: str = "") -> list[str]:
        found = [m for m in self.markers if m in text and m not in typed]
        for n in self.numbers:
            pat = re.compile(rf"(?<!\d){n}(?!\d)")
            if pat.search(text) and not pat.search(typed):
                found.append(n)
        return found

    def all_in(self, text: str) -> list[str]:
        """The secrets missing from ``text`` (a trusted output must show them all)."""
        return [s for s in self.markers + self.numbers if s not in text]


def seed_journal(mem, markers: list[str], numbers: list[str], ids: list[int]) -> None:
    """A night whose every free-text field quotes private markers and numbers: plans, whys, op
    details, a refused op's reason, a phase note and the run's summary."""
    from core.sleep import journal
    from core.sleep.journal import Journal, OpLog, PhaseLog

    quote = " ".join(markers)
    nums = " ".join(numbers)
    a, b = (ids + ids)[:2] if ids else (1, 2)
    j = mem.attach(Journal)
    with j.transaction() as conn:
        run = journal.start_run(conn, T0, False, "schedule", "scripted")
        journal.write_phase(
            conn,
            run,
            0,
            PhaseLog(
                "memory",
                "review",
                "applied",
                0.1,
                2,
                plans=[
                    {
                        "said": f"{quote} {nums}",
                        "ops": [{"op": "merge", "ids": [a, b], "content": f"{quote} {nums}"}],
                    }
                ],
                ops=[
                    OpLog(
                        "merge",
                        [a, b],
                        True,
                        f"the same as {quote} ({nums})",
                        detail={"content": f"{quote} {nums}"},
                    ),
                    OpLog(
                        "merge",
                        [b, a],
                        False,
                        f"both say {quote}",
                        refused_reason=f"the merged text loses the numbers {nums} of #{a} "
                        f"({quote})",
                        detail={"content": quote},
                    ),
                ],
                note=f"kept {quote} {nums} apart",
            ),
        )
        journal.write_phase(
            conn,
            run,
            1,
            PhaseLog(
                "memory",
                "forget",
                "planned",
                0.1,
                1,
                plans=[{"why": nums}],
                ops=[
                    OpLog(
                        "forget",
                        [a],
                        False,
                        f"faded {nums}",
                        refused_reason=f"private {quote}",
                        detail={"content": nums},
                    )
                ],
                note=f"left {nums}",
            ),
        )
        journal.finish_run(
            conn,
            run,
            T0 + 100,
            "done",
            {"memory": "done"},
            True,
            f"merged 1 ({quote} {nums}) — 3 model calls",
            "scripted",
        )


PRIVATE_TEXTS = (
    "Owner's passport number is {n}",
    "Owner's bank PIN hint is {n}",
    "Owner's diagnosis code is {n}",
)
PUBLIC_TEXTS = (
    "Owner plays the cello in the city orchestra",
    "Owner's cat is called Murka and likes fish",
    "Owner walks in the park on Sundays",
)


def build_secret_store(path: Path) -> Secrets:
    """A file store with private records (marker + number), public ones, a private core
    memory, an archived public record whose why quotes private content, and the night."""
    from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig
    from core.store.records import Actor

    sec = Secrets()
    ids = []
    with Memory.open(path, MemoryConfig(), ManualClock(T0)) as mem:
        for i, tpl in enumerate(PRIVATE_TEXTS):
            n, m = str(48_213_970 + 7919 * i), f"zq{i:02x}x{0xA1B2C3 + i:06x}"
            res = mem.save(
                f"{tpl.format(n=n)} {m}",
                OWNER_TRUSTED,
                private=True,
                importance=4,
                actor=Actor.OWNER,
            )
            ids.append(res.id)
            sec.markers.append(m)
            sec.numbers.append(n)
        core_n, core_m = "7316042", "zqffx00c0de"
        mem.save(
            f"Owner's safe code is {core_n} {core_m}",
            OWNER_TRUSTED,
            kind="core",
            private=True,
            actor=Actor.OWNER,
        )
        sec.markers.append(core_m)
        sec.numbers.append(core_n)
        for t in PUBLIC_TEXTS:
            mem.save(t, OWNER_TRUSTED, importance=4, actor=Actor.OWNER)
        old = mem.save("Owner used to walk in the old park", OWNER_TRUSTED, actor=Actor.OWNER)
        mem.forget(
            old.id,
            f"superseded; see {sec.markers[0]} {sec.numbers[0]}",
            OWNER_TRUSTED,
            actor=Actor.MODEL,
        )
        seed_journal(mem, sec.markers, sec.numbers, ids)
    return sec
