# The two commands a newcomer needs: `make run` and `make test`. Each creates the venv it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make run` needs only frs-mcp and what it imports (pip install -e .); `make test` adds the
# test extra (pytest, ruff, mypy, the clients the tests drive: ~140 packages, ~600 MB).
RUN_STAMP := $(VENV)/.installed-run
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)

.PHONY: run test lint-beside pytest preflight lint check bench bundle clean

# Installing writes only to stderr: under `make run`, stdout is the MCP protocol stream.
$(RUN_STAMP): pyproject.toml
	@echo "installing frs-mcp into $(VENV) (what running needs; make test adds its test extra)" >&2
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/python -m pip install --quiet --upgrade pip >&2
	@$(BIN)/python -m pip install --quiet -e . >&2
	@touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	@echo "installing frs-mcp with its test extra into $(VENV)" >&2
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/python -m pip install --quiet --upgrade pip >&2
	@$(BIN)/python -m pip install --quiet -e ".[test]" >&2
	@touch $(RUN_STAMP) $(STAMP)

## Serve MCP over stdio on the default database (~/.local/share/frs-mcp/frs.db).
run: $(RUN_STAMP)
	@$(BIN)/frs-mcp $(ARGS)

## Lint, type-check and run every test. First, before building anything, check that Python,
## Node.js and npm are there (the npm-based tests need them), and say how to install what is not.
## pytest runs on PYTEST_JOBS workers (pytest-xdist), each test file on one worker so that its
## module fixtures are built once; PYTEST_JOBS=0 runs it in this process. Lint runs beside
## pytest (mypy's minute on a fresh clone would otherwise come before it, and pytest leaves
## part of the two cores idle while its tests wait on processes and sockets); its output is
## kept in LINT_LOG and printed after pytest's, and either failing fails the target.
PYTEST_JOBS ?= 2
LINT_LOG = $(VENV)/lint.log
test: preflight
	@rm -f $(LINT_LOG)
	@$(MAKE) --no-print-directory -j2 lint-beside pytest; status=$$?; \
	  cat $(LINT_LOG) 2>/dev/null; exit $$status

lint-beside: $(STAMP)
	@echo "lint (ruff, ruff format, mypy) runs beside pytest; its output follows pytest's"
	@$(MAKE) --no-print-directory lint > $(LINT_LOG) 2>&1 || \
	  { echo "lint failed: its output is in $(LINT_LOG)"; exit 1; }

pytest: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_JOBS) --dist loadfile $(PYTEST_ARGS)

preflight:
	@sh scripts/preflight $(PYTHON)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## Benchmarks (issue 6): writes BENCHMARKS.md and bench/results.json; ARGS=--quick for a smoke run.
## Node packages (the MCP reference server, pinned in bench/package-lock.json) go to .cache/.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	@mkdir -p .cache/bench-node
	@if ! command -v npm >/dev/null; then \
	  echo "bench: npm not found; the sequential-thinking comparison is skipped"; \
	elif [ ! -d .cache/bench-node/node_modules ] || \
	     ! cmp -s bench/package-lock.json .cache/bench-node/package-lock.json; then \
	  cp bench/package.json bench/package-lock.json .cache/bench-node/ && \
	  (cd .cache/bench-node && npm ci --no-audit --no-fund --loglevel=error); \
	fi
	$(BIN)/python -m bench $(ARGS)

## The Claude Desktop bundle (MCPB, server type uv): manifest.json, pyproject.toml, README.md,
## LICENSE and the three packages (.mcpbignore keeps out the rest), packed by the MCPB CLI pinned
## in tests/clients into dist/frs-mcp-VERSION.mcpb.
bundle: preflight $(STAMP)
	@mkdir -p dist
	$(BIN)/python -m tests.clients.npm mcpb pack . dist/frs-mcp-$(VERSION).mcpb

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
