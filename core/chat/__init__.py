"""A chat turn (SPEC §1, §3, §5, §8), one module per part, in the order a turn runs:

- ``conversation`` — :class:`Conversation`: the turn from the owner's message to
  :class:`~core.chat.events.TurnDone`, regenerate, summaries, the owner's edits; its config
  (detail levels, §8.2);
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
"""
