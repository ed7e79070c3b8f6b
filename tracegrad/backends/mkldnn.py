"""``tracegrad.backends.mkldnn``: tracegrad does not call oneDNN; ``enabled`` is remembered."""
enabled = True


def is_available():
    return False
