"""Focus layers: a nested sub-task whose entries close into one summary in its parent.

Opening a layer marks where it starts (the next number to be recorded); closing the innermost
one squashes everything recorded since into the agent's summary. A layer must always be
closable, so a closing summary of up to `Limits.layer_summary_tokens` is taken even when the
layer is shorter still.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from frs.checks import check_line, check_summary
from frs.env import Env
from frs.errors import InvalidRequest
from frs.model import FocusLayer, SessionId
from frs.mutation import mutation
from frs.ranges import span_name
from frs.squashes import LAYER_FIX, Squashed, squash_window


@dataclass(frozen=True, slots=True)
class LayerOpened:
    session_id: SessionId
    layer: FocusLayer
    revision: int


@dataclass(frozen=True, slots=True)
class LayerClosed:
    session_id: SessionId
    layer: FocusLayer  # as closed: closed_at set, and squash_n unless it was empty
    squashed: Squashed | None  # None: the layer had no entries
    revision: int


async def open_layer(
    env: Env,
    goal: str,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> LayerOpened:
    """Open a nested focus layer; messages recorded from now on belong to it."""
    goal = check_line(goal, "goal", env.limits, required=True)
    async with mutation(env, session_id, expected_revision) as m:
        layers = await m.tx.open_layers(m.session.id)
        if len(layers) >= env.limits.max_focus_depth:
            raise InvalidRequest(
                f"{len(layers)} focus layers are open; the limit is "
                f"{env.limits.max_focus_depth}. Close the innermost one first with "
                "frs_focus(action='close', summary=...)."
            )
        layer = FocusLayer(
            n=await m.tx.last_layer(m.session.id) + 1,
            depth=len(layers) + 1,
            goal=goal,
            start_ord=m.session.next_number,
            created_at=m.now,
        )
        await m.tx.open_layer(m.session.id, layer)
        m.change = f"opened focus layer {layer.n}: {goal}"
    return LayerOpened(m.session.id, layer, m.session.revision)


async def close_layer(
    env: Env,
    summary: str,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> LayerClosed:
    """Close the innermost layer, squashing all of it into one summary in its parent."""
    text = check_summary(summary, env.limits)
    async with mutation(env, session_id, expected_revision) as m:
        layers = await m.tx.open_layers(m.session.id)
        if not layers:
            raise InvalidRequest(
                "No focus layer is open. Open one with frs_focus(action='open', goal=...)."
            )
        inner, live = layers[-1], m.session.live_count
        first = (await m.tx.positions_of(m.session.id, [inner.start_ord]))[0]
        named = f"focus layer {inner.n} ({span_name('position', first, live)})"
        squash = None
        if first > live:
            m.change = f"closed empty focus layer {inner.n}"
        else:
            window = await m.tx.entries_at(m.session.id, first, live - first + 1)
            # No pairing check here: the layer's start is a boundary the agent chose, and a
            # result recorded inside the layer for a call made before it goes with the layer
            # (the call stays in the parent; an export answers it with a placeholder).
            allowance = env.limits.layer_summary_tokens
            squash = await squash_window(m, window, text, LAYER_FIX, allowance)
            m.change = f"squashed {named} into SQ.{squash.n}"
        n = squash.n if squash else None
        await m.tx.close_layer(m.session.id, inner.n, m.now, n)
        closed = replace(inner, closed_at=m.now, squash_n=n)
    session = m.session
    done = (
        Squashed(session.id, squash, first, named, session.live_count, session.revision)
        if squash is not None
        else None
    )
    return LayerClosed(session.id, closed, done, session.revision)
