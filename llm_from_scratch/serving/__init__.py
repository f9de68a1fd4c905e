"""The HTTP server: a FastAPI app over one `Translator`, a micro-batching queue that decodes
concurrent requests together, and the web page (`static/`). `programs/serve.py` runs it."""
