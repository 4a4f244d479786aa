"""What the CLI, the MCP server and the page share, free of any of them (no click here): opening the
store (`opening`), importing, embedding, doctor's checks, the clients' configuration, progress, and
sync with the live watcher (`sync`)."""
