"""The worker runtime: consumers with exactly-once run progress, reclaim, dead letters, drain."""
