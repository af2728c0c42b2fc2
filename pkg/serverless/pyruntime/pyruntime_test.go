package pyruntime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long the server may take to start; generous,
// since CI machines can be busy.
const startTimeout = 60 * time.Second

func needPython(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the runtime server and the check need it")
	}
	return python
}

// instance is the runtime server running with the host's python3.
type instance struct {
	url         string
	cmd         *exec.Cmd
	stderr      *syncBuffer
	termination string
	exited      chan struct{}
	err         error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// run starts server.py over files (relative path -> source) with the
// given extra environment.
func run(t *testing.T, files map[string]string, env ...string) *instance {
	t.Helper()
	python := needPython(t)
	dir := t.TempDir()
	for path, content := range ServerFiles() {
		writeFile(t, filepath.Join(dir, "image", path), content)
	}
	fnDir := filepath.Join(dir, "image", "function")
	if err := os.MkdirAll(fnDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, content := range files {
		writeFile(t, filepath.Join(fnDir, path), []byte(content))
	}
	// The server inherits a socket already listening on a free port, so
	// no other process can take the port before it serves.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnFile, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
	defer lnFile.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	in := &instance{
		url:         "http://127.0.0.1:" + strconv.Itoa(port),
		stderr:      &syncBuffer{},
		termination: filepath.Join(dir, "termination-log"),
		exited:      make(chan struct{}),
	}
	in.cmd = exec.Command(python, filepath.Join(dir, "image", "runtime", "server.py"))
	in.cmd.Env = append(os.Environ(),
		"FUNCTION_DIR="+fnDir,
		"PORT="+strconv.Itoa(port),
		"LISTEN_FD=3",
		"TERMINATION_MESSAGE_PATH="+in.termination,
	)
	in.cmd.ExtraFiles = []*os.File{lnFile}
	in.cmd.Env = append(in.cmd.Env, env...)
	in.cmd.Stdout = in.stderr
	in.cmd.Stderr = in.stderr
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		in.err = in.cmd.Wait()
		close(in.exited)
	}()
	t.Cleanup(func() {
		_ = in.cmd.Process.Kill()
		<-in.exited
		if t.Failed() {
			t.Logf("server output:\n%s", in.stderr.String())
		}
	})
	return in
}

// ready waits for /healthz to answer 200.
func (in *instance) ready(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-in.exited:
			t.Fatalf("server exited before it was ready: %v\n%s", in.err, in.stderr.String())
		default:
		}
		resp, err := http.Get(in.url + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if string(body) != `{"status":"ok"}` {
					t.Fatalf("healthz answered %s", body)
				}
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server not ready after %s\n%s", startTimeout, in.stderr.String())
}

// exit waits for the server to exit and returns its exit code.
func (in *instance) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-in.exited:
	case <-time.After(within):
		t.Fatalf("server still running after %s", within)
	}
	var exitErr *exec.ExitError
	if errors.As(in.err, &exitErr) {
		return exitErr.ExitCode()
	}
	if in.err != nil {
		t.Fatal(in.err)
	}
	return 0
}

type reply struct {
	status      int
	contentType string
	body        map[string]any
	raw         string
}

func call(t *testing.T, method, url, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), raw: string(raw)}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s %s answered %d with a body that is not JSON: %q", method, url, resp.StatusCode, raw)
	}
	r.body, _ = v.(map[string]any)
	return r
}

func writeFile(t *testing.T, path string, content []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestServerJSON(t *testing.T) {
	t.Parallel()
	in := run(t, map[string]string{"main.py": `
def handle(event):
    if isinstance(event, dict):
        return {"greeting": "hello " + event.get("name", "world")}
    return {"echo": event}
`})
	in.ready(t)
	for _, tc := range []struct {
		name, method, body, want string
	}{
		{"object", "POST", `{"name":"ada"}`, `{"greeting": "hello ada"}`},
		{"other object", "POST", `{"name":"grace"}`, `{"greeting": "hello grace"}`},
		{"empty body", "POST", ``, `{"greeting": "hello world"}`},
		{"blank body", "PUT", " \n", `{"greeting": "hello world"}`},
		{"GET", "GET", ``, `{"greeting": "hello world"}`},
		{"list", "POST", `[1, 2, 3]`, `{"echo": [1, 2, 3]}`},
		{"number", "POST", `42`, `{"echo": 42}`},
		{"unicode", "POST", `{"name":"Zoë"}`, `{"greeting": "hello Zo\u00eb"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.method, in.url+"/", tc.body)
			if r.status != http.StatusOK || r.raw != tc.want {
				t.Errorf("got %d %s, want 200 %s", r.status, r.raw, tc.want)
			}
			if r.contentType != "application/json" {
				t.Errorf("Content-Type %q, want application/json", r.contentType)
			}
		})
	}
}

func TestServerContext(t *testing.T) {
	t.Parallel()
	in := run(t, map[string]string{"handlers/api.py": `
def answer(event, context):
    return {"event": event, "context": context}
`}, "FUNCTION_HANDLER=handlers.api.answer")
	in.ready(t)
	req, err := http.NewRequest("PATCH", in.url+"/some/path?x=1&x=2&y=", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Thing", "value")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Event   map[string]any `json:"event"`
		Context struct {
			Method  string            `json:"method"`
			Path    string            `json:"path"`
			Query   map[string]string `json:"query"`
			Headers map[string]string `json:"headers"`
		} `json:"context"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || got.Event["a"] != 1.0 {
		t.Errorf("got %d event %v", resp.StatusCode, got.Event)
	}
	c := got.Context
	if c.Method != "PATCH" || c.Path != "/some/path" || c.Query["x"] != "1" || c.Query["y"] != "" || len(c.Query) != 2 {
		t.Errorf("context %+v: want PATCH /some/path, query x=1 y=\"\"", c)
	}
	if c.Headers["x-thing"] != "value" || c.Headers["content-length"] != "7" {
		t.Errorf("headers %v: want x-thing: value, content-length: 7", c.Headers)
	}
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	in := run(t, map[string]string{"main.py": `
import time

def handle(event):
    kind = event.get("kind")
    if kind == "divide":
        return 1 / 0
    if kind == "set":
        return {1, 2}
    if kind == "nan":
        return float("nan")
    if kind == "exit":
        raise SystemExit(3)
    if kind == "sleep":
        time.sleep(event["seconds"])
    return {"ok": True}
`}, "FUNCTION_TIMEOUT=1")
	in.ready(t)
	for _, tc := range []struct {
		name, body string
		status     int
		errType    string
		message    string
	}{
		{"exception", `{"kind":"divide"}`, 500, "ZeroDivisionError", "ZeroDivisionError: division by zero"},
		{"not JSON serializable", `{"kind":"set"}`, 500, "TypeError", "not JSON serializable"},
		{"NaN", `{"kind":"nan"}`, 500, "ValueError", "not JSON serializable"},
		{"SystemExit", `{"kind":"exit"}`, 500, "SystemExit", "SystemExit: 3"},
		{"invalid JSON", `{"kind":`, 400, "BadRequest", "request body is not JSON"},
		{"invalid UTF-8", "\"\xff\xfe\xfd\"", 400, "BadRequest", "request body is not JSON"},
		{"timeout", `{"kind":"sleep","seconds":5}`, 504, "Timeout", "timed out after 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, "POST", in.url+"/", tc.body)
			if r.status != tc.status || r.body["type"] != tc.errType || !strings.Contains(fmt.Sprint(r.body["error"]), tc.message) {
				t.Errorf("got %d %s, want %d with type %s and an error containing %q", r.status, r.raw, tc.status, tc.errType, tc.message)
			}
			// The instance stays up.
			if r := call(t, "POST", in.url+"/", `{}`); r.status != http.StatusOK || r.raw != `{"ok": true}` {
				t.Errorf("after the error: got %d %s, want 200 {\"ok\": true}", r.status, r.raw)
			}
		})
	}
	if !strings.Contains(in.stderr.String(), "Traceback") || !strings.Contains(in.stderr.String(), "ZeroDivisionError") {
		t.Errorf("no traceback on stderr:\n%s", in.stderr.String())
	}
}

func TestServerStartupFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   map[string]string
		handler string
		want    string
		reason  string
	}{
		{"syntax error", map[string]string{"main.py": "def handle(event):\n    return 1\n)\n"}, "",
			"SyntaxError: unmatched ')' (main.py, line 3)", ReasonSyntaxError},
		{"syntax error in an imported file", map[string]string{"main.py": "from lib import util\ndef handle(e):\n    return 1\n", "lib/__init__.py": "", "lib/util.py": "x = = 1\n"}, "",
			"SyntaxError: invalid syntax (lib/util.py, line 1)", ReasonSyntaxError},
		{"missing function", map[string]string{"main.py": "def other(event):\n    return 1\n"}, "",
			"HandlerNotFound: module main has no function handle", ReasonHandlerNotFound},
		{"missing module", map[string]string{"other.py": "def handle(event):\n    return 1\n"}, "",
			"HandlerNotFound: module main not found in ", ReasonHandlerNotFound},
		{"not callable", map[string]string{"main.py": "handle = 3\n"}, "",
			"HandlerNotFound: main.handle is not callable (it is int)", ReasonHandlerNotFound},
		{"bad handler name", map[string]string{"main.py": "def handle(e): pass\n"}, "handle",
			"HandlerNotFound: handler 'handle' is not module.function", ReasonHandlerNotFound},
		{"missing dependency", map[string]string{"main.py": "import no_such_dependency\ndef handle(e): pass\n"}, "",
			"ModuleNotFoundError: No module named 'no_such_dependency' (main.py, line 1)", ReasonImportError},
		{"exception on import", map[string]string{"main.py": "x = 1\ny = x / 0\n"}, "",
			"ZeroDivisionError: division by zero (main.py, line 2)", ReasonImportError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if tc.handler != "" {
				env = append(env, "FUNCTION_HANDLER="+tc.handler)
			}
			in := run(t, tc.files, env...)
			if code := in.exit(t, startTimeout); code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
			message, err := os.ReadFile(in.termination)
			if err != nil {
				t.Fatalf("no termination message: %v", err)
			}
			got := strings.TrimSuffix(string(message), "\n")
			if !strings.HasPrefix(got, tc.want) || strings.Contains(got, "\n") {
				t.Errorf("termination message %q, want one line starting %q", got, tc.want)
			}
			if !strings.Contains(in.stderr.String(), got) {
				t.Errorf("stderr does not hold the message:\n%s", in.stderr.String())
			}
			if r := StartupFailureReason(got); r != tc.reason {
				t.Errorf("StartupFailureReason = %s, want %s", r, tc.reason)
			}
		})
	}
}

// TestServerDrain: on SIGTERM a call in flight finishes, a call in the
// first moments after it still succeeds, and the server exits 0.
func TestServerDrain(t *testing.T) {
	t.Parallel()
	in := run(t, map[string]string{"main.py": `
import time

def handle(event):
    time.sleep(event.get("seconds", 0))
    return {"slept": event.get("seconds", 0)}
`})
	in.ready(t)
	slow := make(chan reply)
	go func() {
		// Its own connection, so the server sees it busy, not idle.
		resp, err := http.Post(in.url+"/", "application/json", strings.NewReader(`{"seconds": 2}`))
		if err != nil {
			slow <- reply{raw: err.Error()}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		slow <- reply{status: resp.StatusCode, raw: string(raw)}
	}()
	time.Sleep(500 * time.Millisecond)
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	time.Sleep(100 * time.Millisecond)
	if r := call(t, "POST", in.url+"/", `{}`); r.status != http.StatusOK {
		t.Errorf("a call %s after SIGTERM: %d %s, want 200", time.Since(sent), r.status, r.raw)
	}
	if r := <-slow; r.status != http.StatusOK || r.raw != `{"slept": 2}` {
		t.Errorf("the call in flight: %d %s, want 200 {\"slept\": 2}", r.status, r.raw)
	}
	if code := in.exit(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if took := time.Since(sent); took < 900*time.Millisecond {
		t.Errorf("exited %s after SIGTERM, before the drain of about 1s", took)
	}
}

func TestCheck(t *testing.T) {
	needPython(t)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   map[string]string
		handler string
		reason  string // "" for no problem
		message string
	}{
		{"good", map[string]string{"main.py": "def handle(event):\n    return event\n"}, "", "", ""},
		{"with context", map[string]string{"main.py": "def handle(event, context):\n    return context\n"}, "main.handle", "", ""},
		{"async", map[string]string{"main.py": "async def handle(event):\n    return event\n"}, "", "", ""},
		{"lambda", map[string]string{"main.py": "handle = lambda event: event\n"}, "", "", ""},
		{"imported", map[string]string{"main.py": "from lib.impl import handle\n", "lib/__init__.py": "", "lib/impl.py": "def handle(e):\n    return e\n"}, "", "", ""},
		{"under try", map[string]string{"main.py": "try:\n    import json\nexcept ImportError:\n    pass\nelse:\n    def handle(e):\n        return e\n"}, "", "", ""},
		{"package module", map[string]string{"fns/greet.py": "def hello(e):\n    return 'hi'\n", "fns/__init__.py": ""}, "fns.greet.hello", "", ""},
		{"package init", map[string]string{"app/__init__.py": "def handle(e):\n    return 1\n"}, "app.handle", "", ""},
		{"other files ignored", map[string]string{"main.py": "def handle(e):\n    return 1\n", "data.txt": "def (", "README.md": "x"}, "", "", ""},
		{"syntax error", map[string]string{"main.py": "def handle(event):\n    return 1\n\nx = = 2\n"}, "",
			ReasonSyntaxError, "SyntaxError: invalid syntax (main.py, line 4)"},
		{"syntax error in another file", map[string]string{"main.py": "def handle(e):\n    return 1\n", "lib/util.py": "def f(:\n    pass\n"}, "",
			ReasonSyntaxError, "SyntaxError: invalid syntax (lib/util.py, line 1)"},
		{"indentation", map[string]string{"main.py": "def handle(e):\nreturn 1\n"}, "",
			ReasonSyntaxError, "IndentationError: expected an indented block after function definition on line 1 (main.py, line 2)"},
		{"compile-time error", map[string]string{"main.py": "return 1\n"}, "",
			ReasonSyntaxError, "SyntaxError: 'return' outside function (main.py, line 1)"},
		{"missing function", map[string]string{"main.py": "def other(event):\n    return 1\n"}, "",
			ReasonHandlerNotFound, "HandlerNotFound: module main has no function handle"},
		{"nested only", map[string]string{"main.py": "def outer():\n    def handle(e):\n        return 1\n"}, "",
			ReasonHandlerNotFound, "HandlerNotFound: module main has no function handle"},
		{"method only", map[string]string{"main.py": "class C:\n    def handle(self, e):\n        return 1\n"}, "",
			ReasonHandlerNotFound, "HandlerNotFound: module main has no function handle"},
		{"missing module", map[string]string{"app.py": "def handle(event):\n    return 1\n"}, "",
			ReasonHandlerNotFound, "HandlerNotFound: module main not found: no main.py among the files"},
		{"no files", map[string]string{}, "main.handle",
			ReasonHandlerNotFound, "HandlerNotFound: module main not found: no main.py among the files"},
		{"bad handler", map[string]string{"main.py": "def handle(e):\n    return 1\n"}, "main",
			ReasonHandlerNotFound, "HandlerNotFound: handler 'main' is not module.function"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string][]byte{}
			for path, content := range tc.files {
				files[path] = []byte(content)
			}
			err := Check(context.Background(), files, tc.handler)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Check: %v, want no problem", err)
				}
				return
			}
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("Check: %v, want a *CheckError", err)
			}
			if ce.Reason != tc.reason || ce.Message != tc.message || ce.Error() != tc.message {
				t.Errorf("Check: %s %q, want %s %q", ce.Reason, ce.Message, tc.reason, tc.message)
			}
		})
	}
}

func TestCheckWithoutPython(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Check(context.Background(), map[string][]byte{"main.py": []byte("def handle(e): pass\n")}, "main.handle")
	var ce *CheckError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "python3") {
		t.Errorf("Check without python3: %v, want a plain error naming python3", err)
	}
}

func TestBaseTarball(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("MINIK8S_RUNTIMES_DIR", dir)
	writeFile(t, filepath.Join(dir, "python3.tar"), []byte("tar"))
	if got, err := BaseTarball("python3"); err != nil || got != filepath.Join(dir, "python3.tar") {
		t.Errorf("BaseTarball(python3) = %q, %v; want %s", got, err, filepath.Join(dir, "python3.tar"))
	}
	if _, err := BaseTarball("python3-ml"); err == nil || !strings.Contains(err.Error(), "run make deps") {
		t.Errorf("BaseTarball(python3-ml) with no tarball: %v, want an error saying run make deps", err)
	}
	if _, err := BaseTarball("ruby"); err == nil || !strings.Contains(err.Error(), `unknown runtime "ruby"`) {
		t.Errorf("BaseTarball(ruby): %v, want unknown runtime", err)
	}
	t.Setenv("MINIK8S_RUNTIMES_DIR", "")
	if _, err := BaseTarball("python3"); err != nil && !strings.Contains(err.Error(), DefaultRuntimesDir) {
		t.Errorf("BaseTarball(python3) without MINIK8S_RUNTIMES_DIR: %v, want a path under %s", err, DefaultRuntimesDir)
	}
}

func TestImageContract(t *testing.T) {
	files := ServerFiles()
	if len(files) != 1 || !bytes.Contains(files["runtime/server.py"], []byte("ThreadingHTTPServer")) {
		t.Errorf("ServerFiles() = %d files, want runtime/server.py", len(files))
	}
	if got := Entrypoint(); strings.Join(got, " ") != "python3 /runtime/server.py" {
		t.Errorf("Entrypoint() = %q", got)
	}
	env := strings.Join(Env("greet.run", 90*time.Second), " ")
	for _, want := range []string{"FUNCTION_HANDLER=greet.run", "FUNCTION_DIR=/function", "PORT=8080", "FUNCTION_TIMEOUT=90", "PATH=/"} {
		if !strings.Contains(env, want) {
			t.Errorf("Env(greet.run, 90s) = %s, want %s in it", env, want)
		}
	}
	if env := strings.Join(Env("", 0), " "); !strings.Contains(env, "FUNCTION_HANDLER=main.handle") || strings.Contains(env, "FUNCTION_TIMEOUT") {
		t.Errorf("Env(\"\", 0) = %s, want the default handler and no timeout", env)
	}
	if got := strings.Join(Env("m.f", 1500*time.Millisecond), " "); !strings.Contains(got, "FUNCTION_TIMEOUT=1.5") {
		t.Errorf("Env(m.f, 1.5s) = %s, want FUNCTION_TIMEOUT=1.5", got)
	}
}
