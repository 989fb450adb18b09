"""SQLite's dialect (storage/dialect.py): the shared `$n` statements bind as written.

The contract suite runs every statement on both engines; this pins the one rewrite SQLite needs,
where a mistake would bind a parameter to the wrong place rather than fail.
"""

from __future__ import annotations

import sqlite3

from storage.dialect import SQLITE


class TestSqlitePlaceholders:
    def test_a_number_binds_its_parameter_wherever_and_however_often_it_stands(self) -> None:
        statement = SQLITE.sql("select $2, $10, $1, $2")
        with sqlite3.connect(":memory:") as conn:
            row = conn.execute(statement, [f"p{i}" for i in range(1, 11)]).fetchone()
        assert statement == "select ?2, ?10, ?1, ?2"
        assert row == ("p2", "p10", "p1", "p2")

    def test_matching_splits_many_values_into_statements_sqlite_can_bind(self) -> None:
        values = [f"id{i}" for i in range(1_234)]
        found = SQLITE.matching("call_id", 2, values)
        assert [len(params) for _, params in found] == [500, 500, 234]
        assert [v for _, params in found for v in params] == values
        condition, params = found[-1]
        with sqlite3.connect(":memory:") as conn:
            conn.execute("create table calls (session_id, call_id)")
            conn.executemany("insert into calls values ('s', ?)", [(v,) for v in values])
            rows = conn.execute(
                SQLITE.sql(f"select count(*) from calls where session_id = $1 and {condition}"),
                ["s", *params],
            ).fetchone()
        assert rows == (234,)
