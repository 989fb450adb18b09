"""`frs-mcp gateway`: a proxy between a host and its model API that records the conversation
and sends squashes instead of what they replaced.

`proxy` moves the bytes (any provider), `recorder` matches, rewrites and records through the
domain's wire rules (`frs.wire`) and `frs.conversations`, and each provider's wire format has
its own module (`anthropic`, `responses`, `chat`) and its class behind `wires.WireFormat`.
Where a request may go is `targets`, who it comes from `callers`.
"""
