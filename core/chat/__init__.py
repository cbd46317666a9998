"""A chat turn (SPEC §1, §3, §5, §8), one module per part, in the order a turn runs:

- ``conversation`` — :class:`Conversation`: the turn from the owner's message to
  :class:`~core.chat.events.TurnDone`, regenerate, summaries;
- ``session`` and ``conversation_config`` — what :class:`Conversation` extends (its chats,
  messages, live window, the owner's edits) and its config (detail levels, §8.2);
- ``switching`` — the current chat and where its live window starts (§8.9);
- ``prompt`` — the prompt, built from its inputs alone (layout, §5, §8.1–§8.3, §8.10);
- ``reminder`` — the day's reminder in the first turn of the day (§8.11);
- ``turn`` — one turn as a value: its prompt, answer, memory ops and figures;
- ``reply`` — model calls until the reply stands (tool rounds, one retry);
- ``filters`` — the stream filters a reply runs through: markup, script, preamble (§3.1);
- ``judge`` — the one judge of a reply: its verdict (ok, empty, echo, repeat, wrong language,
  refusal, invented — never invent, §8.10);
- ``retry`` — what to do about a verdict: ask again with which note, or what stands;
- ``events`` — what a turn yields to a surface.

Around the turn, the conversation's own records and steps:

- ``memory_writer`` — the structured memory step over the owner's messages (§3.1), with
  ``owner_message`` (what a message says of the owner), ``step_schema`` (its grammar),
  ``supersession`` (does a message change a saved memory) and ``window_saver`` (what leaves the
  window is read before it goes, §8.9);
- ``transcript``, ``chats``, ``summaries`` — the tables of messages, chats and rolling
  summaries; ``summarizer`` and ``summary_fidelity`` write the summaries (§8.3);
- ``personas`` (§8.6–§8.8), ``drafts`` (save from dialogue, §8.5), ``upcoming`` (§8.11);
- ``search``, ``export``, ``imports`` — the owner's chats searched, exported, imported.

The layers of the core (an import-linter contract): chat → sleep → memory → recall → store.
"""
