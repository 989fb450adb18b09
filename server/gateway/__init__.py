"""`frs-mcp gateway`: a proxy between a host and its model API that records the conversation
and sends squashes instead of what they replaced.

`proxy` moves the bytes (any provider), `recorder` matches, rewrites and records through the
domain (`frs.matching`, `frs.rewriting`, `frs.conversations`), and each provider's wire format
has its own module (`anthropic`) behind `wires.WireFormat`. Where a request may go is
`targets`, who it comes from `callers`.
"""
