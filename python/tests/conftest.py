"""Fixtures for the tdsl package tests: the tdslc and libtdslrt of the build tree (or
TDSLC / TDSL_LIBRARY from the environment), and a helper that compiles a source text."""
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("TDSLC", os.path.join(ROOT, "build", "tdslc"))
os.environ.setdefault("TDSL_LIBRARY", os.path.join(ROOT, "build", "libtdslrt.so"))

import tdsl  # noqa: E402


@pytest.fixture
def build(tmp_path):
    """build(source, name="model", **options) -> an open tdsl.Model of that source."""
    models = []

    def make(source, name="model", **options):
        src = tmp_path / (name + ".tdsl")
        src.write_text(source)
        m = tdsl.load(tdsl.compile(src, **options))
        models.append(m)
        return m

    yield make
    for m in models:
        m.close()
