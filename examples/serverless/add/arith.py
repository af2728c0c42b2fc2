"""Arithmetic helpers of the add function, in a file of their own."""


def as_number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise TypeError("not a number: %r" % (v,))
    return float(v) if isinstance(v, str) and "." in v else int(v)


def add(x, y):
    return x + y
