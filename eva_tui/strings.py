"""Every word the TUI shows the owner, in one place (issue 16), so that a translated UI can
follow: a Russian ``strings_ru`` would give the same names. Screens and widgets import from
here; plain constants for fixed text, small functions for text with values in it. The one
exception is a night's detail, which ``eva sleep`` prints as well: its words are in
``eva_runtime/night_text.py`` (the command imports no UI).

The words are the owner's, not the SPEC's: no section numbers, no internal names."""

from __future__ import annotations

# ---------------------------------------------------------------------------- navigation
# (mode, short title for the nav bar, long title for the palette)
NAV_TITLES = {
    "chat": ("Chat", "Chat"),
    "memories": ("Memories", "Memories"),
    "archive": ("Archive", "Archive"),
    "journal": ("Journal", "Sleep journal"),
    "preview": ("Preview", "Prompt preview"),
    "settings": ("Settings", "Settings"),
}


def go_to(title: str) -> str:
    return f"Go to {title}"


def go_to_help(title: str, key: str) -> str:
    return f"Switch to the {title.lower()} screen ({key})"


# ---------------------------------------------------------------------------- app-wide commands
SLEEP_NOW = "Sleep now"
SLEEP_NOW_HELP = (
    "Tidy the memory now: merge repeats, fix contradictions, let faded trivia go, "
    "purge the old archive"
)
DRY_RUN_NOW = "Dry run now"
DRY_RUN_HELP = "Plan a night and write it in the journal without changing any memory"
WAKE = "Wake Eva"
WAKE_HELP = "Stop sleeping; messages that waited are sent"
KEYS = "Keys and help"
KEYS_HELP = "Every key of this screen and the keys that work everywhere (?)"
HELP_KEY_DESC = "Help"
SLEEPING_ALREADY = "Eva is already sleeping."
AWAKE = "Eva is awake."


def sleep_finished(dry_run: bool, summary: str) -> str:
    return f"{'Dry run' if dry_run else 'Sleep'} finished: {summary}"


def sleep_failed(error: str) -> str:
    return f"Sleep failed: {error}"


def notable_nights(n: int, key: str) -> str:
    return f"{n} notable night{'s' if n > 1 else ''} in the sleep journal ({key})."


NOTABLE_TITLE = "While you were away"


def copied(what: str) -> str:
    return f"Copied {what} to the clipboard."


def worker_failed(name: str, msg: str) -> str:
    return f"{name} failed: {msg}"


# ---------------------------------------------------------------------------- the memory store
def memory_unavailable(error: str, data_dir: object) -> str:
    """The one message for a store that cannot open (issue 16): what failed, how to fix it."""
    return (
        f"The memory could not be opened: {error}. "
        f"Check that {data_dir} exists and is writable (or start Eva with --data DIR); "
        "`eva doctor` checks the store."
    )


MEMORY_OPENING = "Opening the memory…"
SLEEP_NOT_IN_BUILD = "Sleep is not available in this build."

# ---------------------------------------------------------------------------- help screen
HELP_TITLE = "Keys"


def help_screen_title(screen: str) -> str:
    return f"Keys — {screen}"


HELP_THIS_SCREEN = "On this screen"
HELP_EVERYWHERE = "Everywhere"
HELP_PALETTE = "Command palette: every action, and memories by their words"
HELP_QUIT = "Quit"
INTERRUPT_DESC = "Stop the reply, or quit"
QUIT_TITLE = "Quit Eva?"
THE_SELECTION = "the selection"


def quit_again(interrupt: str, quit_key: str) -> str:
    """Ctrl+C with nothing running (issue 28 item 3): plain words, no markup."""
    return f"Press {interrupt} again to quit ({quit_key} quits at once)."


def unknown_theme(name: str) -> str:
    return f"The theme {name!r} ([ui] theme) is not one Eva knows; the default is used."


def theme_not_saved(error: str) -> str:
    return f"The theme is in use but could not be saved: {error}"


HELP_CLOSE = "Esc or ? closes this help."

# ---------------------------------------------------------------------------- chat
GREETING = """\
**Hello, I'm Eva.** I live here in your terminal, and I remember what matters: I decide what is \
worth keeping, recall it when it is relevant, keep your private things private, and once a day \
I sleep to tidy my memory.

Everything stays on this machine. Press **F2** to see what I remember, **Ctrl+P** for every \
command and the keys of each screen."""


def welcome(data_dir: object) -> str:
    """The first run, on an empty store (issue 16): what Eva is, how private works, where the
    data lives."""
    return f"""\
**Hello, I'm Eva.** I live here in your terminal and I remember what matters about you: \
as we talk I decide what is worth keeping, recall it when it is relevant, and once a day, \
when you are quiet, I sleep to tidy my memory.

**Private things stay private.** Tell me something is private (or mark a memory private with \
**v** on the Memories screen, F2) and only you will ever see it: when I speak for you to \
others, private memories are left out. The Prompt preview (F5) shows exactly what I would \
carry in each case.

**Your data stays here**, on this machine, in `{data_dir}`. Nothing is sent anywhere. \
Forgotten memories wait in the archive (F3) before they are purged.

Say hello to begin. **?** (in the chat: in the empty box) or **F1** shows the keys of a \
screen; **Ctrl+P** finds every command."""


WELCOME_ACTIONS_LABEL = "Start by telling Eva about yourself:"
PROMPT_PLACEHOLDER = "Message Eva…  (Enter sends · Ctrl+J new line · ↑ earlier · Esc stops)"
PROMPT_OFF_PLACEHOLDER = "Chat is off — what you type stays here until a chat model is available"


def prompt_loading(name: str) -> str:
    return f"Loading {name}…  type now, your message is sent when the model is ready"


def chat_off(detail: str, config_path: object) -> str:
    """The chat with no model (issue 16): why, and how to fix it."""
    return (
        f"**Chat is off:** {detail}.\n\n"
        f"To turn it on, set a chat model under `[llm.model]` `general` in `{config_path}` "
        "(a packaged model such as `qwen2.5-coder-1.5b`, or the path of a `.gguf` file), or in "
        "Settings (F6), then restart Eva. `eva doctor` checks the models and says what is "
        "missing.\n\n"
        "Memories (F2), the archive (F3), the sleep journal (F4) and the prompt preview (F5) "
        "work without a model."
    )


def composer_count(n: int, limit: int) -> str:
    """The length of a long message against the limit, under the box."""
    return f"{n} / {limit} characters"


def too_long(n: int, limit: int) -> str:
    return (
        f"This message is {n} characters; one message holds at most {limit} "
        "([chat] max_message_chars). Nothing was sent: your text is still in the box, "
        "shorten it or send it in parts."
    )


def chat_off_kept(detail: str) -> str:
    return f"Chat is off ({detail}); your text stays in the box. Settings (F6) or `eva doctor`."


# the inline notes under an answer: what the memory step kept, updated or forgot, in the
# memory's own words (issue 28 item 2)
NOTE_VERBS = {
    "created": "Kept",
    "reinforced": "Already kept",
    "updated": "Updated",
    "forgotten": "Forgot",
}
NOTE_PRIVATE = "private"
NOTE_WORDS = 60  # characters of the memory shown in a note (the note opens it whole)


def note_kept(status: str, words: object, rid: object) -> str:
    verb = NOTE_VERBS.get(status, status.capitalize())
    if not words:  # a note stored before the words were kept with it
        return f"{verb}: memory #{rid}"
    text = " ".join(str(words).split())
    if len(text) > NOTE_WORDS:
        text = text[: NOTE_WORDS - 1].rstrip() + "…"
    return f"{verb}: “{text}”"


QUEUED = "queued"
THINKING = "Eva is thinking…"
QUEUED_UNTIL_AWAKE = "queued until Eva wakes"
NOT_SENT = "not sent"
REMEMBERING = "remembering…"
NO_ANSWER = "*(no answer)*"  # an answer with no text (held back, or none at all)
STOPPED = "stopped"
BTN_WAKE = "Wake"


def sleeping_banner(queued: int) -> str:
    msg = "Eva is sleeping…"
    if queued:
        msg += f" {queued} message{'s' if queued != 1 else ''} will be sent when she wakes."
    return msg


STILL_ANSWERING = "Eva is still answering; Esc stops her first."
ANSWER_PREVIOUS = "Earlier answer"
ANSWER_NEXT = "Later answer"
MESSAGE_NOT_STORED = "This message is not stored yet; try again once Eva has answered."
NO_OTHER_ANSWER = "This is the only answer to that message; Ctrl+R writes another."
FIRST_ANSWER = "This is the first answer; → shows the later ones."
LAST_ANSWER = "This is the latest answer; ← shows the earlier ones."
EDITED = "edited"
MESSAGE_EDITED = "Message edited; the summaries that covered it will be redone."
MESSAGE_DELETED = "Message deleted (kept in the chat archive)."
DELETE_MESSAGE_TITLE = "Delete this message?"
NOTHING_TO_EDIT = "There is no message to edit yet."
MESSAGE_EMPTY = "A message cannot be empty; Delete (d) removes it instead."


def alternative(index: int, count: int) -> str:
    """Which answer of how many (issue 28 item 5): "‹ 2/3 ›", flipped with ← and →."""
    return f"‹ {index}/{count} ›"


def delete_message_text(text: str) -> str:
    clipped = text if len(text) <= 300 else text[:299] + "…"
    return (
        f"{clipped}\n\nIt leaves the chat and what Eva reads of it; the summaries that "
        "covered it are redone. It stays in the chat archive."
    )


def edit_message_title(mine: bool) -> str:
    return "Edit your message" if mine else "Edit Eva's answer"


def chosen_answer(index: int, count: int, kept: str) -> str:
    out = f"Answer {index} of {count} is now the one Eva remembers the chat by."
    if kept:
        out += f" Kept memory {kept} as it is: it changed since that answer."
    return out


NOTHING_TO_REGENERATE = "There is nothing to regenerate yet."
NO_ANSWER_TO_COPY = "There is no answer to copy yet."
THE_ANSWER = "the answer"
CMD_STOP = ("Stop the answer", "Esc: stop Eva mid-answer")
CMD_REGENERATE = ("Regenerate", "Answer the last message again (undoes what that answer saved)")
CMD_COPY_ANSWER = ("Copy the last answer", "To the clipboard")
CMD_NEW_CHAT = ("New chat", "Start a new chat (Ctrl+N)")
CMD_CHATS = ("Chats", "Switch, rename, delete or clear chats (Ctrl+O)")
CMD_SUMMARY = ("Conversation summary", "View, edit or rebuild this chat's summaries (Ctrl+T)")
CMD_SEARCH_CHATS = (
    "Search chats…",
    "Find words in every chat; Enter opens the chat at the message (Ctrl+G)",
)
CMD_EDIT_MINE = ("Edit my last message", "Or Shift+Tab to any message, then e (d deletes)")
CMD_EDIT_ANSWER = (
    "Edit Eva's last answer",
    "Or Shift+Tab to any answer, then e (← → flip through regenerated answers)",
)


# ---------------------------------------------------------------------------- record dialogs
def memory_title(rid: int, archived: bool = False) -> str:
    return f"Memory #{rid}" + (" (archived)" if archived else "")


YES, NO = "yes", "no"
YES_KEY, NO_KEY = "Yes", "No"
RECORD_FIELDS = {
    "kind": "kind",
    "importance": "importance",
    "private": "private",
    "pinned": "pinned",
    "scope": "scope",
    "created": "created",
    "updated": "updated",
    "recalled": "last recalled",
    "reinforced": "reinforced",
    "source": "source",
    "vector": "vector",
    "by": "forgotten by",
    "why": "why",
    "when": "when",
    "purge": "purged",
    "due": "due",
}
BTN_EDIT = "Edit"
BTN_DELETE = "Delete"
BTN_MARK_PRIVATE = "Mark private"
BTN_UNMARK_PRIVATE = "Make public"
BTN_PIN = "Pin"
BTN_UNPIN = "Unpin"
BTN_FORGET = "Forget"
BTN_RESTORE = "Restore"
BTN_COPY = "Copy"
BTN_CLOSE = "Close"
BTN_SAVE = "Save"
BTN_CANCEL = "Cancel"
BTN_REVERT = "Revert to saved"
BTN_DISCARD = "Discard"
BTN_KEEP_EDITING = "Keep editing"
BTN_MAKE_PUBLIC = "Make public"
BTN_KEEP_PRIVATE = "Keep private"


def edit_title(rid: int) -> str:
    return f"Edit memory #{rid}"


def char_counter(n: int, limit: int) -> str:
    return f"{n} / {limit} characters" + (" — over the limit" if n > limit else "")


EDIT_EMPTY = "The content is empty."


def edit_too_long(n: int, limit: int) -> str:
    return f"{n} characters; the limit is {limit}. Keep one topic per memory."


DISCARD_TITLE = "Discard this edit?"


def discard_text(changed: int) -> str:
    return f"You changed {changed} characters. They are lost if you leave now."


def make_public_title(rid: int) -> str:
    return f"Make memory #{rid} public?"


MAKE_PUBLIC_TEXT = (
    "A public memory can be recalled in turns where Eva speaks with other people. "
    "Only do this if anyone may know it."
)


def forget_title(rid: int) -> str:
    return f"Forget memory #{rid}?"


def forget_text(days: float) -> str:
    return f"It moves to the archive and can be restored for {days:g} days."


FORGET_WHY_DEFAULT = "no longer true"
FORGET_WHY_PLACEHOLDER = "why"
FORGET_SAY_WHY = "Say why (it is kept with the record)."


def memory_gone(rid: int) -> str:
    return f"Memory #{rid} no longer exists (a regenerated turn or a purge removed it)."


def memory_updated(rid: int) -> str:
    return f"Memory #{rid} updated."


def memory_private(rid: int, private: bool) -> str:
    return f"Memory #{rid} is {'private' if private else 'no longer private'}."


def memory_pinned(rid: int, pinned: bool) -> str:
    return f"Memory #{rid} {'pinned' if pinned else 'unpinned'}."


def memory_forgotten(rid: int) -> str:
    return f"Memory #{rid} moved to the archive."


def memory_restored(rid: int) -> str:
    return f"Memory #{rid} restored."


SELECT_MEMORY = "Select a memory first."
SELECT_FORGOTTEN = "Select a forgotten memory first."

# ---------------------------------------------------------------------------- memories screen
SEARCH_PLACEHOLDER = "/ search: by meaning and by words (reinforces nothing)"
NO_MEMORIES = "No memories yet. Eva saves what matters as you talk."


def records_count(n: int) -> str:
    return f"{n} record{'s' if n != 1 else ''}"


def records_for(what: str, text: str) -> str:
    return f"{what} for “{text}” (by meaning, then by words)"


def records_first(what: str, limit: int) -> str:
    return f"{what} (first {limit}; narrow the filters)"


FILTER_ANY_KIND = "any kind"
FILTER_ANY_SCOPE = "any scope"
FILTER_PRIVATE = ("private or not", "private only", "not private")
FILTER_PINNED = ("pinned or not", "pinned only", "not pinned")


def importance_at_least(i: int) -> str:
    return f"importance ≥ {i}"


SORTS = {
    "relevance": "by relevance",
    "updated": "by updated",
    "created": "by created",
    "importance": "by importance",
    "id": "by id",
    "age": "by last recall",
}
# table column key → header (the memories and the archive tables)
COLUMNS = {
    "id": "id",
    "kind": "kind",
    "importance": "imp",
    "age": "age",
    "private": "private",
    "pinned": "pinned",
    "scope": "scope",
    "content": "content",
    "by": "by",
    "why": "why",
    "when": "forgotten",
    "purge": "purge",
}

CMD_MEMORIES = {
    "move": ("Memory: move selected to a scope", "Global or a persona (m)"),
    "search": ("Memory: search", "Focus the search box (/)"),
    "edit": ("Memory: edit selected", "Content, kind, importance (e)"),
    "private": ("Memory: toggle private", "Only you see a private memory (v)"),
    "pin": (
        "Memory: pin / unpin",
        "A pinned memory is always in Eva's mind; only you can change or forget it (p)",
    ),
    "forget": ("Memory: forget selected", "Move it to the archive (d)"),
    "copy": ("Memory: copy selected", "Copy its content (c)"),
    "open": ("Memory: open selected", "Every field of the memory (o)"),
    "reload": ("Memory: reload", "Read the list again"),
}


def palette_memory(rid: int, text: str) -> str:
    return f"Memory #{rid}: {text}"


# ---------------------------------------------------------------------------- archive screen
def archive_info(n: int, ttl: float) -> str:
    if n:
        return (
            f"{n} forgotten record{'s' if n != 1 else ''}; each stays restorable "
            f"{ttl:g} days, then sleep purges it."
        )
    return f"The archive is empty. Forgotten memories wait here, restorable, for {ttl:g} days."


CMD_ARCHIVE = {
    "restore": ("Archive: restore selected", "Bring it back with its id and history (r)"),
    "open": ("Archive: open selected", "Who forgot it, why and when (o)"),
    "copy": ("Archive: copy selected", "Copy its content (c)"),
    "reload": ("Archive: reload", "Read the archive again"),
}

# ---------------------------------------------------------------------------- journal
JOURNAL_COLUMNS = {
    "id": "#",
    "started": "started",
    "status": "status",
    "mode": "mode",
    "applied": "applied",
    "refused": "refused",
}
# a night's detail (and `eva sleep`'s report): eva_runtime/night_text.py
NO_NIGHTS = (
    "No nights yet. Eva sleeps once a day when the conversation is quiet; "
    "press s to sleep now or d for a dry run (plans only, nothing applied)."
)
SELECT_NIGHT = "Select a night first."
EVA_SLEEPING = "Eva is sleeping…"
CMD_JOURNAL = {
    "copy": ("Journal: copy the selected night", "Its phases and changes as text (c)"),
    "reload": ("Journal: reload", "Read the journal again"),
}

# ---------------------------------------------------------------------------- preview
PREVIEW_PLACEHOLDER = (
    "/ to type a message: see what Eva would remember for it (empty: core and pinned only)"
)
PREVIEW_TRUSTED = "As the owner (private visible)"
PREVIEW_PUBLIC = "As a public turn (others read it)"
PREVIEW_EMPTY = "(an empty section: nothing to carry)"
PREVIEW_HIDDEN_MARK = "✗ "
PREVIEW_HIDDEN_LEGEND = "✗ = a public turn does not see this line"
CMD_PREVIEW = {
    "trusted": ("Preview: copy the trusted section", "As the owner sees it (Alt+W)"),
    "public": ("Preview: copy the public section", "As a public turn sees it (ctrl+g)"),
    "query": ("Preview: type a message", "Focus the message box (/)"),
}

# ---------------------------------------------------------------------------- settings
NOTHING_TO_SAVE = "Nothing to save: the settings are the ones in force."
REVERTED = "Back to the saved settings."


def saved_to(path: object, restart: list[str]) -> str:
    msg = f"Saved to {path}."
    if restart:
        msg += f" {', '.join(restart).capitalize()}: on the next start."
    return msg


def chat_model_help(names: list[str]) -> str:
    packaged = f"a packaged model ({', '.join(names)})" if names else "a packaged model"
    return f"{packaged} or a .gguf path"


def _chat_models() -> list[str]:
    from eva_runtime.loader import packaged_chat_models  # the list a bad path's error names

    return packaged_chat_models()


# config key → (label, help) on the settings screen
SETTINGS = {
    "llm.model.general": ("Chat model", chat_model_help(_chat_models())),
    "llm.model.smartest": ("Smartest model", "the sleep planner prefers it; empty: the chat model"),
    "memory.embedding_model": (
        "Embedder",
        "usem3+minilm (default), usem3, minilm or fastembed:<dir>; empty: lexical recall only",
    ),
    "chat.detail_level": (
        "Detail level",
        "how much of the conversation stays live: key 30 msgs, balanced 50, detailed 80",
    ),
    "chat.learning": ("Learning", "off: Eva neither saves nor reads memories"),
    "chat.memory_writes": (
        "Memory writes",
        "structured: a memory step after each reply (small models); tools: called while answering",
    ),
    "chat.persona_file": ("Persona file", "empty: Eva's own persona"),
    "sleep.every": ("Sleep every", "one night per this long, e.g. 24h"),
    "sleep.idle_for": (
        "Sleep after quiet for",
        "the conversation must have been quiet this long, e.g. 15m",
    ),
    "sleep.dry_run": ("Dry run", "plan and journal nights without applying them (the first weeks)"),
    "sleep.memory.model": ("Sleep model", "empty: smartest, then the chat model"),
}
SETTINGS_KEYMAP_NOTE = (
    'Keys: each binding has an id; set your own under [keymap] in the file, e.g. "chat.stop" = '
    '"escape,ctrl+g".'
)


def config_file(path: object, overrides: list[str]) -> str:
    text = f"Config file: {path}"
    if overrides:
        text += f"\nOverridden by the environment: {', '.join(overrides)}"
    return text


CMD_SETTINGS = {
    "save": ("Settings: save", "Write them to the config file (ctrl+s)"),
    "revert": ("Settings: revert", "Back to the last saved values (ctrl+z)"),
}

WELCOME_INIT = "Tell Eva about yourself"


# ---------------------------------------------------------------------------- the owner's hands
def added_memory(status: str, rid: int) -> str:
    return {
        "created": f"Saved as memory #{rid}",
        "reinforced": f"Memory #{rid} said the same: reinforced it",
        "updated": f"Memory #{rid} said the same: your wording replaced it",
    }[status]


def moved_memory(rid: int, scope: str) -> str:
    return f"Memory #{rid} moved to {scope}."


def nearly_the_same(rid: int, content: str) -> str:
    return (
        f"Memory #{rid} says nearly the same: “{content}”. Save again to reinforce it (a "
        "more detailed wording replaces it), or change the text."
    )


# ---------------------------------------------------------------------------- coming up (§8.11)
COMING_UP_TITLE = "Coming up"
COMING_UP_HINT = "x done · z snooze · n dismiss · ⏎ open · c close (Shift+Tab)"
COMING_UP_NOTHING = "Nothing is coming up: no promise, plan or birthday is due soon."
BTN_DONE = "Done"
BTN_SNOOZE = "Snooze"
BTN_DISMISS = "Dismiss"
BTN_CLOSE_CARD = "Close"
CMD_COMING_UP = (
    "Coming up",
    "Promises, plans and birthdays due soon, with done, snooze and "
    "dismiss (the card the chat shows on the day's first open)",
)
REMIND_ACTIONS = ("done", "snooze", "dismiss")
NIGHT_CANNOT_SNOOZE = "A night of sleep cannot be snoozed: Done or Dismiss marks it seen."


def reminder_line(when: str, content: str, private: bool, night: bool) -> str:
    text = f"{when} · {content}"
    return text + " · private" if private and not night else text


def reminded(action: str, rid: int, night: bool = False) -> str:
    if night:
        return f"Night #{rid} marked seen."
    return {
        "done": f"Memory #{rid} marked done: its words say so now.",
        "snooze": f"Memory #{rid} snoozed until tomorrow.",
        "dismiss": f"Memory #{rid} will not be brought up again.",
    }[action]


def due_text(
    on: str, every: str | None, state: str | None, quiet_until: str | None, days: int | None = None
) -> str:
    """The record view's "due" row: the day (and how far it is), how it repeats, and the
    owner's answer."""
    text = on
    if every is None and days is not None:
        text += {0: " (today)", 1: " (tomorrow)", -1: " (yesterday)"}.get(
            days, f" (in {days} days)" if days > 0 else f" ({-days} days ago)"
        )
    if every is not None:
        text += f", every {every}"
    if state == "done":
        text += " · done"
    elif state == "dismissed":
        text += " · dismissed"
    elif quiet_until:
        text += f" · not brought up before {quiet_until}"
    return text
