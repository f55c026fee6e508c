"""Session fixtures: the C++ test programs and examples, built once (plain and with ASan)."""
from __future__ import annotations

from pathlib import Path

import pytest
from cpp_builds import ROOT, asan_defines, cmake_build, example_build


@pytest.fixture(scope="session")
def test_programs() -> Path:
    return cmake_build(ROOT / "tests" / "cpp", "tests")


@pytest.fixture(scope="session")
def test_programs_asan() -> Path:
    return cmake_build(ROOT / "tests" / "cpp", "tests-asan", *asan_defines())


@pytest.fixture(scope="session")
def plain_example() -> Path:
    return example_build("example", "cpp")


@pytest.fixture(scope="session")
def plain_example_asan() -> Path:
    return example_build("example-asan", "cpp", *asan_defines())


@pytest.fixture(scope="session")
def torch_example() -> Path:
    return example_build("example-torch", "cpp_torch", torch_prefix=True)
