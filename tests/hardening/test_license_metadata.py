"""Item 20: the license is an SPDX expression, the form setuptools will require.

The table form (``license = { text = "MIT" }``) makes setuptools 77+ warn that builds
fail after 2027-02-18. The string form needs setuptools 77 to build, so the build
requirement says so too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.licenses import canonicalize_license_expression
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib", reason="tomllib is in Python 3.11+")

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_license_is_an_spdx_string_and_the_build_needs_a_setuptools_that_reads_it():
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    license = config["project"]["license"]
    assert isinstance(license, str), f"project.license is the deprecated table form: {license!r}"
    assert canonicalize_license_expression(license) == license == "MIT"
    (setuptools,) = [
        Requirement(r) for r in config["build-system"]["requires"] if r.startswith("setuptools")
    ]
    assert "76.9" not in setuptools.specifier and "77.0" in setuptools.specifier
