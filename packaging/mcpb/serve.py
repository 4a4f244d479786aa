"""The bundle's entry point: the pastchats MCP server over stdio, as `pastchats serve` runs it."""

from server.cli import cli

cli(["serve"], prog_name="pastchats")
