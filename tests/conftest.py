from __future__ import annotations

import os

import pytest

from callctx import setup


@pytest.fixture
def runtime(tmp_path):
    rt = setup(tmp_path / "events.jsonl")
    yield rt
    rt.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI (``CI=true``) a skipped test is a failure: every extra environment must build
    and every suite must run, or a regression hides behind a skip."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI", "").lower() in ("1", "true", "yes") and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which must run every test: {reason}"


@pytest.fixture(scope="session")
def chdb_folder(tmp_path_factory):
    """The one chDB folder of the test run: chDB binds its engine to one folder per process, so
    every test that uses it shares this folder (each in tables of its own)."""
    pytest.importorskip("chdb")  # in the test extra: CI installs it, and counts a skip as a failure
    return tmp_path_factory.mktemp("chdb") / "db"


@pytest.fixture(scope="module")
def conn(chdb_folder):
    """A chDB connection to the run's folder, for one test module."""
    from callctx.store.connection import ChdbConnection

    c = ChdbConnection(chdb_folder)
    yield c
    c.close()
