"""A scripted model given the real key refuses any other (as a real API does) and records what each request
carried, so a run inside the sandbox, whose harness holds only a placeholder, proves the proxy swapped it in."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from agentbox.scripted import ScriptedModel


def ask(model: ScriptedModel, **headers: str) -> int:
    request = urllib.request.Request(
        model.base_url + "/v1/chat/completions",
        method="POST",
        headers=headers,
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def keyed():
    with ScriptedModel(key="the-real-key") as model:
        yield model


def test_the_real_key_in_any_wire_header_is_answered_and_recorded_as_real(keyed):
    assert ask(keyed, Authorization="Bearer the-real-key") == 200
    assert ask(keyed, **{"x-api-key": "the-real-key"}) == 200
    assert keyed.transcript.credentials() == {"real"}


def test_a_placeholder_that_was_never_swapped_is_refused_like_a_wrong_key(keyed):
    assert ask(keyed, Authorization="Bearer sk-agentbox-placeholder") == 401
    assert ask(keyed, **{"x-api-key": "the-real-key"}, Authorization="Bearer sk-agentbox-placeholder") == 401
    assert keyed.transcript.credentials() == {"other"}


def test_a_request_without_a_key_is_answered_and_recorded_as_keyless(keyed):
    assert ask(keyed) == 200 and keyed.transcript.credentials() == {"none"}


def test_a_model_given_no_key_records_nothing_about_keys():
    with ScriptedModel() as model:
        assert ask(model, Authorization="Bearer anything") == 200 and model.transcript.credentials() == {None}
