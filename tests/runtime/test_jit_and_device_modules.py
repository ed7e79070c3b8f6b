"""tracegrad.jit's TorchScript entry points (the Python code itself), tracegrad.cpu,
set_flush_denormal and get_device_module."""
import pytest

import tracegrad as tg


def test_script_and_trace_give_the_function_or_module_itself():
    def f(x):
        return x * 2 + 1

    assert tg.jit.script(f) is f
    m = tg.nn.Linear(2, 3)
    assert tg.jit.script(m) is m
    assert tg.jit.trace(m, tg.ones(1, 2)) is m and tg.jit.trace_module(m, {"forward": tg.ones(1, 2)}) is m
    assert tg.jit.freeze(m) is m and tg.jit.optimize_for_inference(m) is m
    assert not tg.jit.is_scripting() and not tg.jit.is_tracing()


def test_script_module_subclasses_are_modules():
    """PyTorch's custom_lstms.py style: a ``jit.ScriptModule`` subclass with a
    ``@jit.script_method`` forward is an nn.Module with parameters, called as one."""
    class Scale(tg.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.w = tg.nn.Parameter(tg.tensor([2.0, 3.0]))

        @tg.jit.script_method
        def forward(self, x):
            return x * self.w

    m = Scale()
    assert isinstance(m, tg.nn.Module) and [p.shape for p in m.parameters()] == [(2,)]
    out = m(tg.ones(2))
    out.sum().backward()
    assert out.tolist() == [2.0, 3.0] and m.w.grad.tolist() == [1.0, 1.0]


def test_marker_decorators_with_and_without_arguments():
    class M(tg.nn.Module):
        @tg.jit.ignore
        def a(self):
            return 1

        @tg.jit.ignore(drop=True)
        def b(self):
            return 2

        @tg.jit.unused
        def c(self):
            return 3

        @tg.jit.export
        def d(self):
            return 4

    m = M()
    assert (m.a(), m.b(), m.c(), m.d()) == (1, 2, 3, 4)


def test_fork_runs_the_call_and_wait_gives_its_value():
    calls = []

    def g(x, k=1):
        calls.append(x)
        return x + k

    fut = tg.jit.fork(g, 2, k=3)
    assert calls == [2] and fut.done() and tg.jit.wait(fut) == 5 and fut.wait() == 5
    assert tg.jit.annotate(list, [1]) == [1] and tg.jit.Attribute(3, int) == 3


@pytest.mark.parametrize("call", [lambda: tg.jit.save(tg.nn.Linear(1, 1), "x.pt"), lambda: tg.jit.load("x.pt")])
def test_torchscript_archives_are_refused_by_name(call):
    with pytest.raises(NotImplementedError, match="no TorchScript.*tracegrad.save"):
        call()


def test_cpu_device_module():
    assert tg.cpu.is_available() and tg.cpu.device_count() == 1 and tg.cpu.current_device() == "cpu"
    tg.cpu.synchronize()
    with tg.cpu.stream(tg.cpu.current_stream()):
        pass
    assert tg.get_device_module("cpu") is tg.cpu and tg.get_device_module(tg.device("cpu")) is tg.cpu
    assert tg.get_device_module("cuda") is tg.cuda
    assert tg.get_device_module() is (tg.cuda if tg.cuda.is_available() else tg.cpu)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        tg.get_device_module("foo")


def test_flush_denormal_cannot_be_set():
    assert tg.set_flush_denormal(True) is False
    assert tg.set_flush_denormal(False) is True
    tiny = tg.tensor([1e-40], dtype=tg.float32)
    assert (tiny * 1.0).item() != 0.0  # denormals are kept
