"""The no-op role: forwards a step ``hops_left`` times (hop benchmark, runtime tests).

It exercises every runtime path a real role does (streamed tokens, failures,
redelivery, commit) without any model or tool.
"""

from __future__ import annotations

import asyncio

from bus.commands import Command, NoopTask
from bus.events import Answer, Done
from bus.keys import Role
from bus.runtime.context import StepContext, StepResult


async def handle_noop(ctx: StepContext, command: Command) -> StepResult:
    """Stream the task's tokens, then forward it or end the run."""
    task = command.payload
    if not isinstance(task, NoopTask):
        raise TypeError(f"noop role got a {task.kind} payload")
    if ctx.delivery <= task.fail_times:
        raise RuntimeError(f"scripted failure on delivery {ctx.delivery}")
    pause = task.work_s / max(1, len(task.tokens)) if task.work_s else 0.0
    for token in task.tokens:
        await ctx.emit(Answer(run_id=command.run_id, step_id=command.step_id, delta=token))
        if pause:
            await asyncio.sleep(pause)
    if not task.tokens and task.work_s:
        await asyncio.sleep(task.work_s)
    if task.hops_left > 0:
        follow = task.model_copy(update={"hops_left": task.hops_left - 1})
        return StepResult(next=[command.follow(Role.NOOP, follow)])
    done = Done(run_id=command.run_id, step_id=command.step_id, status="done")
    return StepResult(events=[done], finished="done")
