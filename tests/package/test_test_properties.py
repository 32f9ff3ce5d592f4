"""A test property must be a value a pytest-xdist worker can send (tests/conftest.py): a numpy
scalar once stopped a worker in the middle of the drive page's tests."""

from __future__ import annotations

import numpy as np
import pytest


def test_a_numpy_scalar_property_is_refused_and_a_float_is_kept(record_property, request):
    refused = r"'ratio': float64 .*0\.9.* is not a plain .* \(pytest-xdist cannot send it\)"
    with pytest.raises(TypeError, match=refused):
        record_property("ratio", np.float64(0.9))
    record_property("ratio", float(np.float64(0.9)))
    assert request.node.user_properties == [("ratio", 0.9)]
