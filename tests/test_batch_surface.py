"""The surface of the batch commands that the other tests leave out.

* ``require``, the tests' way to import their reference libraries.
"""

import json

import pytest

from conftest import require


# ------------------------------------------- the tests' reference libraries
def test_require_skips_a_missing_module_or_fails_when_told_to(monkeypatch):
    missing = "gbc_core_tests_no_such_module"
    monkeypatch.delenv("GBC_CORE_REQUIRE_TEST_DEPS", raising=False)
    with pytest.raises(pytest.skip.Exception, match=missing):
        require(missing)
    assert require("json") is json
    monkeypatch.setenv("GBC_CORE_REQUIRE_TEST_DEPS", "1")
    with pytest.raises(ModuleNotFoundError, match=missing):
        require(missing)
    assert require("json") is json
