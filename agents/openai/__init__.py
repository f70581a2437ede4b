"""OpenAI-compatible endpoints under ``/v1``: any OpenAI client can use an agent profile as a
model, with the profile's tools, authority rules, scope, limits and budgets run here.

Modules: ``access`` (API key and throttle), ``errors`` (OpenAI's error shape), ``fields``
(reading request fields), ``steering`` (``tool_choice``, ``parallel_tool_calls``, the answer's
format), ``chat_request`` and ``responses_request`` (the two request bodies), ``support``
(what the profile's model server can honour), ``starts`` (starting a run for a request),
``outcome`` (a run's frames folded into what the client sees), ``approvals`` (calls held for
a person's approval, shown and decided), ``completions`` and ``responses`` (the two APIs'
bodies and stream events), ``endpoint`` (what every view shares), ``views`` (models, chat
completions), ``response_views`` (the Responses API) and ``urls``.
"""
