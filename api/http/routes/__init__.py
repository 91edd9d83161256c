"""The API's routes, one module per resource; each exposes a module-level ``router``."""
