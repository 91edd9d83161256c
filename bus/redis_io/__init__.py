"""The process's Redis plumbing: one pipelined connection per client, Lua run through it.

Below the worker runtime, which commits through it, and below what a commit applies (the
budget, the fence), which use it too.
"""
