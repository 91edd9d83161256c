"""Render a run's events in a terminal: reasoning dimmed, tool steps, the answer streaming.

The answer shown is the checked answer the store keeps (citation markers are checked
before they stream), then its citations (number, title, source). In multi mode a judge
may send a draft back, so the answer is held until the run ends; a draft sent back is
not shown (a line says why it went back), and the draft of a run that did not end
``done`` (rejected at the answer gate, an error, a timeout, a cancel) is shown dimmed
and labelled as a draft, never as the answer.

The run's text (the answer, reasoning, a draft) is printed as it is: piped (stdout not a
terminal) it is written unchanged, so ``agentbus ask ... | cat`` prints the stored answer
byte for byte; on a terminal it is soft-wrapped (the terminal folds long lines, nothing is
re-wrapped or cut, and ``:name:`` is not made an emoji).
"""

from __future__ import annotations

import json

from rich.console import Console

from agentbus_contracts.events import Citation, ClientEvent, Done


class LiveRenderer:
    """Prints events as they arrive; remembers what kind of text is being written."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._piped = not _is_terminal(console)
        self._writing: str | None = None
        # Multi mode: a judge may send a draft back, so its answer is held until the run
        # ends and only the current draft is shown.
        self._held: list[str] | None = None
        self._streamed: list[str] = []  # single mode: the answer text already printed
        self._citations: list[Citation] = []

    def _newline(self) -> None:
        if self._writing is not None:
            self.console.print()
            self._writing = None

    def _stream(self, kind: str, text: str, style: str) -> None:
        if self._writing != kind:
            self._newline()
            self._writing = kind
        self.text(text, style)

    def text(self, text: str, style: str = "") -> None:
        """The run's own text, exactly as it is (see the module docstring)."""
        if self._piped:
            self.console.file.write(text)
            self.console.file.flush()  # a pipe is buffered: tokens still arrive as they stream
        else:
            self.console.print(
                text, style=style, end="", markup=False, highlight=False, emoji=False,
                soft_wrap=True,
            )  # fmt: skip

    def show(self, event: ClientEvent) -> None:
        """Print one event."""
        match event.type:
            case "reasoning":
                self._stream("reasoning", event.delta, "dim italic")
            case "run_started":
                self._held = None if event.mode == "single" else []
            case "answer":
                if self._held is None:
                    self._streamed.append(event.delta)
                    self._stream("answer", event.delta, "")
                else:
                    self._held.append(event.delta)
            case "draft_superseded":
                self._line(f"(draft {event.attempt + 1} sent back: {event.reason})", "dim")
                if self._held is not None:
                    self._held = []
                self._streamed = []
            case "citations" if event.agent != "merge":  # the finalizer's: the answer's own
                self._citations = list(event.items)
            case "interpreted":
                self._line(f"interpreted as: {event.text}", "dim")
            case "plan":
                self._line("plan: " + "; ".join(event.steps), "blue")
            case "tool_call":
                self._line(
                    f"→ {event.tool}({json.dumps(event.args, ensure_ascii=False)})", "magenta"
                )
            case "tool_result":
                shown = event.result if event.status == "ok" else f"{event.code}: {event.message}"
                style = "green" if event.status == "ok" else "red"
                self._line(f"← {event.tool} {event.status}: {_short(shown)}", style)
            case "critique":
                self._line(f"critic: {event.verdict} {event.reason}", "yellow")
            case "verdict":
                self._line(f"verifier: {event.verdict} {'; '.join(event.reasons)}", "red")
            case "step_retry":
                self._line("(a step was retried: text above from it is superseded)", "dim")
            case "error":
                self._line(f"error [{event.code}]: {event.message}", "bold red")
            case "approval_request":
                self._line(f"approval needed: {event.reason}", "bold yellow")
            case "done":
                self._done(event)
            case _:
                pass

    def _done(self, event: Done) -> None:
        holding = self._held is not None
        held = "".join(self._held or [])
        self._held = [] if holding else None
        if event.status == "done":
            answer = event.answer if event.answer is not None else held
            if holding and answer:
                self._stream("answer", answer, "")
            self._newline()
            for c in self._citations:
                where = f"{c.title} — {c.source}" if c.title else c.source
                self._line(f"[{c.ref}] {where}", "cyan")
        elif held:
            self._draft(f"draft, not an answer: the run ended {event.status}", held)
        elif self._streamed:
            self._line(f"(the text above is a partial draft: the run ended {event.status})", "dim")
        self._newline()
        if event.status == "rejected":
            self._line("rejected: the answer was not approved", "bold yellow")
        elif event.status != "done" or event.stop_reason:
            why = f" {event.stop_reason}" if event.stop_reason else ""
            self._line(f"[{event.status}{why}]", "dim")
        if event.verified_reason:
            self._line(verified_line(event.verified, event.verified_reason), "dim")

    def _draft(self, label: str, text: str) -> None:
        """A draft, dimmed under its label (never printed as the answer)."""
        self._line(f"({label})", "dim")
        if text:
            self.text(text + "\n", "dim")

    def _line(self, text: str, style: str) -> None:
        self._newline()
        self.console.print(
            text, style=style, markup=False, highlight=False, emoji=False, soft_wrap=True
        )


def _is_terminal(console: Console) -> bool:
    """True if the console writes to a terminal (not a pipe or a file, whatever
    ``FORCE_COLOR`` says about colours)."""
    isatty = getattr(console.file, "isatty", None)
    return bool(isatty and isatty())


def verified_line(verified: bool | None, reason: str) -> str:
    """How the CLI shows what a run's judges concluded."""
    word = (
        {True: "yes", False: "NO"}.get(verified, "unknown") if verified is not None else "unknown"
    )
    return f"verified: {word} ({reason})"


def _short(value: object, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
