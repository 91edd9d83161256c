"""The LLM port and its adapters (OpenAI-compatible, local offline, scripted)."""
