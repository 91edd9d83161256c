"""``agentbus ask`` prints the run's text as it is: unchanged when piped, unwrapped on a
terminal (the terminal folds long lines; nothing is re-wrapped, cut or made an emoji)."""

from __future__ import annotations

import io

from rich.console import Console

from api.cli.render import LiveRenderer
from bus.events import Answer, Done

LONG = "nums = [1, 2, 3] " + "and a word " * 12 + ":smile: ends here"


class Terminal(io.StringIO):
    """What a terminal would be given, 30 columns wide."""

    def isatty(self) -> bool:
        return True


def rendered(file: io.StringIO, answer: str) -> str:
    renderer = LiveRenderer(Console(file=file, width=30, color_system=None))
    for piece in (answer[:9], answer[9:40], answer[40:]):
        renderer.show(Answer(run_id="r", step_id="r:1:0", agent="researcher", delta=piece))
    renderer.show(Done(run_id="r", step_id="r:2:0", agent="finalizer", status="done"))
    return file.getvalue()


def test_a_piped_answer_is_written_byte_for_byte() -> None:
    answer = LONG + "\n\tindented\r\n  two  spaces  \n- [ ] item"
    assert rendered(io.StringIO(), answer) == answer + "\n"


def test_on_a_terminal_long_lines_are_not_rewrapped() -> None:
    answer = LONG + "\n- a list item\n"
    assert rendered(Terminal(), answer) == answer + "\n"
