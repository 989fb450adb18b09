"""`frs.env.Env`, the one door into the domain: `for_scope` is the same Env for another caller,
sharing what every caller of one edge shares; `Frames` keeps the views' newest frames."""

from __future__ import annotations

from frs.env import Env, Frames
from frs.model import Scope, SessionId
from frs.views import Frame


class TestForScope:
    def test_it_is_another_callers_env_sharing_the_store_choices_and_frames(self) -> None:
        env = Env(store=object())  # type: ignore[arg-type]  # never reached here
        bobs = env.for_scope(Scope("bob", "twin", "c1"))
        assert (bobs.scope, env.scope) == (Scope("bob", "twin", "c1"), Scope())
        assert bobs.store is env.store
        assert bobs.chosen is env.chosen
        assert bobs.frames is env.frames
        assert (bobs.limits, bobs.clock, bobs.files) == (env.limits, env.clock, env.files)


class TestFrames:
    def test_it_keeps_the_newest_frames_only(self) -> None:
        frames = Frames(kept=2)
        made = [Frame((), (), ()) for _ in range(3)]
        for n, frame in enumerate(made):
            frames.keep((SessionId("s"), n), frame)
        assert frames.get((SessionId("s"), 0)) is None
        assert frames.get((SessionId("s"), 1)) is made[1]
        assert frames.get((SessionId("s"), 2)) is made[2]
