"""The HTTP edge: the FastAPI app, its routes, the websocket session, the OpenAI dialect."""
