"""add: a function made of several files (kubectl fn deploy add -f examples/serverless/add/)."""
from arith import add, as_number


def handle(event):
    x, y = as_number(event.get("x", 0)), as_number(event.get("y", 0))
    return {"x": x, "y": y, "sum": add(x, y)}
