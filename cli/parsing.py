"""The command line's parser, with "did you mean" for a mistyped command or option.

argparse suggests close matches itself only from Python 3.14 (``suggest_on_error``); here the
error path adds it: the invalid choice or unknown option is compared (difflib) with what
the parser knows, every subcommand's options included, since argparse reports an unknown
option from the top parser whichever subcommand it followed.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterator
from typing import NoReturn

INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")
UNRECOGNIZED = "unrecognized arguments: "


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors suggest the nearest command or option."""

    def error(self, message: str) -> NoReturn:
        if hint := self._suggestion(message):
            message = f"{message}; did you mean {hint}?"
        super().error(message)

    def _suggestion(self, message: str) -> str | None:
        if found := INVALID_CHOICE.search(message):
            choices = [str(c) for a in self._actions if a.choices for c in a.choices]
            return _nearest(found.group(1), choices)
        if message.startswith(UNRECOGNIZED):
            for word in message.removeprefix(UNRECOGNIZED).split():
                if word.startswith("--") and (near := _nearest(word.split("=", 1)[0], sorted(_options(self)))):
                    return near
        return None


def _nearest(word: str, known: list[str]) -> str | None:
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"'{close[0]}'" if close else None


def _options(parser: argparse.ArgumentParser) -> Iterator[str]:
    """Every long option of ``parser`` and of the parsers under it."""
    for action in parser._actions:
        yield from (o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _options(child)
