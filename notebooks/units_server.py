"""A small MCP server for the tutorial (07_mcp_and_typed_output.ipynb): unit conversions.

Written with the official mcp SDK's server API; nbagent starts it as a child process:

    MCPServer.stdio(sys.executable, ["units_server.py"])
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

METRES = {"m": 1.0, "km": 1000.0, "mile": 1609.344, "ft": 0.3048, "in": 0.0254, "cm": 0.01}

app = MCPServer("units")


@app.tool()
def convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a length between units (m, km, mile, ft, in, cm)."""
    for unit in (from_unit, to_unit):
        if unit not in METRES:
            raise ValueError(f"unknown unit {unit!r}; known: {', '.join(METRES)}")
    result = value * METRES[from_unit] / METRES[to_unit]
    return f"{value:g} {from_unit} = {result:.4g} {to_unit}"


@app.tool()
def units() -> list[str]:
    """The units convert knows."""
    return list(METRES)


if __name__ == "__main__":
    app.run()
