"""The ``eva`` command."""

from __future__ import annotations

import argparse
import sys

from core import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eva", description="Eva, an offline companion")
    parser.add_argument("--version", action="version", version=f"eva {__version__}")
    parser.parse_args(argv)
    print(f"eva {__version__} — the memory core is ready; the TUI comes with its issue.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
