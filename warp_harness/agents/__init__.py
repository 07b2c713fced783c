"""The harness for agents: an MCP server (``warp-harness mcp``) whose tools are in `tools`."""
