"""The `frs-mcp` command's entry point: `frs-mcp hook ...` goes straight to the hook command,
whose imports are the domain, the store and the gateway's wire readers; everything else goes to
`server.__main__`, which loads MCP, HTTP, the gateway and the viewer. A host runs its hooks at
every turn and waits for them, so their start-up is kept to what they use.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import server.origin  # noqa: F401
from server.cli.hooks import command as hook


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if hook.wanted(given):
        return hook.main(given)
    from server.__main__ import main as command

    return command(given)


if __name__ == "__main__":
    sys.exit(main())
