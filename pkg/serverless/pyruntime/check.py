"""Checks a function's Python files at build time without importing them.

Reads {"handler": "module.function", "files": {"path": "<base64>"}} on
stdin (the .py files, slash-separated relative paths) and writes
{"reason": "...", "message": "..."} on stdout: {} when the files compile
and the handler's module binds the function's name at top level (def,
async def, class, assignment or import), else the first problem with
reason SyntaxError or HandlerNotFound and a one-paragraph message in the
form the runtime server writes on a failed start.
"""

import ast
import base64
import json
import sys


def syntax_message(e, path):
    return "%s: %s (%s, line %s)" % (type(e).__name__, e.msg, path, e.lineno)


def binds(statements, name):
    """Whether the statements bind name at module level."""
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name) and n.id == name:
                        return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name or alias.name == "*":
                    return True
        # Bindings under top-level if/try/with/for still run on import.
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if binds(inner, name):
                    return True
        if isinstance(node, getattr(ast, "Match", ())):
            for case in node.cases:
                if binds(case.body, name):
                    return True
    return False


def check(handler, files):
    for path in sorted(files):
        try:
            compile(files[path], path, "exec", dont_inherit=True)
        except SyntaxError as e:
            return "SyntaxError", syntax_message(e, path)
        except ValueError as e:  # source with null bytes
            return "SyntaxError", "SyntaxError: %s (%s)" % (e, path)

    module, _, function = handler.rpartition(".")
    if not module or not function or not all(part.isidentifier() for part in handler.split(".")):
        return "HandlerNotFound", "HandlerNotFound: handler %r is not module.function" % handler
    base = module.replace(".", "/")
    for path in (base + ".py", base + "/__init__.py"):
        if path in files:
            break
    else:
        return "HandlerNotFound", "HandlerNotFound: module %s not found: no %s.py among the files" % (module, base)
    tree = ast.parse(files[path], path)
    if not binds(tree.body, function):
        return "HandlerNotFound", "HandlerNotFound: module %s has no function %s" % (module, function)
    return None


def main():
    request = json.load(sys.stdin)
    files = {path: base64.b64decode(data) for path, data in request["files"].items()}
    problem = check(request["handler"], files)
    json.dump({"reason": problem[0], "message": problem[1]} if problem else {}, sys.stdout)


if __name__ == "__main__":
    main()
