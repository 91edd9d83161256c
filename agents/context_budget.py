"""How much of a model's context window a conversation's history may take, and where to
fold it.

Tokens are estimated, not counted: the local runtime (xllamacpp) exposes no tokenizer to
the adapter, and an OpenAI-compatible server's is unknown. The estimate is deliberately
conservative: three characters a token (Qwen2.5's tokenizer averages about four on English
prose; code, numbers and other scripts pack fewer) plus a few tokens a message for the chat
template's markers.

The decision (`plan_fold`) is pure, so it is the same on every delivery of a step: a
redelivered intake folds the same messages, at the same message, as the first delivery.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CHARS_PER_TOKEN = 3
"""Characters a token, conservatively (see the module's docstring)."""

MESSAGE_OVERHEAD = 4
"""Tokens a message costs beyond its text (role markers of the chat template)."""

ANSWER_TOKENS = 1024
"""Room kept for the answer: the local model's default completion length."""

SUMMARY_TOKENS = 300
"""What a summary may be at most (the summarizer's ``max_tokens``)."""

MIN_BUDGET = 1024
"""The history's budget never goes below this, so a summary (at most about 400 tokens
estimated) always leaves room for recent turns and a fold always makes room."""


def estimate_tokens(text: str) -> int:
    """One message's tokens, estimated conservatively (its text and the template's markers)."""
    return MESSAGE_OVERHEAD + math.ceil(len(text) / CHARS_PER_TOKEN)


def history_budget(window: int, fixed: int) -> int:
    """The tokens a model call's history (summary and recent turns) may take.

    Half of what the window leaves after the fixed parts (``fixed``: the system prompt,
    the tools offered, the question) and the answer; the other half stays for the run's own
    work (tool results, evidence, plan, a reviewer's feedback). Never below `MIN_BUDGET`.

    Args:
        window: the model's context window in tokens.
        fixed: estimated tokens of the call's fixed parts.
    """
    return max(MIN_BUDGET, (window - fixed - ANSWER_TOKENS) // 2)


def plan_fold(
    sizes: Sequence[int],
    starts: Sequence[bool],
    *,
    summary_tokens: int,
    budget: int,
    max_messages: int,
) -> int:
    """How many of the oldest messages to fold into the summary (0: none).

    Nothing is folded while the summary and the messages fit ``budget`` and there are at
    most ``max_messages`` messages. Otherwise the longest run of newest messages that
    starts a turn (a user message, so no answer is kept without its question) and fits
    half the budget and half ``max_messages`` stays whole;
    everything before it is folded, so the next fold is several turns away. When no whole
    turn fits, everything is folded: a model never receives a message cut in two.

    Args:
        sizes: each message's estimated tokens, oldest first.
        starts: whether each message starts a turn (a user message).
        summary_tokens: the current summary's estimated tokens (0 without one).
        budget: the history's budget (`history_budget`).
        max_messages: at most this many recent messages are kept whole.
    """
    if len(sizes) != len(starts):
        raise ValueError("sizes and starts must have one entry per message")
    if summary_tokens + sum(sizes) <= budget and len(sizes) <= max_messages:
        return 0
    keep_tokens, keep_messages = budget // 2, max(1, max_messages // 2)
    fold = len(sizes)
    used = 0
    for i in range(len(sizes) - 1, -1, -1):
        used += sizes[i]
        if used > keep_tokens or len(sizes) - i > keep_messages:
            break
        if starts[i]:
            fold = i
    return fold


def chunks(sizes: Sequence[int], starts: Sequence[bool], limit: int) -> list[int]:
    """Where to cut messages into consecutive groups of at most ``limit`` tokens each.

    A group ends before a turn (a question) where it can, so its summary, stored through
    the group's last message, covers whole turns.

    Returns:
        Each group's end (exclusive), in order; the last is ``len(sizes)``. A message
        bigger than ``limit`` is a group of its own.
    """
    ends: list[int] = []
    begin = used = 0
    for i, size in enumerate(sizes):
        used += size
        while used > limit and i > begin:
            turns = [j for j in range(begin + 1, i + 1) if starts[j]]
            cut = turns[-1] if turns else i
            ends.append(cut)
            begin = cut
            used = sum(sizes[begin : i + 1])
    if sizes:
        ends.append(len(sizes))
    return ends


def clip(text: str, tokens: int) -> str:
    """``text`` cut to about ``tokens`` (its start and its end) for the summarizer to read;
    a model's history never gets a clipped message, only the summarizer's input."""
    room = tokens * CHARS_PER_TOKEN
    if len(text) <= room:
        return text
    half = max(1, room // 2)
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"
