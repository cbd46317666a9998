"""The ``eva`` command.

    eva [--data DIR] [--config FILE]      start the TUI (default data dir: $XDG_DATA_HOME/eva)
    eva sleep [--dry-run]                 one night now, in the terminal, with progress
    eva calibrate                         measure the embedder's background cosine on your corpus
    eva doctor                            check models, store and vectors; say what to fix
    eva serve [--host H] [--port N]       the HTTP API for other surfaces (loopback, token)
    eva export [--format jsonl|md] [--include-archive] [--private] [-o FILE [--force]]
                                          write the memory out (stdout unless -o)
    eva export --chats [--chat ID] [--format jsonl|md] [--private] [-o FILE [--force]]
                                          write the chats out (stdout unless -o)
    eva import FILE                       read an export back: all or nothing, through dedup
    eva import --chats FILE [--dry-run]   bring chats in: Eva's JSONL, ChatGPT's
                                          conversations.json, a SillyTavern .jsonl
    eva backup DIR                        a consistent copy of the store (SQLite online backup)

Every command ends through one guard in :func:`main` (issue 25): a failure is one sentence on
stderr prefixed "eva: " and one of the exit codes of :mod:`eva_runtime.cli_io`, never a
traceback — unless ``EVA_DEBUG=1``, which prints the traceback as well. A bad config is reported
with the key and the reason (exit 2).

Here are the parser, the guard and the TUI; the other subcommands are in
:mod:`eva_runtime.cli_memory` (sleep, calibrate, doctor, remind), :mod:`eva_runtime.cli_files`
(export, import, backup) and :mod:`eva_api.cli` (serve): none of them imports the UI.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from core import __version__
from eva_api import cli as serve_cli
from eva_runtime import cli_files, cli_memory, config_file
from eva_runtime import config as cfg
from eva_runtime.cli_io import EXIT_CODES, UsageError, debug, failure


def _common(suppress: bool) -> argparse.ArgumentParser:
    """--data and --config, accepted before or after the subcommand. The subcommands' copies
    default to SUPPRESS, so they never reset a value given before the subcommand."""
    p = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if suppress else None
    p.add_argument(
        "--data",
        metavar="DIR",
        default=default,
        help="data directory (default: $XDG_DATA_HOME/eva, i.e. ~/.local/share/eva)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        default=default,
        help="config file (default: $XDG_CONFIG_HOME/eva/config.toml)",
    )
    return p


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="eva",
        parents=[_common(False)],
        description="Eva, an offline companion with a careful memory",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"eva {__version__}")
    sub = p.add_subparsers(dest="cmd")
    common = _common(True)
    s = sub.add_parser("sleep", parents=[common], help="sleep now (consolidate the memory)")
    s.add_argument("--dry-run", action="store_true", help="plan and journal, apply nothing")
    sub.add_parser(
        "calibrate",
        parents=[common],
        help="measure the embedder's background cosine on your own memories",
    )
    sub.add_parser("doctor", parents=[common], help="check models, store and vectors")
    r = sub.add_parser(
        "remind",
        parents=[common],
        help="print what is coming up (promises, dates, birthdays; for cron, "
        "a shell prompt or notify-send)",
    )
    r.add_argument(
        "--days",
        type=int,
        default=None,
        metavar="N",
        help="look N days ahead (default: [reminders] days, 3)",
    )
    r.add_argument("--format", choices=("text", "json"), default="text")
    r.add_argument(
        "--no-private",
        action="store_true",
        help="leave private memories out (a notification others may see)",
    )
    serve_cli.add_parser(sub, common)
    _portability_parsers(sub, common)
    return p


def _portability_parsers(sub, common: argparse.ArgumentParser) -> None:
    """eva export / import / backup (SPEC §11: nothing the owner owns is locked in)."""
    e = sub.add_parser(
        "export",
        parents=[common],
        help="write the memory out (JSON Lines or Markdown); private memories only with --private",
    )
    e.add_argument(
        "--format",
        choices=("jsonl", "md"),
        default="jsonl",
        help="jsonl for round trips (default), md for reading",
    )
    e.add_argument(
        "--include-archive",
        action="store_true",
        help="also the archived (forgotten, restorable) memories",
    )
    e.add_argument(
        "--private",
        action="store_true",
        help="include private memories (with --chats: the messages written where "
        "private memory was visible)",
    )
    e.add_argument(
        "--chats", action="store_true", help="export the chats (messages) instead of the memory"
    )
    e.add_argument(
        "--chat",
        type=int,
        metavar="ID",
        help="with --chats: only this chat (its id, as `eva export --chats` shows)",
    )
    e.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE (default: stdout), mode 0600; an existing FILE is "
        "refused unless --force, a symbolic link always",
    )
    e.add_argument("--force", action="store_true", help="replace an existing -o FILE")
    i = sub.add_parser(
        "import", parents=[common], help="read an export back: all or nothing, through dedup"
    )
    i.add_argument(
        "file",
        metavar="FILE",
        help="a JSON Lines export (one memory per line); with --chats a chat file",
    )
    i.add_argument(
        "--chats",
        action="store_true",
        help="import chats: Eva's chat export, ChatGPT's conversations.json or a "
        "SillyTavern chat .jsonl (detected); all or nothing",
    )
    i.add_argument(
        "--dry-run",
        action="store_true",
        help="with --chats: check the file and show what it holds; write nothing",
    )
    b = sub.add_parser(
        "backup",
        parents=[common],
        help="a consistent copy of the whole store (SQLite online backup)",
    )
    b.add_argument("dir", metavar="DIR", help="directory the backup file is written to")


def main(argv: list[str] | None = None) -> int:
    """The ``eva`` command. Every subcommand runs inside one guard: whatever fails ends as one
    sentence on stderr and a documented exit code (:data:`EXIT_CODES`)."""
    args = _parser().parse_args(argv)  # a bad flag: argparse prints usage and exits 2
    data_dir = Path(args.data).expanduser() if args.data else None
    try:
        data_dir = data_dir or cfg.default_data_dir()
        return _run(args, data_dir)
    except SystemExit:
        raise
    except BaseException as e:
        if not isinstance(e, Exception | KeyboardInterrupt):
            raise  # GeneratorExit and the like are not errors of a command
        if debug() and not isinstance(e, BrokenPipeError):
            traceback.print_exc()
        return failure(e, data_dir or Path("."))


def _run(args: argparse.Namespace, data_dir: Path) -> int:
    config = config_file.load(args.config)
    if args.cmd == "sleep":
        return cli_memory.cmd_sleep(config, data_dir, args.dry_run)
    if args.cmd == "calibrate":
        return cli_memory.cmd_calibrate(config, data_dir)
    if args.cmd == "doctor":
        return cli_memory.cmd_doctor(config, data_dir)
    if args.cmd == "serve":
        return serve_cli.cmd_serve(config, data_dir, args)
    if args.cmd == "remind":
        return cli_memory.cmd_remind(
            config, data_dir, args.days, args.format, private=not args.no_private
        )
    if args.cmd == "export":
        if args.chats or args.chat is not None:
            if args.include_archive:
                raise UsageError(
                    "--include-archive is for the memory; chats are exported without the archive"
                )
            return cli_files.cmd_export_chats(
                config,
                data_dir,
                args.format,
                args.chat,
                args.private,
                args.output,
                force=args.force,
            )
        return cli_files.cmd_export(
            config,
            data_dir,
            args.format,
            args.include_archive,
            args.private,
            args.output,
            force=args.force,
        )
    if args.cmd == "import":
        if args.chats:
            return cli_files.cmd_import_chats(config, data_dir, args.file, dry_run=args.dry_run)
        if args.dry_run:
            raise UsageError("--dry-run goes with --chats")
        return cli_files.cmd_import(config, data_dir, args.file)
    if args.cmd == "backup":
        return cli_files.cmd_backup(config, data_dir, args.dir)
    return cmd_tui(config, data_dir)


def cmd_tui(config: cfg.EvaConfig, data_dir: Path) -> int:
    from eva_runtime.services import Services
    from eva_tui.app import create_app

    services = Services(config, data_dir)
    services.first_run_offer = True  # an empty store: offer to initialize memories (issue 13)
    app = create_app(services)
    try:
        app.run()
    finally:
        services.close()
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
