"""Parameter handling: exact conversion, float policy, clear errors."""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
import pytest

from privloss.samplers import (InsecureSeededSource, bernoulli, bernoulli_exp, discrete_gaussian,
                               discrete_laplace)
from privloss.samplers._params import to_rational

SOURCE = InsecureSeededSource(0)


@pytest.mark.parametrize("value,expected", [
    (3, Fraction(3)), (np.int64(7), Fraction(7)), ("10/3", Fraction(10, 3)),
    (" 0.1 ", Fraction(1, 10)), ("1e-3", Fraction(1, 1000)), (Fraction(2, 6), Fraction(1, 3)),
    (decimal.Decimal("2.5"), Fraction(5, 2)),
])
def test_exact_conversion(value, expected):
    assert to_rational("x", value) == expected


def test_floats_rejected_by_default_with_guidance():
    with pytest.raises(TypeError, match=r"float 0\.1.*Fraction or a string.*allow_float=True"):
        discrete_gaussian(0.1, source=SOURCE)
    with pytest.raises(TypeError, match="scale got the float"):
        discrete_laplace(np.float64(2.0), source=SOURCE)
    with pytest.raises(TypeError, match="p got the float"):
        bernoulli(0.5, source=SOURCE)


def test_floats_allowed_explicitly_mean_their_binary_value():
    assert to_rational("x", 0.1, allow_float=True) == Fraction(3602879701896397, 36028797018963968)
    assert isinstance(discrete_laplace(2.5, source=SOURCE, allow_float=True), int)
    assert discrete_gaussian(0.1, 5, source=SOURCE, allow_float=True).shape == (5,)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_rejected_even_when_floats_allowed(bad):
    with pytest.raises(ValueError, match="finite"):
        discrete_laplace(bad, source=SOURCE, allow_float=True)
    with pytest.raises(ValueError, match="finite"):
        to_rational("x", decimal.Decimal("NaN"))


@pytest.mark.parametrize("call,match", [
    (lambda: discrete_laplace(0, source=SOURCE), "scale must be a positive rational"),
    (lambda: discrete_laplace("-1/2", source=SOURCE), "scale must be a positive rational"),
    (lambda: discrete_gaussian("-1", source=SOURCE), "sigma_squared must be a non-negative"),
    (lambda: discrete_gaussian(1, proposal_scale=0, source=SOURCE), "proposal_scale"),
    (lambda: bernoulli("3/2", source=SOURCE), r"p must be a probability in \[0, 1\]"),
    (lambda: bernoulli_exp(-1, source=SOURCE), "gamma must be a non-negative"),
    (lambda: discrete_laplace("abc", source=SOURCE), "scale must be a rational number"),
    (lambda: discrete_laplace("1/0", source=SOURCE), "scale must be a rational number"),
    (lambda: discrete_laplace(2, -1, source=SOURCE), "size must be non-negative"),
])
def test_bad_values_give_clear_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call", [
    lambda: discrete_laplace(True, source=SOURCE),
    lambda: discrete_laplace(None, source=SOURCE),
    lambda: discrete_laplace([1], source=SOURCE),
    lambda: discrete_laplace(2, 2.0, source=SOURCE),
    lambda: discrete_laplace(2, source=7),
])
def test_bad_types_give_type_errors(call):
    with pytest.raises(TypeError):
        call()
