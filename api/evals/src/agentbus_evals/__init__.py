"""Evaluations on data the project ships (`agentbus eval`)."""
