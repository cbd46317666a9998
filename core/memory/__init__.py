"""Memory (SPEC §1–§6, §8.11, §11): the operations on the owner's memories, for the model's tools
and the owner's screens alike. It stands on recall and the store; nothing here imports sleep or
chat.

==================  =================================================================
``facade``          :class:`Memory`, the public API every layer above uses
``owner_ops``       under it: the owner's pin, restore, archive and scopes
``engine``          the engine room: the store, the recall index, transactions, refresh
``checks``          who may change what in a turn, what a turn may see
``validation``      the arguments of every operation, checked one way
``bulk``            pinned saves, imports, export, clear, re-embedding many records
``reminders``       what is coming up, the owner's answer to a reminder
``reinforcement``   a search's accesses, written with the next transaction
``coordination``    several processes on one store
``prompt_section``  the memory section of the prompt
``tools``           the memory tools the model calls, and their one dispatcher
``portability``     export, import and backup files
==================  =================================================================
"""
