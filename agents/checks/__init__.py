"""The judges' checks: the fact-check, its recompute and rules, verdicts, what a run established."""
