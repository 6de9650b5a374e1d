"""The command line speaks one vocabulary: every option has help, one meaning, and counts parse ``1e4``."""

from __future__ import annotations

import argparse
from pathlib import Path

from fedplan.planner import cli
from fedplan.planner.tasks.base import options
from fedplan.planner.tasks.registry import TASKS
from fedplan.planner.tasks.vocabulary import TERMS, markdown

ROOT = Path(__file__).resolve().parents[2]


def _commands(parser: argparse.ArgumentParser, path=()):
    """(command words, parser) of every leaf command."""
    found = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = True
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))
    if not found:
        yield path, parser


def _request_commands():
    return [(path, parser) for path, parser in _commands(cli.build_parser())
            if parser.get_default("request_type") is not None]


def test_every_request_is_a_command_and_every_command_a_request():
    commands = {path for path, _ in _request_commands()}
    assert {task.command for task in TASKS} <= commands


def test_every_option_has_help_and_deprecated_spellings_only_are_hidden():
    for path, parser in _request_commands():
        deprecated = {old for option in options(parser.get_default("request_type")).values()
                      for old in option.deprecated}
        for action in parser._actions:
            strings = set(action.option_strings)
            if action.help == argparse.SUPPRESS:
                assert strings <= deprecated, (path, action.option_strings)
            else:
                assert action.help and action.help.strip(), (path, action.option_strings or action.dest)


def test_no_flag_means_two_things():
    meaning: dict[str, tuple[str, tuple]] = {}
    for path, parser in _request_commands():
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or action.dest in ("help", "json"):
                continue
            for string in action.option_strings:
                first = meaning.setdefault(string, (action.dest, path))
                assert first[0] == action.dest, f"{string} means {first[0]} in {first[1]} and {action.dest} in {path}"


def test_every_field_is_a_term_of_the_vocabulary():
    for task in TASKS:
        for name in options(task):
            assert name in TERMS, f"{' '.join(task.command)}: {name} is not in planner/tasks/vocabulary.py"


def test_every_count_option_parses_1e4_like_10000():
    for path, parser in _request_commands():
        kinds = {name: option.kind for name, option in options(parser.get_default("request_type")).items()}
        for action in parser._actions:
            assert action.type is not int, (path, action.dest, "type=int rejects 1e4")
            if kinds.get(action.dest) == "count":
                assert action.type("1e4") == 10_000 and action.type("10000") == 10_000, (path, action.dest)


def test_docs_vocabulary_is_current():
    assert (ROOT / "docs" / "VOCABULARY.md").read_text() == markdown()
