"""The fault-injection families name tests that exist (a renamed test drops no family)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.hardening.faults import FAMILIES

HERE = Path(__file__).resolve().parent


def test_every_family_names_existing_tests():
    missing = []
    for family, node_ids in FAMILIES.items():
        assert node_ids, family
        for node_id in node_ids:
            path, _, name = node_id.partition("::")
            tree = ast.parse((HERE / path).read_text(encoding="utf-8"))
            defined = {
                n.name
                for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            if name not in defined:
                missing.append((family, node_id))
    assert missing == []
