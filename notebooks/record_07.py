"""Records the model traffic 07_mcp_and_typed_output.ipynb replays (no key needed to run it).

    python notebooks/record_07.py

The "model" is the test suite's scripted OpenAI-compatible loopback server
(tests/support/scripted.py), answering as gpt-4o-mini would; the tutorial then
replays the exchange with ``Agent("openai:gpt-4o-mini", replay=...)``. Keep the
prompts and options here identical to the notebook's, or replay will not match.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent
sys.path.insert(0, str(NOTEBOOKS.parent))

from pydantic import BaseModel  # noqa: E402

from nbagent import Agent  # noqa: E402
from nbagent.mcp import MCPServer  # noqa: E402
from tests.support.scripted import Answer, ScriptedReplies  # noqa: E402
from tests.support.servers import WireServer  # noqa: E402

RECORDING = NOTEBOOKS / "recordings" / "07_mcp_and_typed_output.jsonl"
MARATHON = "How many kilometres is a marathon (26.2 miles)?"
CITIES_TEXT = (
    "Oslo has about 709,000 inhabitants and is the capital of Norway. Bergen, on the west "
    "coast, has some 291,000. Lisbon, Portugal's capital, is home to roughly 545,000 people."
)
EXTRACT = f"List every city in this text with its country and population:\n\n{CITIES_TEXT}"
CITIES = [
    {"name": "Oslo", "country": "Norway", "population": 709000},
    {"name": "Bergen", "country": "Norway", "population": 291000},
    {"name": "Lisbon", "country": "Portugal", "population": 545000},
]


class City(BaseModel):
    name: str
    country: str
    population: int


def script(body: dict) -> Answer:
    last = body["messages"][-1]
    if "response_format" in body:
        return Answer(json.dumps({"value": CITIES}))
    if last["role"] == "user":
        return Answer("", [("convert", {"value": 26.2, "from_unit": "mile", "to_unit": "km"})])
    return Answer(f"A marathon is {last['content'].split('= ')[-1]}: about 42.2 kilometres.")


def main() -> None:
    RECORDING.unlink(missing_ok=True)
    server = WireServer(responder=ScriptedReplies(script))
    units = MCPServer.stdio(sys.executable, [str(NOTEBOOKS / "units_server.py")], name="units")
    try:
        options = {"base_url": server.url + "/v1", "api_key": "sk-recording", "store": None}
        agent = Agent("openai:gpt-4o-mini", tools=[units], record=RECORDING, **options)
        print(agent.run_sync(MARATHON).output)
        agent = Agent("openai:gpt-4o-mini", tools=[], record=RECORDING, **options)
        print(agent.run_sync(EXTRACT, output_type=list[City]).output)
    finally:
        units.close()
        server.close()
    print("wrote", RECORDING.relative_to(NOTEBOOKS.parent))


if __name__ == "__main__":
    main()
