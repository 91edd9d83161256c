"""The edge's Redis side: the ports of ``api.app`` implemented on Redis (the run feed's relay
and its streams' state, the tenant limits, the erasers, the web page's sessions) and the
runs.questions admission consumer."""
