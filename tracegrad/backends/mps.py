"""``tracegrad.backends.mps``: Apple's Metal is not a tracegrad device."""


def is_available():
    return False


def is_built():
    return False


def is_macos_or_newer(major, minor):
    return False
