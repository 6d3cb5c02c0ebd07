"""Dependencies point one way: exemplars reads feedback, feedback never imports exemplars."""

import re
from pathlib import Path

import feedback


def test_feedback_never_imports_exemplars():
    root = Path(feedback.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if re.search(r"^\s*(from|import)\s+exemplars\b", path.read_text(), re.MULTILINE)
    ]
    assert offenders == []
