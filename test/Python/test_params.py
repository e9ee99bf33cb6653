"""Program.params: setting it names every parameter of the model exactly
(a missing or unknown name is an error that names it, with the closest
names), with its shape; the attributes rtx.compile fixed cannot be set."""
import numpy as np
import pytest

import rtx
from rtx import models


@pytest.fixture(scope="module")
def program():
    return rtx.compile(models.mlp(), optimizer=rtx.SGD(lr=0.1))


def zeros_like_params(program):
    return {s.name: np.zeros(s.shape, np.float32) for s in program.param_specs}


def test_the_parameters_are_the_models(program):
    assert [(s.name, s.shape, s.dtype) for s in program.param_specs] == [
        ("fc1.weight", (64, 32), "f32"), ("fc1.bias", (64,), "f32"),
        ("fc2.weight", (10, 64), "f32"), ("fc2.bias", (10,), "f32")]


def test_a_misspelt_name_is_refused_with_the_closest_names(program):
    params = zeros_like_params(program)
    params["fc1.wieght"] = params.pop("fc1.weight")
    with pytest.raises(rtx.UnknownParameterError) as info:
        program.params = params
    message = str(info.value)
    assert message.startswith("the program has no parameter 'fc1.wieght'; did you mean 'fc1.weight'"), message
    assert "fc2.bias" in message                        # the parameters it has, listed
    # A KeyError (as a dict's lookup) and a ConfigError (ValueError), like the package's other errors.
    assert isinstance(info.value, KeyError) and isinstance(info.value, rtx.ConfigError)
    assert program.params is None                       # unchanged


def test_an_unknown_name_is_refused_even_with_every_parameter_given(program):
    params = zeros_like_params(program)
    params["lm_head.weight"] = np.zeros((2, 2), np.float32)
    with pytest.raises(KeyError, match="no parameter 'lm_head.weight'"):
        program.params = params


def test_a_missing_parameter_is_refused(program):
    params = zeros_like_params(program)
    del params["fc2.bias"]
    with pytest.raises(rtx.UnknownParameterError, match=r"params lacks parameter 'fc2.bias' \[10\] f32"):
        program.params = params


def test_a_wrong_shape_or_dtype_is_refused(program):
    params = zeros_like_params(program)
    params["fc2.weight"] = np.zeros((64, 10), np.float32)
    with pytest.raises(rtx.ConfigError, match=r"parameter 'fc2.weight' has shape \[64, 10\]; the program "
                                              r"expects \[10, 64\]"):
        program.params = params
    params = zeros_like_params(program)
    params["fc1.bias"] = np.zeros(64, np.int32)
    with pytest.raises(rtx.ConfigError, match="parameter 'fc1.bias' has dtype int32"):
        program.params = params
    with pytest.raises(rtx.ConfigError, match="params must be a mapping"):
        program.params = [np.zeros(1)]


def test_valid_parameters_are_taken_and_trained_from(program):
    params = {s.name: np.full(s.shape, 0.01, np.float64) for s in program.param_specs}
    program.params = params                             # f64 converted to the parameters' f32
    assert all(a.dtype == np.float32 for a in program.params.values())
    rng = np.random.default_rng(0)
    batch = {"x": rng.standard_normal((16, 32)).astype(np.float32),
             "labels": rng.integers(0, 10, 16).astype(np.int32)}
    result = program.train(batch, steps=1)
    assert set(result.params) == set(params)
    program.params = None                               # back to the IR's initializers
    assert program.params is None


@pytest.mark.parametrize("name, value", [("optimizer", rtx.AdamW()), ("parallel", rtx.ParallelConfig(dp=2)),
                                         ("micro_batch", 2), ("train_ir", "")])
def test_attributes_fixed_at_compile_time_cannot_be_set(program, name, value):
    before = getattr(program, name)
    with pytest.raises(AttributeError, match=f"Program.{name} was fixed by rtx.compile"):
        setattr(program, name, value)
    assert getattr(program, name) is before
