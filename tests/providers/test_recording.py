"""Record provider traffic once, replay it without a key or a server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, ConfigError, tool
from nbagent.errors import ReplayMissError
from nbagent.render import render_result_html
from nbagent.testing import ScriptedModel
from tests.support.scripted import Answer, ScriptedServer

NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}, 21 C"


def normalise_html(html: str) -> str:
    """Rendered HTML without what differs between two runs of the same thing: timings."""
    html = re.sub(r"\d+ min \d+ s|\d+(\.\d+)? (ms|s)\b", "<time>", html)
    return re.sub(r'id="[^"]*"', 'id=""', html)


def agent(url: str, **options: object) -> Agent:
    return Agent("openai:test-model", base_url=url, tools=[weather], **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [True, False])
def test_recorded_run_replays_to_the_same_output(
    tmp_path: Path, openai_server: ScriptedServer, stream: bool
) -> None:
    recording = tmp_path / "run.jsonl"
    live = agent(openai_server.url, record=recording, stream=stream).run_sync(
        "What is the weather in Paris?"
    )
    assert live.output == "The weather: sunny in Paris, 21 C."
    entries = [json.loads(line) for line in recording.read_text().splitlines()]
    assert len(entries) == 2 == len(openai_server.requests)
    assert entries[0]["request"]["body"] == openai_server.requests[0]
    if stream:  # the whole stream is kept, not just what the adapter needed
        assert entries[0]["response"]["body"].endswith("data: [DONE]\n\n")
        assert entries[0]["response"]["complete"] is True
    openai_server.close()  # from here on there is no model at all, and no key

    replayed = agent(NOWHERE, replay=recording, stream=stream).run_sync(
        "What is the weather in Paris?"
    )
    assert replayed.output == live.output
    assert [r.to_dict() for r in replayed.rounds] == [
        {**r.to_dict(), "duration_s": replayed.rounds[i].duration_s}
        | {"results": [dict(x, duration_s=y.duration_s) for x, y in zip(
            r.to_dict()["results"], replayed.rounds[i].results, strict=True)]}
        for i, r in enumerate(live.rounds)
    ]  # fmt: skip
    assert replayed.usage == live.usage
    assert normalise_html(render_result_html(replayed)) == normalise_html(render_result_html(live))


def test_changed_request_names_the_difference(
    tmp_path: Path, openai_server: ScriptedServer
) -> None:
    recording = tmp_path / "run.jsonl"
    agent(openai_server.url, record=recording).run_sync("What is the weather in Paris?")
    replaying = agent(NOWHERE, replay=recording)
    with pytest.raises(ReplayMissError) as caught:
        replaying.run_sync("What is the weather in Rome?")
    message = str(caught.value)
    assert "POST /v1/chat/completions" in message
    assert "line 1" in message
    assert 'body.messages[0].content: recorded "What is the weather in Paris?", now ' in message
    assert '"What is the weather in Rome?"' in message
    assert "replay_fallback=True" in message
    # The failed run left a valid, stored history behind.
    assert replaying.last_result is not None
    assert replaying.last_result.stop_reason == "error"


def test_changed_tool_schema_is_named(tmp_path: Path, openai_server: ScriptedServer) -> None:
    recording = tmp_path / "run.jsonl"
    agent(openai_server.url, record=recording).run_sync("What is the weather in Paris?")

    @tool(name="weather")
    def weather_in(city: str, unit: str = "C") -> str:
        """Current weather for a city."""
        return "sunny"

    changed = Agent("openai:test-model", base_url=NOWHERE, tools=[weather_in], replay=recording)
    with pytest.raises(ReplayMissError, match=r"body\.tools\[0\]\.function\.parameters"):
        changed.run_sync("What is the weather in Paris?")


def test_fallback_asks_the_live_model(tmp_path: Path, openai_server: ScriptedServer) -> None:
    recording = tmp_path / "run.jsonl"
    agent(openai_server.url, record=recording).run_sync("What is the weather in Paris?")
    assert len(openai_server.requests) == 2
    replaying = agent(openai_server.url, replay=recording, replay_fallback=True)
    assert "Paris" in replaying.run_sync("What is the weather in Paris?").output
    assert len(openai_server.requests) == 2  # answered from the recording
    replaying.reset()
    assert "sunny in Rome" in replaying.run_sync("What is the weather in Rome?").output
    assert len(openai_server.requests) == 4  # a miss went to the server


def test_replay_with_fallback_can_extend_its_own_recording(
    tmp_path: Path, openai_server: ScriptedServer
) -> None:
    recording = tmp_path / "run.jsonl"
    agent(openai_server.url, record=recording).run_sync("What is the weather in Paris?")
    extending = agent(openai_server.url, replay=recording, replay_fallback=True, record=recording)
    extending.run_sync("What is the weather in Paris?")
    assert len(openai_server.requests) == 2  # answered from the recording, not re-recorded
    extending.reset()
    extending.run_sync("What is the weather in Rome?")
    assert len(openai_server.requests) == 4
    assert len(recording.read_text().splitlines()) == 4
    openai_server.close()
    fresh = agent(NOWHERE, replay=recording)
    assert "sunny in Rome" in fresh.run_sync("What is the weather in Rome?").output


def test_ids_invented_for_calls_do_not_break_replay(
    tmp_path: Path, openai_server: ScriptedServer
) -> None:
    openai_server.omit_call_ids = True  # nbagent makes up a random id per call
    recording = tmp_path / "run.jsonl"
    live = agent(openai_server.url, record=recording).run_sync("What is the weather in Oslo?")
    invented = live.rounds[0].calls[0].id
    assert re.fullmatch(r"call_[0-9a-f]{16}", invented)
    assert openai_server.requests[1]["messages"][-1]["tool_call_id"] == invented
    replayed = agent(NOWHERE, replay=recording).run_sync("What is the weather in Oslo?")
    assert replayed.rounds[0].calls[0].id != invented  # a new random id, same conversation
    assert replayed.output == live.output == "The weather: sunny in Oslo, 21 C."


@pytest.mark.parametrize("stream", [True, False])
def test_ollama_ndjson_run_replays(
    tmp_path: Path, openai_server: ScriptedServer, stream: bool
) -> None:
    """Another adapter and framing (NDJSON, calls without ids) through the same transports."""
    recording = tmp_path / "ollama.jsonl"
    live = Agent(
        "ollama:llama3",
        base_url=openai_server.root,
        tools=[weather],
        record=recording,
        stream=stream,
    ).run_sync("What is the weather in Lima?")
    assert live.output == "The weather: sunny in Lima, 21 C."
    assert re.fullmatch(r"call_[0-9a-f]{16}", live.rounds[0].calls[0].id)
    if stream:
        first = json.loads(recording.read_text().splitlines()[0])
        assert first["response"]["body"].endswith('"eval_count": 7}\n')
    openai_server.close()
    replayed = Agent(
        "ollama:llama3",
        base_url=NOWHERE.removesuffix("/v1"),
        tools=[weather],
        replay=recording,
        stream=stream,
    ).run_sync("What is the weather in Lima?")
    assert replayed.output == live.output
    assert replayed.usage == live.usage


def test_gzip_responses_are_recorded_as_text(tmp_path: Path, openai_server: ScriptedServer) -> None:
    openai_server.gzip = True
    recording = tmp_path / "run.jsonl"
    live = agent(openai_server.url, record=recording).run_sync("What is the weather in Oslo?")
    entries = [json.loads(line) for line in recording.read_text().splitlines()]
    assert entries[0]["response"]["body_encoding"] == "text"
    assert "content-encoding" not in {k.lower() for k in entries[0]["response"]["headers"]}
    replayed = agent(NOWHERE, replay=recording).run_sync("What is the weather in Oslo?")
    assert replayed.output == live.output


def test_identical_requests_replay_in_recorded_order(
    tmp_path: Path, openai_server: ScriptedServer
) -> None:
    answers = iter(["first answer", "second answer"])
    openai_server.script = lambda body: Answer(next(answers))
    recording = tmp_path / "run.jsonl"
    recorder = Agent("openai:test-model", base_url=openai_server.url, tools=[], record=recording)
    assert recorder.run_sync("Say something").output == "first answer"
    recorder.reset()
    assert recorder.run_sync("Say something").output == "second answer"

    replayer = Agent("openai:test-model", base_url=NOWHERE, tools=[], replay=recording)
    outputs = []
    for _ in range(3):
        replayer.reset()
        outputs.append(replayer.run_sync("Say something").output)
    assert outputs == ["first answer", "second answer", "second answer"]


def test_start_recording_on_an_existing_agent(
    tmp_path: Path, openai_server: ScriptedServer
) -> None:
    recording = tmp_path / "later.jsonl"
    chatty = agent(openai_server.url)
    chatty.run_sync("What is the weather in Paris?")
    chatty.start_recording(recording)
    chatty.run_sync("What is the weather in Lima?")
    entries = [json.loads(line) for line in recording.read_text().splitlines()]
    assert len(entries) == 2
    assert entries[0]["request"]["body"]["messages"][-1]["content"].endswith("Lima?")
    chatty.stop_recording()
    chatty.run_sync("What is the weather in Kyiv?")
    assert len(recording.read_text().splitlines()) == 2


def test_bad_uses_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="need a model string"):
        Agent(ScriptedModel(), record=tmp_path / "x.jsonl")
    with pytest.raises(ConfigError, match="makes no requests"):
        Agent("local", replay=tmp_path / "x.jsonl")
    with pytest.raises(ConfigError, match="makes no requests"):  # spelt as get_provider reads it
        Agent(" Scripted", record=tmp_path / "x.jsonl")
    with pytest.raises(ConfigError, match="no recording at"):
        Agent("openai:test-model", base_url=NOWHERE, replay=tmp_path / "missing.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"request": {}}\n')
    with pytest.raises(ConfigError, match="line 1 is not a recorded exchange"):
        Agent("openai:test-model", base_url=NOWHERE, replay=broken)


NOTEBOOK_CELLS = [
    """\
from nbagent import Agent, tool

@tool
def weather(city: str) -> str:
    \"\"\"Current weather for a city.\"\"\"
    return f"sunny in {city}, 21 C"

agent = Agent("openai:test-model", base_url=BASE_URL, tools=[weather], **MODE)""",
    'agent.run_sync("What is the weather in Paris?")',
    'agent.run_sync("And in Rome?").output',
]


def execute_notebook(base_url: str, mode: dict[str, str]) -> list[list[dict[str, Any]]]:
    import nbformat
    from nbclient import NotebookClient

    setup = f"BASE_URL = {base_url!r}\nMODE = {mode!r}"
    cells = [nbformat.v4.new_code_cell(setup)]
    cells += [nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS]
    notebook = nbformat.v4.new_notebook(cells=cells)
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    return [cell["outputs"] for cell in notebook.cells[2:]]


@pytest.mark.kernel
def test_recorded_notebook_replays_to_the_same_rendered_output(
    tmp_path: Path, openai_server: ScriptedServer
) -> None:
    recording = tmp_path / "notebook.jsonl"
    recorded = execute_notebook(openai_server.url, {"record": str(recording)})
    openai_server.close()
    replayed = execute_notebook(NOWHERE, {"replay": str(recording)})

    (live_run,), (live_answer,) = recorded
    (replay_run,), (replay_answer,) = replayed
    html = live_run["data"]["text/html"]
    assert "sunny in Paris, 21 C" in html and "weather" in html
    assert normalise_html(replay_run["data"]["text/html"]) == normalise_html(html)
    assert replay_answer["data"] == live_answer["data"]
    assert "sunny in Rome" in live_answer["data"]["text/plain"]
