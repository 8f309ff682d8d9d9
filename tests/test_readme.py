"""The README's agent example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_example_runs(tmp_path):
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Instrument your agent") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (tmp_path / "example.py").write_text(code)
    proc = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Agents read papers."
    assert (tmp_path / "run" / "events.jsonl").exists()
