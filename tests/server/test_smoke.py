"""The server starts in-process and its tools answer through a real MCP client."""

from __future__ import annotations

from tests.conftest import Connect


class TestSmoke:
    async def test_lists_the_product_tools(self, connect: Connect) -> None:
        async with connect() as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "frs_session",
            "frs_record",
            "frs_view_thread",
            "frs_compress_last",
            "frs_compress_range",
            "get_alias",
            "frs_restore",
            "frs_plan",
        } <= names
