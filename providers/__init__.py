"""Wire protocols: each adapter maps the internal message model to a provider's
API and back, and classifies its errors. Adapters never retry.

    types.py      the internal message model (pure pydantic, safe in workflows)
    errors.py     ProviderError and the retryable/non-retryable classification
    openai.py     OpenAI-compatible chat completions over httpx (JSON and SSE)
    scripted.py   a scripted model behind a local OpenAI-compatible HTTP server

Nothing is imported here on purpose: workflow code imports ``core.messages``
inside the Temporal sandbox and must not pull in httpx through this package.
"""
