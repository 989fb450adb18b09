"""frs: the Focused Reasoning System domain; pure Python, no I/O.

An edge embeds it by giving an `Env` a store (``storage.SqliteStore``) and calling the use-case
functions the MCP tools call, each taking the `Env` first (`frs.sessions`, `frs.recording`,
`frs.squashes`, `frs.focus`, `frs.sources`, `frs.plans`, `frs.pages`, `frs.viewing`).
"""

from frs.aliases import AliasRef, Page, parse_alias
from frs.env import Env
from frs.errors import (
    AliasNotFound,
    AlreadyRestored,
    Conflict,
    CoveredByLaterSquash,
    FrsError,
    InvalidAlias,
    InvalidContent,
    InvalidRequest,
    NotFound,
    PositionOutOfRange,
    SessionNotFound,
    SplitsToolCall,
    StaleRevision,
    StoreConflict,
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreUnavailable,
    SummaryNotSmaller,
    SummaryTooLarge,
)
from frs.focus import LayerClosed, LayerOpened
from frs.model import (
    LANES,
    ROLES,
    Checkpoint,
    Limits,
    Message,
    NewMessage,
    Numbering,
    PlanStep,
    Role,
    Session,
    SessionId,
    Squash,
    ToolCall,
)
from frs.plans import PlanUpdated
from frs.ranges import AskedRange
from frs.recording import Recorded, Removed
from frs.sessions import LiveThread, SessionPage, SessionStarted, SquashLog
from frs.sources import SourceChanged, SourceStates
from frs.squashes import Restored, Squashed
from frs.views import ViewOptions

__all__ = [
    "LANES",
    "ROLES",
    "AliasNotFound",
    "AliasRef",
    "AlreadyRestored",
    "AskedRange",
    "Checkpoint",
    "Conflict",
    "CoveredByLaterSquash",
    "Env",
    "FrsError",
    "InvalidAlias",
    "InvalidContent",
    "InvalidRequest",
    "LayerClosed",
    "LayerOpened",
    "Limits",
    "LiveThread",
    "Message",
    "NewMessage",
    "NotFound",
    "Numbering",
    "Page",
    "PlanStep",
    "PlanUpdated",
    "PositionOutOfRange",
    "Recorded",
    "Removed",
    "Restored",
    "Role",
    "Session",
    "SessionId",
    "SessionNotFound",
    "SessionPage",
    "SessionStarted",
    "SourceChanged",
    "SourceStates",
    "SplitsToolCall",
    "Squash",
    "SquashLog",
    "Squashed",
    "StaleRevision",
    "StoreConflict",
    "StoreError",
    "StoreFull",
    "StoreReadOnly",
    "StoreUnavailable",
    "SummaryNotSmaller",
    "SummaryTooLarge",
    "ToolCall",
    "ViewOptions",
    "parse_alias",
]


# server/origin.py checks this line to tell our package from another of the same name.
__distribution__ = "frs-mcp"
