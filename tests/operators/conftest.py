"""Fixtures of the operator tests."""

from __future__ import annotations

import pytest

from fieldrank import _core

from tests.helpers import SUPPORTED_KERNEL_VARIANTS


@pytest.fixture(params=SUPPORTED_KERNEL_VARIANTS)
def variant(request):
    """Runs a test once per kernel variant this CPU supports, restoring the default after."""
    before = _core.kernel_variant()
    _core.set_kernel_variant(request.param)
    yield request.param
    _core.set_kernel_variant(before)
