"""Reminders (SPEC §8.11, issue 29): the day a memory points to, and what is coming up.

- :mod:`core.reminders.due_day` — :func:`~core.reminders.due_day.read`, the day a memory's
  words point to, read against when they were said; what a correction ("перенесли") says;
- :mod:`core.reminders.schedule` — :func:`~core.reminders.schedule.coming_up`, what is due
  for a day; the next occurrence of a recurrence; what the owner's done / snooze / dismiss
  writes.

Pure functions over dates and rows: the columns live on ``memories`` (schema v8: ``due_on``,
``due_every``, ``due_read``, ``remind_state``, ``remind_after``), written by
:mod:`core.store.records` in the transaction that writes the words.
"""
