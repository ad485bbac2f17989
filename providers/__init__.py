"""Wire protocols: each adapter maps the internal message model (``core/messages.py``) to a
provider's API and back, and classifies its errors (``core.errors.ErrorKind``). Adapters
never retry: Temporal does.

    factory.py     the provider of a tool-calling mode: openai.py, anthropic.py,
                   responses.py, or xml_tools.py over one of the first two
    http.py        what every HTTP adapter shares; wire.py, what their JSON handling shares
    errors.py      ProviderError and its classification

Nothing is imported here, so one module does not pull in the others. More: docs/providers.md.
"""
