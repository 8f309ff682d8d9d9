# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test extras browser lint bench clean

$(BIN)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(BIN)/.test: $(BIN)/.base
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/.base
	$(BIN)/callctx demo

test: $(BIN)/.test
	$(BIN)/ruff check .
	$(BIN)/pytest

# Optional: the foreign tracing libraries and Arize Phoenix, each in .venv-extra/<name>.
# Their tests run when these exist and are skipped otherwise.
extras:
	bash .ci/extras

# Real-browser tests: installs Debian's chromium and chromedriver when missing, then runs tests/browser.
browser: $(BIN)/.test
	bash .ci/browser
	$(BIN)/pytest tests/browser

bench: $(BIN)/.test
	for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .venv-extra .pytest_cache .hypothesis
