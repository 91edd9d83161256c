"""A left-to-right scanner that finds citation markers in Markdown and checks them.

It reads an answer one piece at a time (the tokens as they stream, or the whole text at
once: both give the same output, byte for byte) and changes nothing but citation
markers in *citation position*; every other character passes through at once. It holds
text back only while a marker might be forming: the spaces before a ``[``, and from the
``[`` to the character after its ``]``.

A **citation marker** is ``[n]`` or ``[n, m, ...]``: numbers 1-999 (no leading zero),
separated by a comma and at most two spaces, nothing else inside the brackets.

A marker is in **citation position** when all of these hold:

* it is outside code: not in a fenced block (a line of 3+ backticks or tildes, up to 3
  spaces in, until a closing fence as long), not on an indented code line (4+ columns
  in, after a blank line or another such line), not in an inline code span (a run of
  backticks to the next run as long, or the end of the line);
* it is not inside other brackets on its line (``[see [1]](url)``), nor glued to a
  token with ``://`` in it;
* it stands at the start of a line, after whitespace, after ``.``, ``!``, ``?`` or ``;``
  glued (``stays.[1]``), or right after another marker in citation position
  (``[1][2]``, ``[1], [2]``); glued to anything else it is an index (``arr[0]``,
  ``x)[2]``, ``"s"[1]``);
* after whitespace, the last character before it is not one of ``= ( [ { , + - * / %
  < > & ^ ~ \\`` (a ``>`` closing an autolink ``<https://...>`` is prose) nor a colon
  after a quote, closing bracket or digit (``x = [1, 2]``, ``f(a, [1])``, ``{"a": [1]}``),
  and the last word is neither a LaTeX
  command (``\\in [1, 2]``) nor one that introduces a value: ``return``, ``yield``,
  ``await``, ``assert``, ``print``, ``is``, ``are``, ``was``, ``equals``, ``returns``,
  ``gives``, ``yields``, ``prints``, ``outputs`` (``it returns [1]``);
* it is not followed by ``(`` (a Markdown link ``[1](url)``) or ``:`` (a reference
  definition ``[1]: url``).

The scanner finds candidates; ``decide`` (`retrieval.citations.CitationCheck`) says what
each one is. A marker whose every number the run showed is a citation and stays byte
for byte. A one-number marker the run did not show is an invented citation: it is
removed, with the spaces before it, and with the comma and spaces after it when another
marker follows (``[1], [9], [2]`` is ``[1], [2]``; ``a [9], b`` is ``a, b``). A marker of
several numbers not all shown is not a citation at all (``the list [1, 2, 3]``, ``the
interval [1, 5]``, ``[2, 7]``) and stays as written. Footnotes (``[^1]``), years
(``[2024]``), slices (``a[1:3]``) and anything not matching the marker shape are never
candidates.
"""

from __future__ import annotations

from collections.abc import Callable

#: Characters that, as the last one before a space, make the next ``[`` code-like.
_CODE_BEFORE = frozenset("=([{,+-*/%<>&^~\\")
#: Characters a marker may be glued to.
_GLUE = frozenset(".!?;")
#: Words after which a bracket is an expression, not a citation.
_KEYWORDS = frozenset(
    {"return", "yield", "await", "assert", "print"}
    | {"is", "are", "was", "equals", "returns", "gives", "yields", "prints", "outputs"}
)
_MAX_DIGITS = 3
_MAX_NUMBERS = 12
_MAX_SPACES = 2
_SPACE = " \t"


class MarkerScanner:
    """Feeds Markdown through, handing each citation marker in position to ``decide``.

    Args:
        decide: called with a marker's numbers and text; returns the text to put in its
            place (empty: remove it), or None when it is not a citation after all.
    """

    def __init__(self, decide: Callable[[list[int], str], str | None]) -> None:
        self._decide = decide
        self._out: list[str] = []
        # Where the scanner is in the Markdown.
        self._fence: tuple[str, int] | None = None  # open fence's character and length
        self._fence_opened = False  # the fence was opened on the current line
        self._inline = 0  # backticks that opened the inline code span we are in (0: none)
        self._ticks = 0  # length of the backtick run being read
        self._ticks_at_lead = False  # that run began a line (within 3 spaces): maybe a fence
        self._tildes = 0  # tildes beginning the line (a ~~~ fence in the making)
        self._line: list[str] = []
        self._lead = True  # only spaces so far on this line
        self._lead_cols = 0
        self._code_line = False  # this line is indented code
        self._prev_blank = True
        self._prev_code_line = False
        # What precedes the next character, for citation position.
        self._prev = "\n"
        self._prev_solid = "\n"  # the last character that is not a space
        self._word = ""
        self._latex = False  # the last word is a LaTeX command (it follows a backslash)
        self._key = False  # the last character is the colon after a key ("a": or x[0]:)
        self._url = False
        self._autolink = False  # the last solid character is the ">" closing <scheme://...>
        self._tail = ""
        self._depth = 0
        self._chain = False
        self._drop_held = False  # the held spaces went with a removed marker
        self._sep = ""  # a comma and spaces after a removed marker (see `_resolve`)
        # Held text: spaces that may precede a marker, then the marker so far.
        self._held = ""
        self._marker = ""
        self._state = ""  # "" (none), "open", "num", "comma", "close"
        self._digits = 0
        self._spaces = 0
        self._numbers: list[int] = []
        self._current = 0

    def feed(self, text: str) -> str:
        """The output for the next piece of text (possibly less than it, while holding)."""
        for char in text:
            self._char(char)
        out = "".join(self._out)
        self._out.clear()
        return out

    def finish(self) -> str:
        """Whatever is still held, resolved as the end of the text."""
        if self._state == "close":
            self._resolve()
        elif self._state:
            self._release()
        self._end_removed()
        self._flush_held()
        self._end_ticks()
        out = "".join(self._out)
        self._out.clear()
        return out

    # -- characters -------------------------------------------------------------------

    def _char(self, char: str) -> None:
        if self._state:
            self._marker_char(char)
            return
        if self._ticks and char != "`":
            self._end_ticks()
        if self._drop_held and not (char == "[" and self._position()):
            if char == "," or (self._sep and char in _SPACE):
                self._sep += char
                return
            self._end_removed()
        if char == "\n":
            self._flush_held()
            self._emit(char)
            self._newline()
            return
        if self._fence is not None or self._code_line:
            self._emit(char)
            return
        if self._lead:
            if char in _SPACE:
                self._lead_cols += 4 if char == "\t" else 1
                self._emit(char)
                return
            self._lead = False
            if self._lead_cols >= 4 and (self._prev_blank or self._prev_code_line):
                self._code_line = True
                self._emit(char)
                return
        if char == "`":
            if not self._ticks:
                self._ticks_at_lead = self._at_lead_start() and not self._inline
            self._flush_held()
            self._ticks += 1
            self._emit(char)
            return
        if self._inline:
            self._emit(char)
            return
        if char == "~" and self._tildes == len(self._line) - self._lead_cols:
            self._tildes += 1
        if char in _SPACE or (char == "," and self._chain and not self._held):
            # A comma right after a marker is held with the spaces after it: it goes if the
            # next marker is removed (``[1], [9].`` is ``[1].``), and stays otherwise.
            self._held += char
            return
        if char == "[" and self._position():
            self._marker = char
            self._state = "open"
            self._numbers, self._current, self._digits, self._spaces = [], 0, 0, 0
            return
        self._flush_held()
        self._prose(char)

    def _prose(self, char: str) -> None:
        """A prose character that is not the start of a marker."""
        if char == "[":
            self._depth += 1
        elif char == "]" and self._depth:
            self._depth -= 1
        self._emit(char)

    def _marker_char(self, char: str) -> None:
        state = self._state
        if state == "close":
            if char in "(:":
                self._release()
            else:
                self._resolve()
            self._char(char)
            return
        if char.isascii() and char.isdigit():
            if state in ("open", "comma") and char != "0":
                self._state, self._digits, self._current = "num", 1, int(char)
            elif state == "num" and self._digits < _MAX_DIGITS:
                self._digits += 1
                self._current = self._current * 10 + int(char)
            else:
                self._abort(char)
                return
        elif state == "num" and char in ",]":
            self._numbers.append(self._current)
            if len(self._numbers) > _MAX_NUMBERS:
                self._abort(char)
                return
            self._state, self._spaces = ("comma", 0) if char == "," else ("close", 0)
        elif state == "comma" and char == " " and self._spaces < _MAX_SPACES:
            self._spaces += 1
        else:
            self._abort(char)
            return
        self._marker += char

    # -- markers ----------------------------------------------------------------------

    def _position(self) -> bool:
        """True if a ``[`` here would begin a marker in citation position."""
        if self._depth or (self._url and not self._held):
            return False
        if self._chain:  # only spaces and commas since a marker in citation position
            return True
        if self._held or self._prev == "\n":
            code_like = self._prev_solid in _CODE_BEFORE and not self._autolink
            if code_like or self._latex or self._key:
                return False
            return self._word.lower() not in _KEYWORDS
        return self._prev in _GLUE

    def _resolve(self) -> None:
        """A complete marker followed by something that is not ``(`` or ``:``."""
        replacement = self._decide(list(self._numbers), self._marker)
        if replacement is None:
            self._release()
            return
        self._reset_marker()
        if replacement:
            held, self._held, self._sep, self._drop_held = self._held, "", "", False
            self._out.append(held + replacement)
            self._track(held + replacement)
        else:
            # The marker is gone; its spaces stay held and go unless another marker
            # follows (``word [9][2]`` keeps ``word [2]``, ``word [9].`` is ``word.``). A
            # comma and spaces after it go with it when a marker follows (``[9], [2].`` is
            # ``[2].``, ``[1], [9], [2]`` is ``[1], [2]``), and stay before prose
            # (``a [9], b`` is ``a, b``).
            self._drop_held, self._sep = True, ""
        self._chain = True

    def _release(self) -> None:
        """The held text was not a citation: put it out as it was (after a removed marker:
        the separators after that one, see `_resolve`)."""
        marker = self._marker
        self._reset_marker()
        self._end_removed()
        self._flush_held()
        self._literal(marker)

    def _abort(self, char: str) -> None:
        """The marker shape broke at ``char``: release what was held, then read ``char``."""
        self._release()
        self._char(char)

    def _literal(self, marker: str) -> None:
        """A released marker's text, counted as ordinary brackets."""
        self._depth += 1  # its "["
        self._emit("[")
        for char in marker[1:]:
            if char == "]" and self._depth:
                self._depth -= 1
            self._emit(char)

    def _reset_marker(self) -> None:
        self._marker, self._state = "", ""
        self._numbers, self._current, self._digits, self._spaces = [], 0, 0, 0

    # -- bookkeeping ------------------------------------------------------------------

    def _end_removed(self) -> None:
        """After a removed marker, something other than a marker: the spaces before it go,
        the comma and spaces after it stay."""
        if self._drop_held:
            self._held, self._drop_held = "", False
            sep, self._sep = self._sep, ""
            self._out.append(sep)
            self._track(sep)

    def _flush_held(self) -> None:
        if self._held:
            held, self._held = self._held, ""
            self._out.append(held)
            self._track(held)

    def _emit(self, char: str) -> None:
        self._out.append(char)
        self._track(char)

    def _track(self, text: str) -> None:
        for char in text:
            self._line.append(char)
            before, self._prev = self._prev, char
            if char in _SPACE or char == "\n":
                self._url, self._tail = False, ""
                continue
            self._key = char == ":" and (self._prev_solid in "\"')]}" or self._prev_solid.isdigit())
            self._autolink = char == ">" and self._url
            self._prev_solid = char
            if char != ",":
                self._chain = False
            if char.isalnum() or char == "_":
                if before.isalnum() or before == "_":
                    self._word += char
                else:
                    self._word, self._latex = char, before == "\\"
            else:
                self._word, self._latex = "", False
            self._tail = (self._tail + char)[-3:]
            if self._tail == "://":
                self._url = True

    def _at_lead_start(self) -> bool:
        """True if no character but up to 3 spaces precedes on this line."""
        return not self._line[self._lead_cols :] and self._lead_cols <= 3

    def _end_ticks(self) -> None:
        """A backtick run ended: open or close a fence or an inline code span."""
        run, self._ticks = self._ticks, 0
        if not run:
            return
        if self._fence is not None:
            return  # a closing fence is recognised at the end of its line
        if self._ticks_at_lead and run >= 3:
            self._fence, self._fence_opened = ("`", run), True
        elif not self._inline:
            self._inline = run
        elif run == self._inline:
            self._inline = 0

    def _newline(self) -> None:
        line = "".join(self._line[:-1])
        blank = not line.strip()
        if self._fence is not None:
            if not self._fence_opened and _closes(line, self._fence):
                self._fence = None
        elif self._tildes >= 3 and not self._code_line and self._lead_cols <= 3:
            self._fence = ("~", self._tildes)
        self._prev_code_line = self._code_line
        self._prev_blank = blank
        self._line.clear()
        self._lead, self._lead_cols, self._code_line = True, 0, False
        self._inline, self._depth, self._tildes = 0, 0, 0
        self._chain, self._fence_opened = False, False


def _closes(line: str, fence: tuple[str, int]) -> bool:
    """True if ``line`` closes a fence of ``fence``'s character and at least its length."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return False
    char, length = fence
    run = len(stripped) - len(stripped.lstrip(char))
    return run >= length and not stripped[run:].strip()
