"""A ``/v1`` path no route serves answers OpenAI's error shape, so the SDK raises its typed
``NotFoundError`` with a message, not a bare 404 over an HTML page."""

from __future__ import annotations

import openai
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


async def test_an_endpoint_this_server_lacks_raises_the_sdks_not_found_error(sdk, demo):
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk().embeddings.create(model="demo", input="hello")
    assert caught.value.body == {
        "message": "Invalid URL (POST /v1/embeddings)",
        "type": "invalid_request_error",
        "param": None,
        "code": "unknown_url",
    }


async def test_a_sub_resource_this_server_lacks_raises_it_too(sdk, demo):
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk().responses.input_items.list("resp_123")
    assert caught.value.code == "unknown_url"
    assert "/v1/responses/resp_123/input_items" in caught.value.message
