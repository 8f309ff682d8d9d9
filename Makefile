# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# The editable install is strict: a tree of links under build/ that a folder named `callctx`
# beside a script cannot shadow. Links follow edits; a file added or removed needs a new
# install, so the install is stamped with the list of the package's files. setuptools announces
# the strict mode with a warning on every install (the folder it keeps under build/, said here):
# QUIET_INSTALL leaves that one out and shows any other.
QUIET_INSTALL := PYTHONWARNINGS='ignore:Editable installation'
FILES := $(shell find tracing projection components -type f ! -path '*/__pycache__/*' ! -name '*.pyc' | LC_ALL=C sort | cksum | cut -d' ' -f1)
INSTALLED := $(VENV)/.installed-$(FILES)

.PHONY: demo test extras browser lint typecheck bench clean

$(BIN)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	touch $@

$(INSTALLED): $(BIN)/.base pyproject.toml
	rm -f $(VENV)/.installed-*
	$(QUIET_INSTALL) $(BIN)/pip install --quiet -e . --config-settings editable_mode=strict
	touch $@

$(BIN)/.test: $(INSTALLED)
	$(QUIET_INSTALL) $(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=strict
	touch $@

demo: $(INSTALLED)
	$(BIN)/callctx demo

test: $(BIN)/.test $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

typecheck: $(BIN)/.test $(INSTALLED)
	$(BIN)/mypy

# Optional: the foreign tracing libraries and Arize Phoenix, each in .venv-extra/<name>.
# Their tests run when these exist and are skipped otherwise.
extras:
	bash .ci/extras

# Real-browser tests: installs Debian's chromium and chromedriver when missing, then runs tests/browser.
browser: $(BIN)/.test $(INSTALLED)
	bash .ci/browser
	$(BIN)/pytest tests/browser

bench: $(BIN)/.test $(INSTALLED)
	for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .venv-extra .pytest_cache .hypothesis build
