"""OpenAI-compatible endpoints under ``/v1``: any OpenAI client can use an agent profile as a
model, with the profile's tools, authority rules, scope, limits and budgets run here.

Modules: ``access`` (API key and throttle), ``errors`` (OpenAI's error shape), ``fields``
(reading request fields), ``chat_request`` and ``responses_request`` (the two request bodies),
``starts`` (starting a run for a request), ``outcome`` (a run's frames folded into what the
client sees), ``completions`` and ``responses`` (the two APIs' bodies and stream events),
``endpoint`` (what every view shares), ``views`` (models, chat completions),
``response_views`` (the Responses API) and ``urls``.
"""
