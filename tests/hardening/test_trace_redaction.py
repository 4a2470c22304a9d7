"""Item 5: no piece of a key in any OpenTelemetry span, content recording on or off.

A tool error holding the key reached the tool span's status description even with
content recording off; with ``NBAGENT_OTEL_CONTENT=1`` the key was in the prompt,
the arguments, the result and the error. Spans now go through the history's
redaction. Each run happens in a real child process (its own tracer provider)
against a loopback server; spans are read back from the SDK's in-memory exporter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hardening.faults import run_child
from tests.hardening.test_key_leaks import KEY, SHAPED, assert_no_fragment

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8J9k0"

SCENARIO = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import WireServer

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
KEY, SHAPED, TOKEN = {KEY!r}, {SHAPED!r}, {TOKEN!r}

@tool(register=False)
def fetch_account(token: str) -> str:
    '''Looks an account up (and fails naming the token, as careless code does).'''
    raise PermissionError(f"token {{token}} refused; configured key was {{KEY}}")

@tool(register=False)
def echo(text: str) -> str:
    '''Returns the text.'''
    return f"echo: {{text}}"

@tool(register=False)
def leaky() -> str:
    '''Raises an error whose text starts with a token.'''
    raise RuntimeError(f"{{TOKEN}}: rejected")

def script(body):
    if body["messages"][-1]["role"] == "user":
        return Answer(
            f"I will use {{KEY}} and {{SHAPED}}",
            [("fetch_account", {{"token": KEY}}), ("echo", {{"text": f"{{SHAPED}} {{KEY[:14]}}"}}),
             ("leaky", {{}})],
        )
    return Answer(f"Done; the key was {{KEY}} and {{SHAPED}}.")

server = WireServer(responder=ScriptedReplies(script))
agent = Agent(
    "openai:gpt-test", base_url=server.url + "/v1", api_key=KEY,
    env={{"NBAGENT_OTEL_CONTENT": {content!r}}}, tools=[fetch_account, echo, leaky], store=None,
)
result = agent.run_sync(f"My key is {{KEY}}; also {{SHAPED}}. Fetch the account.")
server.close()
spans = []
for span in exporter.get_finished_spans():
    spans.append({{
        "name": span.name,
        "attributes": {{k: str(v) for k, v in (span.attributes or {{}}).items()}},
        "status": span.status.description or "",
    }})
done(ok=[r.ok for r in result.rounds[0].results], spans=spans)
"""


@pytest.mark.parametrize("content", ["0", "1"])
def test_no_key_fragment_reaches_a_span(tmp_path: Path, content: str):
    code = SCENARIO.format(KEY=KEY, SHAPED=SHAPED, TOKEN=TOKEN, content=content)
    facts = run_child(code, tmp_path / "home")
    assert facts["ok"] == [False, True, False]
    spans = facts["spans"]
    tools = {s["attributes"].get("gen_ai.tool.name"): s for s in spans}
    failed = tools["fetch_account"]
    assert failed["status"].startswith("PermissionError: token [redacted]")
    assert failed["attributes"]["error.type"] == "PermissionError"
    assert tools["leaky"]["attributes"]["error.type"] == "RuntimeError"
    text = repr(spans)
    for secret in (KEY, SHAPED, TOKEN):
        assert_no_fragment("the spans", text, secret)
    if content == "1":  # the content is there, redacted
        assert (
            tools["echo"]["attributes"]["gen_ai.tool.call.result"] == "echo: [redacted] [redacted]"
        )
        assert "[redacted]" in failed["attributes"]["gen_ai.tool.call.arguments"]
        assert "[redacted]" in text and "Fetch the account." in text
