"""The HTTP transports and what stands in front of them, for MCP (`transports`) and for the
viewer and the gateway alike: the listening socket (`listening`), the ASGI guards (`guards`:
health, Host and Origin, token, limits), the hosts a server may bind and be named by
(`hosts`), tenants and their tokens (`tenants`), each tenant's share of the caps (`shares`),
room at the session limit (`evictions`), what a socket may cost (`sockets`), what a body may
cost (`bodies`), and the one way all three servers serve (`serving`). It imports
nothing of the MCP edge: the app it guards comes from the caller."""
