"""What a person sees in a terminal: the bytes a program wrote, played onto a screen with
scrollback. Enough of a VT100 for what the CLI (rich) writes: printable text with
autowrap, CR, LF, backspace, tab, cursor up/down/forward/back/column, erase in line and
in display; colours, cursor visibility and OSC strings change nothing that is read."""

from __future__ import annotations

import re

ESCAPES = re.compile(
    r"\x1b\[(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
)


def strip_ansi(text: str) -> str:
    return ESCAPES.sub("", text)


class Screen:
    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.lines: list[list[str]] = [[]]  # the scrollback and the screen, top to bottom
        self.row = self.col = 0

    def feed(self, text: str) -> Screen:
        """Play ``text`` as a terminal shows it: a newline also returns the carriage, as the
        terminal driver's ``onlcr`` does for every program."""
        text = text.replace("\n", "\r\n")
        at = 0
        for match in ESCAPES.finditer(text):
            self._text(text[at:match.start()])
            if match.group("final"):
                self._csi(match.group("params"), match.group("final"))
            at = match.end()
        self._text(text[at:])
        return self

    def text(self) -> str:
        return "\n".join("".join(line).rstrip() for line in self.lines).rstrip("\n")

    def _text(self, text: str) -> None:
        for char in text:
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self._down()
            elif char == "\b":
                self.col = max(0, self.col - 1)
            elif char == "\t":
                self.col = min(self.columns - 1, (self.col // 8 + 1) * 8)
            elif char >= " ":
                if self.col >= self.columns:  # autowrap
                    self._down()
                    self.col = 0
                line = self.lines[self.row]
                line.extend(" " * (self.col + 1 - len(line)))
                line[self.col] = char
                self.col += 1

    def _down(self) -> None:
        self.row += 1
        if self.row == len(self.lines):
            self.lines.append([])

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?"):
            return  # private modes (cursor visibility...)
        numbers = [int(n) if n else 0 for n in params.split(";")] if params else []
        n = numbers[0] if numbers else 0
        line = self.lines[self.row]
        match final:
            case "A":
                self.row = max(0, self.row - max(n, 1))
            case "B":
                for _ in range(max(n, 1)):
                    self._down()
            case "C":
                self.col = min(self.columns - 1, self.col + max(n, 1))
            case "D":
                self.col = max(0, self.col - max(n, 1))
            case "G":
                self.col = max(n, 1) - 1
            case "K":
                if n == 0:
                    del line[self.col:]
                elif n == 1:
                    line[: self.col] = [" "] * min(self.col, len(line))
                else:
                    line.clear()
            case "J":
                if n == 0:
                    del line[self.col:]
                    del self.lines[self.row + 1:]
            case _:
                pass  # colours and the rest change nothing that is read
