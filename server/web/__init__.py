"""The read-only web viewer, `frs-mcp web`: sessions, threads with their squashes, the audit
trail. It reads through `snapshot()` only and never writes (see `server.web.app`)."""
