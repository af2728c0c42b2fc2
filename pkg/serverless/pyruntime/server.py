"""The minik8s function runtime server.

Runs in every function instance as `python3 /runtime/server.py` and serves
the handler over HTTP. Standard library only, and only what it needs, so
that an instance starts fast.

Environment:
  FUNCTION_HANDLER   module.function to call (default main.handle)
  FUNCTION_DIR       where the function's files are (default /function);
                     put first on sys.path and made the working directory
  FUNCTION_TIMEOUT   seconds a call may take (optional): past it the caller
                     gets 504, and SIGTERM waits at most this long for calls
                     in flight (30 s without it)
  PORT               port to listen on (default 8080)
  LISTEN_FD          a socket already listening, to serve on instead (the
                     tests pass one so that no other process takes the port)
  TERMINATION_MESSAGE_PATH  where a start-up failure is written
                     (default /dev/termination-log)

Requests:
  GET /healthz       200 {"status":"ok"}; 503 once SIGTERM has come
  anything else      the body, parsed as JSON ({} when empty), is passed to
                     handler(event) or, when the handler takes a second
                     positional parameter, handler(event, context) with
                     context = {"method", "path", "query", "headers"}:
                     query maps each name to its first value (a string),
                     headers maps lower-case names to values (repeated
                     headers joined with ", "). The return value is answered
                     200 as JSON (objects with a tolist() method, such as
                     numpy arrays and scalars, become lists and numbers).
                     Errors answer {"error": "...", "type": "..."}: 400 for
                     a body that is not JSON, 500 for an exception in the
                     handler or a return value that is not JSON, 504 past
                     FUNCTION_TIMEOUT.

A start-up failure (the module does not import, the function is missing or
not callable) writes one paragraph, such as
"SyntaxError: invalid syntax (main.py, line 3)" or
"HandlerNotFound: module main has no function handle", to the termination
message path and to stderr, and exits 1.

SIGTERM: the server keeps serving for DRAIN_SECONDS (a router that has not
yet seen the instance go still succeeds), then stops accepting, closes idle
connections, waits for the calls in flight and exits 0.
"""

import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

DRAIN_SECONDS = 1.0
DEFAULT_GRACE_SECONDS = 30.0


class StartupError(Exception):
    """A failure to load the handler, with the message for the termination log."""


def fail_startup(message):
    message = " ".join(message.split())
    try:
        with open(os.environ.get("TERMINATION_MESSAGE_PATH", "/dev/termination-log"), "w") as f:
            f.write(message + "\n")
    except OSError:
        pass
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    sys.exit(1)


def where(tb, function_dir):
    """The innermost ' (file, line N)' of the traceback inside function_dir."""
    found = ""
    prefix = os.path.join(function_dir, "")
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(prefix):
            found = " (%s, line %d)" % (filename[len(prefix):], tb.tb_lineno)
        tb = tb.tb_next
    return found


def load_handler(spec, function_dir):
    module_name, _, function_name = spec.rpartition(".")
    if not module_name or not function_name:
        raise StartupError("HandlerNotFound: handler %r is not module.function" % spec)
    import importlib

    try:
        module = importlib.import_module(module_name)
    except SyntaxError as e:
        filename = e.filename or "?"
        if filename.startswith(os.path.join(function_dir, "")):
            filename = filename[len(function_dir) + 1:]
        raise StartupError("%s: %s (%s, line %s)" % (type(e).__name__, e.msg, filename, e.lineno))
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise StartupError("HandlerNotFound: module %s not found in %s" % (module_name, function_dir))
        raise StartupError("%s: %s%s" % (type(e).__name__, e, where(e.__traceback__, function_dir)))
    except BaseException as e:  # anything the module raises on import, SystemExit included
        raise StartupError("%s: %s%s" % (type(e).__name__, e, where(e.__traceback__, function_dir)))
    handler = getattr(module, function_name, None)
    if handler is None:
        raise StartupError("HandlerNotFound: module %s has no function %s" % (module_name, function_name))
    if not callable(handler):
        raise StartupError("HandlerNotFound: %s is not callable (it is %s)" % (spec, type(handler).__name__))
    return handler


def takes_context(handler):
    """Whether handler accepts a second positional argument."""
    code = getattr(handler, "__code__", None)
    if code is not None:
        positional = code.co_argcount - (1 if getattr(handler, "__self__", None) is not None else 0)
        return positional >= 2 or bool(code.co_flags & 0x04)  # CO_VARARGS
    import inspect

    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return True
    return sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds) >= 2


def to_json(value):
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


class Runtime:
    """The handler and the server's drain state."""

    def __init__(self, handler, timeout):
        self.handler = handler
        self.with_context = takes_context(handler)
        self.timeout = timeout
        self.draining = False
        self.lock = threading.Condition()
        self.in_flight = 0
        self.connections = {}  # RequestHandler -> busy

    def call(self, event, context):
        """Calls the handler; returns (status, body)."""
        if self.timeout is None:
            return self.invoke(event, context)
        result = []
        worker = threading.Thread(target=lambda: result.append(self.invoke(event, context)), daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not result:
            return 504, error_body("function timed out after %gs" % self.timeout, "Timeout")
        return result[0]

    def invoke(self, event, context):
        try:
            value = self.handler(event, context) if self.with_context else self.handler(event)
            if hasattr(value, "__await__"):
                import asyncio

                async def wait():
                    return await value

                value = asyncio.run(wait())
        except BaseException as e:  # SystemExit too: the instance stays up
            import traceback  # here: an instance that never fails never loads it

            traceback.print_exc()
            return 500, error_body("%s: %s" % (type(e).__name__, e), type(e).__name__)
        try:
            return 200, json.dumps(value, default=to_json, allow_nan=False).encode()
        except (TypeError, ValueError, RecursionError) as e:
            sys.stderr.write("the handler's return value is not JSON: %s\n" % e)
            return 500, error_body("the handler's return value is not JSON serializable: %s" % e, type(e).__name__)


def error_body(message, kind):
    return json.dumps({"error": message, "type": kind}).encode()


class RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "minik8s-function"
    sys_version = ""
    disable_nagle_algorithm = True
    runtime = None  # set on the subclass main() makes

    def setup(self):
        super().setup()
        with self.runtime.lock:
            self.runtime.connections[self] = False

    def finish(self):
        with self.runtime.lock:
            self.runtime.connections.pop(self, None)
        super().finish()

    def parse_request(self):
        rt = self.runtime
        with rt.lock:
            rt.connections[self] = True
            rt.in_flight += 1
        return super().parse_request()

    def handle_one_request(self):
        try:
            super().handle_one_request()
        finally:
            rt = self.runtime
            with rt.lock:
                if rt.connections.get(self):
                    rt.connections[self] = False
                    rt.in_flight -= 1
                    rt.lock.notify_all()
                if rt.draining:
                    self.close_connection = True

    def log_message(self, format, *args):
        pass

    def respond(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.runtime.draining:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def serve(self):
        url = urlsplit(self.path)
        try:
            body = self.read_body()
        except ValueError:
            self.close_connection = True
            return self.respond(400, error_body("malformed request body framing", "BadRequest"))
        if url.path == "/healthz" and self.command == "GET":
            if self.runtime.draining:
                return self.respond(503, b'{"status":"draining"}')
            return self.respond(200, b'{"status":"ok"}')
        if body.strip():
            try:
                event = json.loads(body)
            except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
                return self.respond(400, error_body("request body is not JSON: %s" % e, "BadRequest"))
        else:
            event = {}
        context = None
        if self.runtime.with_context:
            query = {}
            for name, value in parse_qsl(url.query, keep_blank_values=True):
                query.setdefault(name, value)
            headers = {}
            for name, value in self.headers.items():
                name = name.lower()
                headers[name] = headers[name] + ", " + value if name in headers else value
            context = {"method": self.command, "path": url.path, "query": query, "headers": headers}
        self.respond(*self.runtime.call(event, context))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = serve


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def new_server(port, handler_class):
    """Listens on port, or on the socket inherited as LISTEN_FD: a caller
    that binds the port itself (the tests) leaves no moment in which
    another process can take it."""
    fd = os.environ.get("LISTEN_FD")
    if not fd:
        return Server(("", port), handler_class)
    import socket

    server = Server(("", port), handler_class, bind_and_activate=False)
    server.socket.close()
    server.socket = socket.socket(fileno=int(fd))
    server.server_address = server.socket.getsockname()
    return server


def drain(server, runtime, grace):
    """Serves DRAIN_SECONDS more, then stops and waits for calls in flight."""
    threading.Event().wait(DRAIN_SECONDS)
    server.shutdown()
    server.server_close()
    import socket

    with runtime.lock:
        for conn, busy in list(runtime.connections.items()):
            if not busy:
                try:
                    conn.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        runtime.lock.wait_for(lambda: runtime.in_flight == 0, grace)


def main():
    spec = os.environ.get("FUNCTION_HANDLER") or "main.handle"
    function_dir = os.path.abspath(os.environ.get("FUNCTION_DIR") or "/function")
    timeout = float(os.environ["FUNCTION_TIMEOUT"]) if os.environ.get("FUNCTION_TIMEOUT") else None
    port = int(os.environ.get("PORT") or 8080)

    # The function's directory replaces this script's on the path, so a
    # function module may be called anything, server included.
    sys.path[0] = function_dir
    try:
        os.chdir(function_dir)
        handler = load_handler(spec, function_dir)
    except StartupError as e:
        fail_startup(str(e))
    except OSError as e:
        fail_startup("HandlerNotFound: function directory %s: %s" % (function_dir, e.strerror))

    runtime = Runtime(handler, timeout)
    handler_class = type("Handler", (RequestHandler,), {"runtime": runtime})
    server = new_server(port, handler_class)
    done = threading.Event()

    def on_sigterm(signum, frame):
        if runtime.draining:
            return
        runtime.draining = True

        def run():
            drain(server, runtime, timeout if timeout is not None else DEFAULT_GRACE_SECONDS)
            done.set()

        threading.Thread(target=run, daemon=True).start()

    signal.signal(signal.SIGTERM, on_sigterm)
    sys.stderr.write("serving %s on port %d\n" % (spec, port))
    sys.stderr.flush()
    server.serve_forever()
    done.wait()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
