"""How ``rxreact ... --help`` reads: plain text, every option's default, examples at the end.

Descriptions and examples are printed as written (no re-wrapping, so their columns stay);
an option's help gets ``(default: X)`` appended from its default when the text does not say
it already. An option without a default value (``None``) must say in its help what happens
without it: the tests check that every option's help names its default.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["HelpFormatter", "command_parser", "examples"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written, and each option's default appended to its help."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        if action.nargs == 0 and action.default is False:  # a flag (store_true)
            return f"{text} (default: off)"
        if action.default is None or action.default == []:
            return text
        return f"{text} (default: %(default)s)"


def examples(*lines: tuple[str, str]) -> str:
    """An ``examples:`` section: each command, and what it does on the line below it."""
    body = "\n".join(f"  {command}\n      {what}" for command, what in lines)
    return f"examples:\n{body}"


def command_parser(commands: Any, name: str, *, help: str, description: str, epilog: str) -> Any:
    """Add subcommand ``name`` to ``commands`` (the subparsers), formatted as this module says."""
    return commands.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=HelpFormatter,
    )
