"""`frs.env.Chosen`: each tenant's connections have a table of their own, so one tenant opening
connections without end pushes out only its own choices, never another tenant's."""

from __future__ import annotations

from frs.env import Chosen
from frs.model import Scope, SessionId


def test_a_flood_of_one_tenants_connections_keeps_every_other_tenants_choices() -> None:
    chosen = Chosen(kept=3)
    bobs = Scope("bob", "twin", "connection-of-agent-one")
    chosen.choose(bobs, SessionId("bob-session"))
    for n in range(10):
        chosen.choose(Scope("alice", "flood", f"made-up-{n}"), SessionId(f"alice-{n}"))
    assert chosen.get(bobs) == "bob-session"
    assert chosen.get(Scope("alice", "flood", "made-up-0")) is None  # her own oldest went
    assert chosen.get(Scope("alice", "flood", "made-up-9")) == "alice-9"


def test_a_call_without_a_connection_keeps_nothing() -> None:
    chosen = Chosen(kept=3)
    chosen.choose(Scope("alice", "twin", None), SessionId("s"))
    assert chosen.get(Scope("alice", "twin", None)) is None
