"""Each reach of `server/internals.py` into mcp or uvicorn still finds what it takes.

A failure names the module, the reach, what is no longer there, and the release the reach was
written against beside the one installed: read the library's new code at that name and mend
`server/internals.py` alone. Nothing else of ours touches a library's internals
(`tests/test_architecture.py` checks every package for that).
"""

from __future__ import annotations

import asyncio
import inspect
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import uvicorn
from mcp.server import MCPServer
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from uvicorn.server import ServerState

import server
from server import Settings, build_server
from server.internals import (
    H11,
    H11_ATTRIBUTES,
    H11_OVERRIDES,
    UVICORN_OVERRIDES,
    WRITTEN_AGAINST,
    Uvicorn,
    announce_resource_list_changes,
    connection_of,
    discard_session,
    live_sessions,
    lowlevel_of,
)

SERVER = Path(server.__file__).parent


def changed(library: str, reach: str, what: str) -> str:
    """The failure's text: where to look, what changed, which releases."""
    return (
        f"server/internals.py, {reach}: {what}. It was written against {library} "
        f"{WRITTEN_AGAINST[library]}; {library} {version(library)} is installed. Read {library}'s "
        "code at that name and mend server/internals.py."
    )


class TestTheMcpReaches:
    def test_lowlevel_of_finds_the_server_an_mcpserver_runs(self) -> None:
        mcp: MCPServer[Any] = MCPServer("probe")
        found = getattr(mcp, "_lowlevel_server", None)
        assert isinstance(found, Server), changed(
            "mcp", "lowlevel_of", "MCPServer has no Server in `_lowlevel_server`"
        )
        assert lowlevel_of(mcp) is found

    def test_the_handshake_announces_resource_list_changes(self, tmp_path: Path) -> None:
        # Our server (resources registered), before `live.serve` bound the options.
        lowlevel = lowlevel_of(build_server(Settings(database=str(tmp_path / "probe.db"))))
        del lowlevel.create_initialization_options
        parameters = list(inspect.signature(Server.create_initialization_options).parameters)
        assert parameters[:2] == ["self", "notification_options"], changed(
            "mcp",
            "announce_resource_list_changes",
            "Server.create_initialization_options no longer takes the NotificationOptions "
            f"first (its parameters: {parameters})",
        )
        announce_resource_list_changes(lowlevel)
        options = lowlevel.create_initialization_options()
        resources = options.capabilities.resources
        listed = resources.list_changed if resources is not None else None
        assert listed is True, changed(
            "mcp",
            "announce_resource_list_changes",
            "the initialization options do not advertise resources.listChanged from "
            "NotificationOptions(resources_changed=True)",
        )

    def test_connection_of_finds_the_connection_behind_a_session_proxy(self) -> None:
        connection = SimpleNamespace(protocol_version="2025-11-25")
        try:
            session = ServerSession(SimpleNamespace(), connection)  # type: ignore[arg-type]
        except TypeError as exc:
            pytest.fail(
                changed("mcp", "connection_of", f"ServerSession(outbound, connection): {exc}")
            )
        assert connection_of(session) is connection, changed(
            "mcp", "connection_of", "ServerSession keeps no `_connection`"
        )

    async def test_live_sessions_and_discard_session_close_a_session_as_the_sdk_does(
        self,
    ) -> None:
        manager = StreamableHTTPSessionManager(app=Server("probe"))
        live = getattr(manager, "_server_instances", None)
        assert isinstance(live, dict), changed(
            "mcp", "live_sessions", "StreamableHTTPSessionManager has no `_server_instances` dict"
        )
        transport = StreamableHTTPServerTransport(mcp_session_id="probe")
        live["probe"] = transport
        assert live_sessions(manager) == {"probe": transport}
        discard = getattr(manager, "_discard_session", None)
        assert inspect.iscoroutinefunction(discard), changed(
            "mcp", "discard_session", "StreamableHTTPSessionManager has no async `_discard_session`"
        )
        await discard_session(manager, "probe", transport)
        assert "probe" not in live_sessions(manager), changed(
            "mcp", "discard_session", "`_discard_session` left the session among the live ones"
        )
        assert transport.is_terminated, changed(
            "mcp", "discard_session", "`_discard_session` did not terminate the transport"
        )


class TestTheUvicornReach:
    def test_the_h11_protocol_has_every_method_the_guarded_protocol_overrides(self) -> None:
        missing = [name for name in H11_OVERRIDES if not callable(getattr(H11, name, None))]
        assert missing == [], changed(
            "uvicorn", "H11_OVERRIDES", f"H11Protocol has no method {', '.join(missing)}"
        )

    async def test_an_h11_protocol_has_every_attribute_the_guarded_protocol_uses(self) -> None:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            raise AssertionError("never called")

        protocol = H11(
            config=uvicorn.Config(app),
            server_state=ServerState(),
            app_state={},
            _loop=asyncio.get_running_loop(),
        )
        missing = [name for name in H11_ATTRIBUTES if not hasattr(protocol, name)]
        assert missing == [], changed(
            "uvicorn", "H11_ATTRIBUTES", f"an H11Protocol has no attribute {', '.join(missing)}"
        )

    def test_the_server_has_every_method_the_serving_command_overrides(self) -> None:
        missing = [name for name in UVICORN_OVERRIDES if not callable(getattr(Uvicorn, name, None))]
        assert missing == [], changed(
            "uvicorn", "UVICORN_OVERRIDES", f"uvicorn.Server has no method {', '.join(missing)}"
        )
