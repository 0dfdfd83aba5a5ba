"""`rxreact --help` and every subcommand's: plain text, every option's default, examples."""

from __future__ import annotations

import argparse
import re
from typing import Any

import pytest

from rxreact._cli.help import HelpFormatter, examples
from rxreact.cli import build_parser, main

PARSER = build_parser()
SUBCOMMANDS: dict[str, argparse.ArgumentParser] = next(
    action.choices  # type: ignore[misc]
    for action in PARSER._actions
    if isinstance(action, argparse._SubParsersAction)
)


def help_of(name: str) -> str:
    return SUBCOMMANDS[name].format_help()


def test_every_subcommand_is_listed() -> None:
    assert sorted(SUBCOMMANDS) == ["chat", "demo", "eval", "mock", "serve"]


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_is_plain_text(name: str) -> None:
    text = help_of(name)
    for markup in ("`", ":class:", ":func:", ":data:", "::", "**"):
        assert markup not in text, f"{name} --help shows {markup!r}"


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_option_says_its_default(name: str) -> None:
    parser = SUBCOMMANDS[name]
    assert isinstance(parser._get_formatter(), HelpFormatter)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        shown = parser._get_formatter()._expand_help(action)  # as --help prints it
        assert "default" in shown, f"rxreact {name} {action.option_strings or action.dest}"
        assert "None" not in shown


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_has_examples(name: str) -> None:
    text = help_of(name)
    section = text.split("\nexamples:\n", 1)
    assert len(section) == 2, f"{name} --help has no examples section"
    commands = [line.strip() for line in section[1].splitlines() if line.startswith("  rxreact")]
    assert commands and all(c.startswith(f"rxreact {name}") or "rxreact" in c for c in commands)
    assert any(c.startswith(f"rxreact {name}") for c in commands)


def test_a_default_value_is_appended_and_a_written_one_kept() -> None:
    parser = argparse.ArgumentParser(formatter_class=HelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="model requests")
    parser.add_argument("--name", default=None, help="a name (default: the host's)")
    parser.add_argument("--fast", action="store_true", help="go fast")
    text = " ".join(parser.format_help().split())
    assert "model requests (default: 5)" in text
    assert "a name (default: the host's)" in text and "None" not in text
    assert "go fast (default: off)" in text


def test_examples_section_layout() -> None:
    assert examples(("rxreact demo", "the demo")) == "examples:\n  rxreact demo\n      the demo"


def test_a_bare_rxreact_prints_the_help(capsys: Any) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out == PARSER.format_help()
    assert "`" not in out and "``" not in out
    for name in SUBCOMMANDS:
        assert re.search(rf"^    {name} ", out, re.M), f"{name} is not listed"
