"""Builds the MCP server: one database and one `frs.Env` per process, shared by every client."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as types
from mcp.server import MCPServer
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, GetPromptResult, InputRequiredResult

from server.internals import lowlevel_of
from server.mcp import live, prompts, resources, tools
from server.mcp.bounds import bounds_middleware
from server.mcp.deps import Deps, open_deps
from server.mcp.errors import validation_middleware
from server.mcp.scopes import Roots, scope_middleware
from server.mcp.stdio import DEFAULT_MAX_LINE_BYTES, guarded_stdio
from server.settings import APP_NAME, Settings, version

log = logging.getLogger(__name__)

TITLE = "FRS: Focused Reasoning System"
INSTRUCTIONS = """\
FRS is your working memory for a long task: record your reasoning thread (frs_record), read it \
back as a compact numbered view (frs_view_thread), and squash stretches you no longer need \
verbatim into your own summaries (frs_compress_range, frs_compress_last). Nothing is lost: every \
original stays retrievable with get_alias and any squash can be undone with frs_restore. This \
server cannot shorten the host's own transcript; the savings are in what you re-read (the view \
instead of raw output) and in what a runtime or a fresh chat builds from the view. When the host \
talks to its model through `frs-mcp gateway`, the gateway records the conversation for you (do \
not call frs_record for it) and sends your squashes to the model instead of what they replaced, \
from the next call on; a session it records says so in its view."""


class FrsServer(MCPServer[Deps]):
    """MCPServer whose stdio answers every line (see `server.mcp.stdio`)."""

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    async def run_stdio_async(self) -> None:
        async with guarded_stdio(self.max_line_bytes) as (read_stream, write_stream):
            lowlevel = self.lowlevel
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    @property
    def lowlevel(self) -> Server[Deps]:
        """The SDK's protocol-level server, for the handlers `MCPServer` has no hook for."""
        return lowlevel_of(self)

    async def list_resources(self) -> list[types.Resource]:
        listed = await super().list_resources()
        # frs://sessions is served by a template (for paging and the request context); list
        # its plain URI too, so a client that only lists resources finds it.
        sessions = types.Resource(
            uri=resources.SESSIONS_URI,
            name="sessions",
            title="Sessions",
            description="The sessions, newest first, a page at a time (see the template "
            f"{resources.SESSIONS_TEMPLATE}).",
            mime_type="application/json",
        )
        return [sessions, *listed]

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Deps, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        # mcp 2.3 answers an unknown name with an internal error (and a logged traceback);
        # the client asked for something that does not exist, which is invalid params.
        known = [prompt.name for prompt in await self.list_prompts()]
        if name not in known:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown prompt {name!r}; this server has {', '.join(known)}.",
            )
        return await super().get_prompt(name, arguments, context)


def build_server(settings: Settings, shared: Deps | None = None) -> MCPServer[Deps]:
    """A fresh server. With `shared`, every connection uses those deps (HTTP and SSE serve many
    clients from one process, and the SDK runs the lifespan once per SSE connection); without,
    the lifespan opens the database itself (stdio, in-process clients)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[Deps]) -> AsyncIterator[Deps]:
        if shared is not None:
            yield shared
            return
        async with open_deps(settings) as deps:
            yield deps

    mcp: FrsServer = FrsServer(
        APP_NAME,
        title=TITLE,
        version=version(),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=settings.log_level.upper(),  # type: ignore[arg-type]
        # The SDK's listen handler fans every change out to every tenant; `live.serve` serves
        # one per tenant instead.
        subscriptions=False,
    )
    mcp.max_line_bytes = settings.max_line_bytes
    mcp.middleware.append(bounds_middleware(settings.limits()))
    mcp.middleware.append(validation_middleware)
    mcp.middleware.append(scope_middleware(settings.scope, Roots(), settings.conversation))
    tools.register(mcp)
    resources.register(mcp)
    prompts.register(mcp)
    live.serve(mcp.lowlevel)
    return mcp
