"""`frs-mcp hook HOST EVENT`: the command a host's own hook configuration runs.

`command` reads the hook's JSON from stdin and answers in the host's format; each host has a
module that reads its transcript into the gateway's units (`claude_code`, `codex`,
`gemini_cli`, `opencode`) and says what its events ask; `transcripts` reads only whole lines of
only the files a host keeps; `config` prints each host's hook configuration.
"""
