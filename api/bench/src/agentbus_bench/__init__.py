"""The benchmarks `agentbus bench` runs; each prints its figures."""
