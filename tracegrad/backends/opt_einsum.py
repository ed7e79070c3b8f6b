"""``tracegrad.backends.opt_einsum``: tracegrad's einsum does not use the opt_einsum package."""
enabled = False
strategy = None


def is_available():
    return False


def get_opt_einsum():
    return None
