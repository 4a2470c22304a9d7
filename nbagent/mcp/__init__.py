"""Tools from MCP servers (extra ``mcp``): ``from nbagent.mcp import MCPServer``.

- :mod:`.server`: :class:`MCPServer` (``.stdio(...)``, ``.http(...)``), its session and lifecycle
- :mod:`.tools`: MCP tools as ordinary nbagent tools; results as text (and images)
- :mod:`.config`: the ``mcpServers`` JSON format, and the kernel-wide servers of ``%agent mcp``

The official ``mcp`` SDK speaks the protocol; it is imported when a server starts.
"""

from __future__ import annotations

from .config import KERNEL_SERVERS, add_server, load_config, remove_server, servers_from_config
from .server import MCPServer, close_all
from .tools import MCPError, MCPText, MCPTool

__all__ = [
    "KERNEL_SERVERS",
    "MCPError",
    "MCPServer",
    "MCPText",
    "MCPTool",
    "add_server",
    "close_all",
    "load_config",
    "remove_server",
    "servers_from_config",
]
