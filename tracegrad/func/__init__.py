from ._forward import jvp, jacfwd
