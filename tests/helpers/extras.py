"""Where the extra environments live (built by ``make extras`` / ``.ci/extras``)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXTRA = Path(os.environ.get("CALLCTX_EXTRA_VENVS", ROOT / ".venv-extra"))


def venv_python(name: str) -> Path | None:
    venv = EXTRA / name
    python = venv / "bin" / "python"
    return python if (venv / ".ready").exists() and python.exists() else None
