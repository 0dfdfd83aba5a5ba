"""``PartialJSON``: one JSON value read incrementally, as its text arrives in pieces, with the
value parsed so far available after each piece.

::

    feed('{"city": "Pa')    snapshot() -> {"city": "Pa"}
    feed('ris", "temp')     snapshot() -> {"city": "Paris"}          (a key shows with its value)
    feed('": 21, "tags": [')snapshot() -> {"city": "Paris", "temp": 21, "tags": []}
    feed('"wet"]}')         snapshot() -> {"city": "Paris", "temp": 21, "tags": ["wet"]}

Each piece is read once; nothing already read is parsed again. A value that is complete within
the piece is read whole by the ``json`` module's C scanner (``scan_once``, what ``json.loads``
uses: the same values), and an object key by its ``scanstring``; only what is still open at the
piece's end goes through this module's own state machine, a character at a time except inside
strings, whose runs of plain characters are copied with one ``re`` search. A value once shown
only grows: a string by its end, a list or an object by new items (and its last item growing);
numbers, ``true``, ``false`` and ``null`` show once they are complete. So every snapshot is a
prefix, in that sense, of the last one, and the last equals ``json.loads`` of the whole text.

A snapshot is fresh where the value is still open (the containers on the way to what is
being read now are copied, shallowly); what was complete is shared between snapshots, so
treat snapshots as read-only. Text before the value (a sentence, a ```json fence) is skipped
up to the first ``{`` or ``[``; text after it is ignored. Text that is not JSON stops the
reading (:attr:`failed`): the last snapshot stands, and the answer's check says what is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["PartialJSON"]

_WHITESPACE = frozenset(" \t\n\r")
_TOKEN = frozenset("0123456789+-.eEtrufalsn")  # the characters of numbers and literals
_SCALAR_START = frozenset('"-0123456789tfn')
_STRING_STOP = re.compile(r'["\\]')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}
# json's C scanners (what json.loads runs), absent from the type stubs: (text, index) ->
# (value, end), and (text, index after the quote) -> (string, end).
_ScanValue = Callable[[str, int], tuple[Any, int]]
_scan_value: _ScanValue = getattr(json.JSONDecoder(), "scan_once")  # noqa: B009
_scan_key: Callable[[str, int], tuple[str, int]] = getattr(json.decoder, "scanstring")  # noqa: B009
_NUMBERS = (int, float)
_AFTER_NUMBER = frozenset(" \t\n\r,]}")
_NUMBER_END = re.compile(r"[\s,\]}]")
_CLOSERS = {"{": "}", "[": "]", '"': '"'}

# What the next character means (ints: compared on every character).
_BEFORE = 0  # nothing of the value yet
_VALUE = 1  # a value (after ":", ",", in a list, or the top)
_VALUE_OR_END = 2  # after "[": a value or "]"
_KEY_OR_END = 3  # after "{": a key or "}"
_KEY = 4  # after "," in an object: a key
_COLON = 5  # after a key
_AFTER = 6  # after a value in a container: "," or its end
_STRING = 7  # inside a string (a key or a value)
_TOKEN_MODE = 8  # inside a number or a literal
_DONE = 9  # the value is complete: the rest is ignored
_FAILED = 10  # not JSON: nothing more is read

_UNSET: Any = object()


class PartialJSON:
    """One JSON value, read piece by piece (see the module docstring).

    ``feed(text)`` reads a piece; :attr:`changed` says whether the value so far changed
    since the last :meth:`snapshot`, which returns it.
    """

    __slots__ = (
        "_escape",
        "_high",
        "_is_key",
        "_mode",
        "_parts",
        "_root",
        "_seen",
        "_stack",
        "_token",
        "changed",
    )

    def __init__(self) -> None:
        self._root: Any = _UNSET
        self._stack: list[list[Any]] = []  # open containers: [container, current key]
        self._mode = _BEFORE
        self._parts: list[str] = []  # the open string's characters
        self._is_key = False
        self._escape = ""  # an escape begun and not yet complete
        self._high = ""  # a high surrogate (\\ud83d) waiting for its low half
        self._token = ""  # a number or literal begun
        self._seen = False  # a character other than whitespace was read
        self.changed: bool = False
        """The value so far changed since the last :meth:`snapshot`."""

    @property
    def started(self) -> bool:
        """The value has begun."""
        return self._root is not _UNSET

    @property
    def done(self) -> bool:
        """The value is complete."""
        return self._mode == _DONE

    @property
    def failed(self) -> bool:
        """The text was not JSON; nothing after the fault was read."""
        return self._mode == _FAILED

    def feed(self, text: str) -> None:
        """Read the next piece of the text."""
        i, n = 0, len(text)
        while i < n:
            mode = self._mode
            if mode == _STRING:
                i = self._read_string(text, i, n)
                continue
            if mode == _TOKEN_MODE:
                j = i
                while j < n and text[j] in _TOKEN:
                    j += 1
                if j > i:
                    self._token += text[i:j]
                    i = j
                    continue
                self._end_token()  # the character at i ends it: read it again in the new mode
                continue
            if mode >= _DONE:
                return
            c = text[i]
            i += 1
            if c in _WHITESPACE:
                continue
            if mode == _BEFORE:
                if c in "{[" or (not self._seen and c in _SCALAR_START):
                    i = self._value(c, text, i, n)
                self._seen = True  # anything else is prose before the value: skipped
            elif mode == _VALUE:
                i = self._value(c, text, i, n)
            elif mode == _AFTER:
                self._after(c)
            elif mode == _COLON:
                self._mode = _VALUE if c == ":" else _FAILED
            elif mode == _KEY_OR_END and c == "}":
                self._close("}")
            elif mode in (_KEY_OR_END, _KEY):
                if c == '"':
                    i = self._key(text, i)
                else:
                    self._mode = _FAILED
            elif mode == _VALUE_OR_END:
                if c == "]":
                    self._close("]")
                else:
                    i = self._value(c, text, i, n)

    def close(self) -> None:
        """The text ended: a number or literal still being read is complete."""
        if self._mode == _TOKEN_MODE:
            self._end_token()

    def snapshot(self) -> Any:
        """The value parsed so far (``None`` before it began); clears :attr:`changed`."""
        self.changed = False
        open_string = self._mode == _STRING and not self._is_key
        child: Any = "".join(self._parts) if open_string else _UNSET
        stack = self._stack
        for depth in range(len(stack) - 1, -1, -1):
            container, key = stack[depth]
            copy: Any = dict(container) if type(container) is dict else list(container)
            if child is not _UNSET:
                if type(copy) is dict:
                    copy[key] = child
                else:
                    copy[-1] = child
            child = copy
        if child is not _UNSET:
            return child
        return None if self._root is _UNSET else self._root

    # -- the reading -------------------------------------------------------------------------

    def _value(self, c: str, text: str, i: int, n: int) -> int:
        """A value begins with ``c`` (at ``i - 1``); returns where reading goes on."""
        # Complete within this piece? Only worth asking when what would close it is there
        # (a failed scan costs an exception: a paced stream's pieces are a few characters).
        closer = _CLOSERS.get(c)
        if closer is None:
            maybe = _NUMBER_END.search(text, i) is not None
        else:
            maybe = text.find(closer, i) >= 0
        try:
            value, end = _scan_value(text, i - 1) if maybe else (None, -1)
        except (ValueError, StopIteration, RecursionError):
            end = -1  # open at the piece's end (or not JSON: the state machine says so below)
        # A number is complete only before a delimiter: "1" of "12", "0" of "0.5" go on.
        if end >= 0 and (type(value) not in _NUMBERS or (end < n and text[end] in _AFTER_NUMBER)):
            self._attach(value)
            self._placed()
            return end
        self._open(c)
        return i

    def _key(self, text: str, i: int) -> int:
        """An object key begins (its quote at ``i - 1``); returns where reading goes on."""
        end = -1
        if text.find('"', i) >= 0:  # its closing quote may be in this piece
            try:
                key, end = _scan_key(text, i)
            except ValueError:
                end = -1
        if end < 0:  # open at the piece's end
            self._begin_string(is_key=True)
            return i
        self._stack[-1][1] = key
        self._mode = _COLON
        return end

    def _open(self, c: str) -> None:
        if c == "{":
            container: Any = {}
            self._attach(container)
            self._stack.append([container, None])
            self._mode = _KEY_OR_END
        elif c == "[":
            container = []
            self._attach(container)
            self._stack.append([container, None])
            self._mode = _VALUE_OR_END
        elif c == '"':
            self._attach("")
            self._begin_string(is_key=False)
        elif c in _SCALAR_START:
            self._token = c
            self._mode = _TOKEN_MODE
        else:
            self._mode = _FAILED

    def _attach(self, value: Any) -> None:
        """A value begins (or a scalar is complete) at the current place."""
        self.changed = True
        stack = self._stack
        if not stack:
            self._root = value
            return
        container, key = stack[-1]
        if type(container) is dict:
            container[key] = value
        else:
            container.append(value)

    def _placed(self) -> None:
        """A value is complete: what follows it."""
        self._mode = _AFTER if self._stack else _DONE

    def _after(self, c: str) -> None:
        container = self._stack[-1][0]
        if c == ",":
            self._mode = _KEY if type(container) is dict else _VALUE
        elif c in "}]":
            self._close(c)
        else:
            self._mode = _FAILED

    def _close(self, c: str) -> None:
        container = self._stack[-1][0]
        if (c == "}") != (type(container) is dict):
            self._mode = _FAILED
            return
        self._stack.pop()
        self._placed()

    def _end_token(self) -> None:
        token = self._token
        self._token = ""
        if token in _LITERALS:
            value = _LITERALS[token]
        else:
            try:
                value = float(token) if any(c in token for c in ".eE") else int(token)
            except ValueError:
                self._mode = _FAILED
                return
        self._attach(value)
        self._placed()

    def _begin_string(self, *, is_key: bool) -> None:
        self._parts = []
        self._is_key = is_key
        self._mode = _STRING

    def _read_string(self, text: str, i: int, n: int) -> int:
        """Read string characters from ``i``; returns where reading goes on."""
        if self._escape:
            return self._read_escape(text, i, n)
        found = _STRING_STOP.search(text, i)
        end = n if found is None else found.start()
        if end > i:
            self._add(text[i:end])
        if found is None:
            return n
        if text[end] == '"':
            self._end_string()
            return end + 1
        self._escape = "\\"
        return self._read_escape(text, end + 1, n)

    def _read_escape(self, text: str, i: int, n: int) -> int:
        escape = self._escape
        wanted = 6 if len(escape) > 1 and escape[1] == "u" else 2
        if len(escape) == 1 and i < n and text[i] == "u":
            wanted = 6
        taken = text[i : i + wanted - len(escape)]
        escape += taken
        i += len(taken)
        if len(escape) < wanted:
            self._escape = escape
            return i
        self._escape = ""
        if wanted == 2:
            plain = _ESCAPES.get(escape[1])
            if plain is None:
                self._mode = _FAILED
                return n
            self._add(plain)
            return i
        try:
            point = int(escape[2:], 16)
        except ValueError:
            self._mode = _FAILED
            return n
        if 0xD800 <= point <= 0xDBFF:  # the first half of a pair: wait for the second
            self._flush_high()
            self._high = chr(point)
        elif 0xDC00 <= point <= 0xDFFF and self._high:
            pair = 0x10000 + ((ord(self._high) - 0xD800) << 10) + (point - 0xDC00)
            self._high = ""
            self._add(chr(pair))
        else:
            self._add(chr(point))
        return i

    def _add(self, characters: str) -> None:
        self._flush_high()
        self._parts.append(characters)
        if not self._is_key:
            self.changed = True

    def _flush_high(self) -> None:
        """A high surrogate not followed by its low half stays alone (as ``json.loads``)."""
        if self._high:
            high, self._high = self._high, ""
            self._parts.append(high)
            if not self._is_key:
                self.changed = True

    def _end_string(self) -> None:
        self._flush_high()
        text = "".join(self._parts)
        self._parts = []
        if self._is_key:
            self._stack[-1][1] = text
            self._mode = _COLON
            return
        stack = self._stack
        if not stack:
            self._root = text
        else:
            container, key = stack[-1]
            if type(container) is dict:
                container[key] = text
            else:
                container[-1] = text
        self._placed()
