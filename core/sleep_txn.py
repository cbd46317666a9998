"""One sleep phase applied as one transaction (SPEC §7, §11), with one savepoint per op.

:meth:`core.memory.Memory.sleep_transaction` opens the transaction and hands out a
:class:`SleepTxn`; sleep wraps every op of the phase in ``with tx.op():``. An op that is refused
(or fails) rolls back to its savepoint and takes nothing of itself into the store, while the ops
before and after it stay in the phase; the phase commits as a whole or not at all, with its
journal rows written on the same connection. The in-memory indexes of the touched records are
brought in line with the store only after the commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class SleepTxn:
    conn: sqlite3.Connection
    now: float
    turn_id: str  # recorded on every change the phase makes ("sleep:<run id>")
    touched: set[int] = field(default_factory=set)
    _depth: int = 0

    @contextmanager
    def op(self) -> Iterator[SleepTxn]:
        """A savepoint around one op: an exception rolls back this op only, then propagates."""
        self._depth += 1
        name = f"sleep_op_{self._depth}"
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield self
        except BaseException:
            self.conn.execute(f"ROLLBACK TO {name}")
            self.conn.execute(f"RELEASE {name}")
            raise
        else:
            self.conn.execute(f"RELEASE {name}")
        finally:
            self._depth -= 1
