"""Provider endpoints (rows) to live ``Provider``s."""

from __future__ import annotations

from django.conf import settings

from orkestrel.core import Provider
from orkestrel.providers import AnthropicProvider, OllamaProvider, OpenAIProvider
from orkestrel.providers.base import HttpProviderOptions

from ..models import ProviderEndpoint
from .demo import DEMO_WORD_DELAY, create_demo_provider
from .http_pool import shared_client
from .overrides import Sampling

__all__ = ["provider_for"]


def provider_for(
    endpoint: ProviderEndpoint, model: str, sampling: Sampling | None = None
) -> Provider:
    """Build the provider an endpoint describes, for ``model`` (the key read from the env),
    sampling as a request asked (``sampling``)."""
    kind = endpoint.kind
    if kind == ProviderEndpoint.Kind.SCRIPTED:
        delay = getattr(settings, "ORKESTREL", {}).get("DEMO_WORD_DELAY", DEMO_WORD_DELAY)
        return create_demo_provider(delay=delay, name=f"{endpoint.name}/{model}")
    options: HttpProviderOptions = {
        "model": model,
        "base_url": endpoint.base_url,
        "api_key": endpoint.api_key(),
        "connect_timeout": endpoint.connect_timeout,
        "read_timeout": endpoint.read_timeout,
        "retries": endpoint.max_retries,
        "first_token_timeout": endpoint.first_token_timeout,
        "stream_idle_timeout": endpoint.stream_idle_timeout,
        "name": f"{endpoint.name}/{model}",
        "native_documents": endpoint.reads_documents(model),
    }
    client = shared_client(
        secure=not endpoint.base_url.startswith("http://"),
        connect=endpoint.connect_timeout,
        read=endpoint.read_timeout,
    )
    if client is not None:
        options["client"] = client
    extra = sampling.request_body(kind) if sampling is not None else None
    if extra:
        options["extra_body"] = extra
    if kind == ProviderEndpoint.Kind.OPENAI:
        return OpenAIProvider(**options)
    if kind == ProviderEndpoint.Kind.ANTHROPIC:
        return AnthropicProvider(**options)
    if kind == ProviderEndpoint.Kind.OLLAMA:
        return OllamaProvider(**options)
    raise ValueError(f"unknown provider kind {kind!r} for endpoint {endpoint.name!r}")
