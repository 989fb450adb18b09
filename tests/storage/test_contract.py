"""The storage contract of tests/storage/contract.py, run on every backend `open_store` names."""

from tests.storage.contract import (
    TestCompactions,
    TestCountersAndRevisions,
    TestGatewayCalls,
    TestIsolation,
    TestMigrations,
    TestPlanMarksLayersSources,
    TestPositions,
    TestRuntimeItems,
    TestSessions,
    TestSquashAndRestore,
    TestToolCalls,
    TestTransactions,
    TestViewerReads,
    TestWindowsAndLanes,
)

__all__ = [
    "TestCompactions",
    "TestCountersAndRevisions",
    "TestGatewayCalls",
    "TestIsolation",
    "TestMigrations",
    "TestPlanMarksLayersSources",
    "TestPositions",
    "TestRuntimeItems",
    "TestSessions",
    "TestSquashAndRestore",
    "TestToolCalls",
    "TestTransactions",
    "TestViewerReads",
    "TestWindowsAndLanes",
]
