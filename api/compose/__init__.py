"""The composition root: settings, connections, role handlers and worker processes."""
