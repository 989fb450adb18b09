"""The gateway's wire rules: a provider request as the gateway reads it, and what it may change.

A host sends its model the whole conversation on every call; the gateway (`server.gateway`)
reads each request into these terms and asks these rules what to send instead. They decide
from the request alone (and from the stored squashes handed in), with no store and no I/O, so
the same request always gives the same bytes and a prompt cache breaks once per change:

    requests.py     a request as messages of blocks with their spans in the body; a rewrite
                    plan; splices (`WireRequest`, `RewritePlan`, `apply_splices`)
    matching.py     a request's units (what gets recorded) and their keys: what is new
    anchors.py      the prompt-cache breakpoint a rewritten request adds on its newest
                    summary, within the provider's rules (`anchor`)
    rewriting.py    which live squashes a request carries instead of their originals, and
                    where their summaries go (`plan_rewrite`)
    nudges.py       the reminders to squash: when one is due, what it says
    compactions.py  how each host says it asks for a summary or has compacted (`find`)

Each module uses only those above it in this list. What is stored for a host's conversation
(`frs.host_threads`), whose it is (`frs.owners`) and the autopilot's batches (`frs.autopilot`)
are use cases over the store, and stay beside the thread's own in `frs`.
"""
