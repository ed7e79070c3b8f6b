"""``tracegrad.autograd``: the engine's front doors, as in ``torch.autograd``."""
from ..runtime.engine import backward, grad
from ..runtime.engine import is_checkpoint_valid as _is_checkpoint_valid  # noqa: F401  (torch.autograd's)
from ..runtime.function import Function, FunctionCtx, once_differentiable
from . import forward_ad, function, functional, graph, profiler
from ..runtime.anomaly import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                               set_detect_anomaly)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import grad_mode, variable
from .grad_mode import (enable_grad, inference_mode, no_grad, set_grad_enabled,
                        set_multithreading_enabled)
from .variable import Variable




__all__ = ["backward", "grad", "Variable", "graph", "forward_ad", "function", "functional", "profiler", "Function", "FunctionCtx",
           "once_differentiable", "gradcheck", "gradgradcheck", "GradcheckError", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled", "grad_mode",
           "variable"]
