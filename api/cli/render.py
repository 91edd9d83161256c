"""Render a run's events in a terminal: reasoning dimmed, tool steps, the answer streaming."""

from __future__ import annotations

import json

from rich.console import Console

from bus.events import ClientEvent


class LiveRenderer:
    """Prints events as they arrive; remembers what kind of text is being written."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._writing: str | None = None
        # Multi mode: a judge may send a draft back, so its answer is held until the run
        # ends and only the current draft is shown.
        self._held: list[str] | None = None

    def _newline(self) -> None:
        if self._writing is not None:
            self.console.print()
            self._writing = None

    def _stream(self, kind: str, text: str, style: str) -> None:
        if self._writing != kind:
            self._newline()
            self._writing = kind
        self.console.print(text, style=style, end="", markup=False, highlight=False)

    def show(self, event: ClientEvent) -> None:
        """Print one event."""
        match event.type:
            case "reasoning":
                self._stream("reasoning", event.delta, "dim italic")
            case "run_started":
                self._held = None if event.mode == "single" else []
            case "answer":
                if self._held is None:
                    self._stream("answer", event.delta, "")
                else:
                    self._held.append(event.delta)
            case "draft_superseded":
                if self._held is not None:
                    self._held = []
                self._line(f"(draft {event.attempt + 1} sent back: {event.reason})", "dim")
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
                if self._held:
                    self._stream("answer", "".join(self._held), "")
                    self._held = []
                self._newline()
                if event.status != "done" or event.stop_reason:
                    self._line(
                        f"[{event.status}{' ' + event.stop_reason if event.stop_reason else ''}]",
                        "dim",
                    )
                if event.verified_reason:
                    self._line(verified_line(event.verified, event.verified_reason), "dim")
            case _:
                pass

    def _line(self, text: str, style: str) -> None:
        self._newline()
        self.console.print(text, style=style, markup=False, highlight=False)


def verified_line(verified: bool | None, reason: str) -> str:
    """How the CLI shows what a run's judges concluded."""
    word = (
        {True: "yes", False: "NO"}.get(verified, "unknown") if verified is not None else "unknown"
    )
    return f"verified: {word} ({reason})"


def _short(value: object, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
