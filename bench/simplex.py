"""A dense simplex method for the calibration's linear program: pure Python, deterministic.

`minimize(cost, rows, floors)` finds w >= 0 minimizing cost·w subject to row·w >= floor for
every row. It solves the dual, maximize floors·y subject to Aᵀy <= cost and y >= 0: with every
cost positive, y = 0 is a feasible start, so no first phase is needed, and the primal w is read
off the final reduced costs of the slack columns. Tens of variables and a few thousand rows
take seconds; this is not a general-purpose solver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

_TOLERANCE = 1e-9
_BLAND_AFTER = 50  # degenerate pivots in a row before switching to Bland's rule (no cycling)


class Infeasible(ValueError):
    """No w satisfies every row (the dual is unbounded)."""


def minimize(
    cost: Sequence[float], rows: Sequence[Mapping[int, float]], floors: Sequence[float]
) -> list[float]:
    """The w >= 0 minimizing cost·w with row·w >= floor for each row (a row maps a variable's
    index to its coefficient). Every cost must be positive. Raises Infeasible."""
    if any(c <= 0 for c in cost):
        raise ValueError("every cost must be positive")
    tableau = _Tableau(cost, rows, floors)
    degenerate = 0
    while (entering := tableau.entering(bland=degenerate >= _BLAND_AFTER)) is not None:
        leaving = tableau.leaving(entering)
        if leaving is None:
            raise Infeasible("the constraints admit no solution")
        degenerate = degenerate + 1 if tableau.rhs[leaving] <= _TOLERANCE else 0
        tableau.pivot(leaving, entering)
    return tableau.primal()


class _Tableau:
    """The dual in canonical form: one row per primal variable, one column per primal row
    (the dual's y), then one slack column per primal variable."""

    def __init__(
        self, cost: Sequence[float], rows: Sequence[Mapping[int, float]], floors: Sequence[float]
    ) -> None:
        size = len(cost)
        self.columns = len(rows) + size
        self.matrix = [[0.0] * self.columns for _ in range(size)]
        for column, row in enumerate(rows):
            for variable, coefficient in row.items():
                self.matrix[variable][column] = float(coefficient)
        for variable in range(size):
            self.matrix[variable][len(rows) + variable] = 1.0
        self.rhs = [float(c) for c in cost]
        # Reduced costs of the maximization, negated: a negative one can still improve.
        self.reduced = [-float(f) for f in floors] + [0.0] * size
        self.basis = [len(rows) + variable for variable in range(size)]
        self.first_slack = len(rows)

    def entering(self, bland: bool) -> int | None:
        """The column to bring in: the most negative reduced cost (Dantzig), or under Bland's
        rule the first negative one; None at the optimum."""
        best, best_value = None, -_TOLERANCE
        for column, value in enumerate(self.reduced):
            if value < best_value:
                best, best_value = column, value
                if bland:
                    break
        return best

    def leaving(self, column: int) -> int | None:
        """The row whose basic variable leaves: the smallest ratio, ties to the smallest basic
        column; None if the column is unbounded."""
        best, best_key = None, (float("inf"), 0)
        for index, row in enumerate(self.matrix):
            entry = row[column]
            if entry > _TOLERANCE:
                key = (self.rhs[index] / entry, self.basis[index])
                if key < best_key:
                    best, best_key = index, key
        return best

    def pivot(self, leaving: int, column: int) -> None:
        pivot_row = self.matrix[leaving]
        scale = 1.0 / pivot_row[column]
        pivot_row = [value * scale for value in pivot_row]
        self.matrix[leaving] = pivot_row
        self.rhs[leaving] *= scale
        for index, row in enumerate(self.matrix):
            factor = row[column]
            if index != leaving and factor != 0.0:
                self.matrix[index] = [a - factor * b for a, b in zip(row, pivot_row, strict=True)]
                self.rhs[index] -= factor * self.rhs[leaving]
        factor = self.reduced[column]
        self.reduced = [a - factor * b for a, b in zip(self.reduced, pivot_row, strict=True)]
        self.basis[leaving] = column

    def primal(self) -> list[float]:
        """The primal solution: the reduced cost of each slack column, clipped at 0."""
        return [max(0.0, value) for value in self.reduced[self.first_slack :]]
