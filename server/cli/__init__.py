"""The `frs-mcp` command (`server.__main__`): its options (`options`), serving MCP until
stopped (`serving`), `import` and `export`, and the log that never shows a session id
(`logs`). `web` and `gateway` are subcommands each of its own room (`server.web.command`,
`server.gateway.command`)."""
