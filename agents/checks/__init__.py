"""The judges' checks: the fact-check and its recompute, verdicts, the answer guard, what a
run established (the claim check it asks is `agents.understanding.claims`)."""
