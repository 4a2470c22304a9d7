"""A raw JSON-RPC MCP server (no SDK): newline-delimited JSON on stdin/stdout, hostile on demand.

python raw_mcp.py                # tools echo, pid, helper_pid, fail
python raw_mcp.py --bad-utf8     # every answer to tools/call follows a line with byte 0xff,
                                 # and echo's text holds an invalid byte inside the JSON string
python raw_mcp.py --stubborn     # ignores stdin EOF and SIGTERM, and starts a helper process
                                 # (as npx/uvx launchers do) that ignores SIGTERM too
python raw_mcp.py --leave-helper # starts such a helper, but exits on stdin EOF itself
python raw_mcp.py --secret-echo  # writes its argv to stderr at start (logs its flags)

``fail`` writes a traceback-like block to stderr (as the SDK's server does for an unexpected
exception), then answers with the SDK's generic "Error executing tool fail".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

ARGV = sys.argv[1:]
OUT = sys.stdout.buffer
HELPER: subprocess.Popen[bytes] | None = None

TOOLS = [
    {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
    }
    for name, description, properties in [
        ("echo", "Echo the text.", {"text": {"type": "string"}}),
        ("pid", "The server's process id.", {}),
        ("helper_pid", "The helper process's id.", {}),
        ("fail", "Fails with a cause written to stderr.", {"unit": {"type": "string"}}),
    ]
]


def send(message: dict[str, object], raw: bytes | None = None) -> None:
    data = raw if raw is not None else json.dumps(message).encode()
    OUT.write(data + b"\n")
    OUT.flush()


def text_result(request_id: object, text: str, *, error: bool = False) -> dict[str, object]:
    result = {"content": [{"type": "text", "text": text}], "isError": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def call_tool(request_id: object, name: str, arguments: dict[str, object]) -> None:
    if "--bad-utf8" in ARGV:
        OUT.write(b"\xff not a message\n")  # one invalid UTF-8 byte on its own line
    if name == "echo":
        message = text_result(request_id, str(arguments.get("text", "")))
        if "--bad-utf8" in ARGV:
            # The answer itself carries an invalid byte inside its JSON string.
            encoded = json.dumps(message).encode().replace(b"ECHO:", b"ECHO:\xfe")
            send(message, encoded)
            return
        send(message)
    elif name == "pid":
        send(text_result(request_id, str(os.getpid())))
    elif name == "helper_pid":
        send(text_result(request_id, str(HELPER.pid if HELPER else -1)))
    elif name == "fail":
        unit = arguments.get("unit")
        print("Traceback (most recent call last):", file=sys.stderr)
        print('  File "server.py", line 12, in convert', file=sys.stderr)
        print(f"ValueError: unknown unit {unit!r}; known: m, km, mile", file=sys.stderr, flush=True)
        send(text_result(request_id, "Error executing tool fail", error=True))
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "no tool"}})


def main() -> None:
    global HELPER
    if "--secret-echo" in ARGV:
        print(f"starting with {' '.join(ARGV)}", file=sys.stderr, flush=True)
    if "--stubborn" in ARGV or "--leave-helper" in ARGV:
        if "--stubborn" in ARGV:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        helper = "import signal as s, time; s.signal(s.SIGTERM, s.SIG_IGN); time.sleep(600)"
        HELPER = subprocess.Popen([sys.executable, "-c", helper], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL)  # fmt: skip
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            params = message["params"]
            call_tool(request_id, params["name"], params.get("arguments") or {})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    if "--stubborn" in ARGV:
        while True:  # stdin closed: stay anyway
            time.sleep(600)


if __name__ == "__main__":
    main()
