"""The store (SPEC §2, §11): the SQLite file and the rows of the memory tables — the lowest
layer of the core; recall, memory, sleep and chat all read records through it.

=================  ==================================================================
``storage``        the file: WAL, migrations frozen per version, one transaction per change
``records``        the memory tables' rows ↔ :class:`Record` (fetch, listing, accesses,
                   changes, the archive move and purge, the pinned-cap check)
``record_export``  the rows of an export, and of an import back in
``reminder_rows``  the day a record points to, the owner's answer to its reminder
``accesses``       a record's accesses: one reinforcement, a logged batch, one taken back
``scopes``         records by scope: counts, ids, the move to another scope
=================  ==================================================================

Only table owners open the store (an import-linter contract); the other tables' owners are
``core.chat.transcript``, ``core.chat.chats``, ``core.chat.summaries`` and
``core.sleep.journal``.
"""
