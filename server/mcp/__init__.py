"""The MCP edge: the server the SDK runs (`app`), its tools, resources and prompt, what every
handler reaches (`deps`), who is calling (`scopes`), live updates (`live`, `events`), and what
guards the protocol itself (`bounds`, `errors`, `stdio`). It knows no transport but stdio: the
HTTP transports serve it from `server.http`."""
