"""Signed webhooks: a run's result (and approval requests) POSTed through the egress path."""
