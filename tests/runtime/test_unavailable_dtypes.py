"""``tracegrad.bfloat16`` exists for programs that only name it, and refuses to make a
tensor, by name; ``cuda.is_bf16_supported()`` and ``xpu.is_available()`` say no."""
import pickle

import pytest

import tracegrad as tg

REFUSAL = r"tracegrad has no bfloat16 tensors: NumPy and CuPy cannot store bfloat16"


def test_bfloat16_is_a_named_dtype_that_makes_no_tensor():
    assert repr(tg.bfloat16) == "tracegrad.bfloat16" and tg.bfloat16.is_floating_point
    assert tg.bfloat16 != tg.float16 and {"bfloat16": tg.bfloat16}["bfloat16"] is tg.bfloat16
    assert pickle.loads(pickle.dumps(tg.bfloat16)) is tg.bfloat16
    with pytest.raises(TypeError, match=REFUSAL):
        tg.zeros(2, dtype=tg.bfloat16)
    x = tg.ones(2)
    with pytest.raises(TypeError, match=REFUSAL):
        x.to(tg.bfloat16)
    assert x.dtype == tg.float32


def test_programs_asking_for_bfloat16_or_xpu_hear_no():
    assert tg.cuda.is_bf16_supported() is False
    assert tg.xpu.is_available() is False and tg.xpu.device_count() == 0
