"""What the TUI, the ``eva`` command and the HTTP server all run on, with no UI in it: the
config, the model loader (the one door to ``models/``) and :class:`~eva_runtime.services.Services`
(the memory, the conversation, the models and sleep, wired together), and the command-line
subcommands that are not the TUI. Nothing here imports Textual, ``eva_tui`` or ``screens``."""
