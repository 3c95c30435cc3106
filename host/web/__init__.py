"""The loopback web server both the Pinboard and MCP's HTTP transport run on, and its request checks."""
