"""The HTTP edge: FastAPI app, routes, websocket sessions, relay, auth, limits, admission."""
