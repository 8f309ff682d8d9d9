from __future__ import annotations

import os

import pytest
import yaml

from callctx import setup


@pytest.fixture
def runtime(tmp_path):
    rt = setup(tmp_path / "events.jsonl")
    yield rt
    rt.close()


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same rules, faster


def parse(text: str):
    """The rendered tree as data (asserting it is valid YAML on the way)."""
    return yaml.load(text, Loader=_Loader) if text else []


def find(items, function):
    """All nodes named ``function`` in a parsed tree, depth first."""
    out = []
    for item in items or []:
        if item.get("function") == function:
            out.append(item)
        out.extend(find(item.get("children"), function))
    return out


def here_line(text: str) -> str:
    lines = [line for line in text.splitlines() if "# you are here" in line]
    assert len(lines) == 1, text
    return lines[0]


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
