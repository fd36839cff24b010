"""Optional MCP server exposing the eleven tools (install ``philont[mcp]``)."""
