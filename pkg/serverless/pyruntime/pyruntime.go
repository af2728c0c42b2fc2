package pyruntime

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

var (
	//go:embed server.py
	serverPy []byte
	//go:embed check.py
	checkPy string
)

// FunctionDir is where an image holds the function's files; the runtime
// server runs there with it first on sys.path.
const FunctionDir = "/function"

// serverPath is where an image holds the runtime server.
const serverPath = "/runtime/server.py"

// Reasons of a CheckError, also the reasons of a function's Ready=False
// condition.
const (
	ReasonSyntaxError     = "SyntaxError"
	ReasonHandlerNotFound = "HandlerNotFound"
	// ReasonImportError is a start-up failure other than the two above: the
	// module raised while it was imported (a missing dependency, say).
	ReasonImportError = "ImportError"
)

// DefaultRuntimesDir is where `make deps` puts the runtimes' root
// filesystems; $MINIK8S_RUNTIMES_DIR overrides it.
const DefaultRuntimesDir = "/var/lib/minik8s/runtimes"

// ServerFiles are the runtime server's files, by path inside the image
// (relative, slash-separated).
func ServerFiles() map[string][]byte {
	return map[string][]byte{strings.TrimPrefix(serverPath, "/"): bytes.Clone(serverPy)}
}

// Entrypoint is the command of every function instance.
func Entrypoint() []string { return []string{"python3", serverPath} }

// Env is the environment of a function instance (KEY=VALUE): the handler
// ("module.function"), where the function's files are, the port, and the
// per-call timeout when positive.
func Env(handler string, timeout time.Duration) []string {
	if handler == "" {
		handler = fnmeta.DefaultHandler
	}
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8",
		// print() in a handler reaches the logs as it happens.
		"PYTHONUNBUFFERED=1",
		"FUNCTION_HANDLER=" + handler,
		"FUNCTION_DIR=" + FunctionDir,
		"PORT=" + strconv.Itoa(fnmeta.Port),
	}
	if timeout > 0 {
		env = append(env, "FUNCTION_TIMEOUT="+strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
	}
	return env
}

// CheckError is a problem Check found in a function's code. Message is one
// paragraph in the form the runtime server writes when it cannot start,
// such as "SyntaxError: invalid syntax (main.py, line 3)" or
// "HandlerNotFound: module main has no function handle".
type CheckError struct {
	Reason  string // ReasonSyntaxError or ReasonHandlerNotFound
	Message string
}

func (e *CheckError) Error() string { return e.Message }

// Check compiles every .py file of a function (keys are slash-separated
// relative paths, such as "main.py" and "lib/util.py") with the host's
// python3, without importing any, and checks that the handler's module is
// among them and binds the handler's name at top level. It returns a
// *CheckError for a problem in the code and a plain error when python3
// cannot run.
func Check(ctx context.Context, files map[string][]byte, handler string) error {
	if handler == "" {
		handler = fnmeta.DefaultHandler
	}
	request := struct {
		Handler string            `json:"handler"`
		Files   map[string]string `json:"files"`
	}{Handler: handler, Files: map[string]string{}}
	for path, data := range files {
		if strings.HasSuffix(path, ".py") {
			request.Files[path] = base64.StdEncoding.EncodeToString(data)
		}
	}
	in, err := json.Marshal(request)
	if err != nil {
		return fmt.Errorf("check function code: %w", err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return fmt.Errorf("check function code: python3 is needed on the host to check Python code: %w", err)
	}
	// -I: none of the caller's PYTHON* variables, user site or working
	// directory; -S: no site packages, which the check does not need.
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", checkPy)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("check function code with %s: %w: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	var result struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &result); err != nil {
		return fmt.Errorf("check function code: read the checker's answer %q: %w", stdout.String(), err)
	}
	if result.Reason != "" {
		return &CheckError{Reason: result.Reason, Message: result.Message}
	}
	return nil
}

// StartupFailureReason is the reason for a message the runtime server
// wrote to the termination log when it could not start:
// ReasonSyntaxError, ReasonHandlerNotFound or, for any other exception
// on import, ReasonImportError.
func StartupFailureReason(message string) string {
	kind, _, _ := strings.Cut(strings.TrimSpace(message), ":")
	switch kind {
	case "SyntaxError", "IndentationError", "TabError":
		return ReasonSyntaxError
	case "HandlerNotFound":
		return ReasonHandlerNotFound
	default:
		return ReasonImportError
	}
}

// BaseTarball is the path of a runtime's root filesystem, an uncompressed
// tarball built by hack/build-runtimes.sh (`make deps`):
// $MINIK8S_RUNTIMES_DIR/<runtime>.tar, or under DefaultRuntimesDir.
func BaseTarball(runtime string) (string, error) {
	if !slices.Contains(fnmeta.Runtimes, runtime) {
		return "", fmt.Errorf("unknown runtime %q (known: %s)", runtime, strings.Join(fnmeta.Runtimes, ", "))
	}
	dir := os.Getenv("MINIK8S_RUNTIMES_DIR")
	if dir == "" {
		dir = DefaultRuntimesDir
	}
	path := filepath.Join(dir, runtime+".tar")
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("runtime %s: its root filesystem %s is missing: run make deps (as root)", runtime, path)
		}
		return "", fmt.Errorf("runtime %s: %w", runtime, err)
	}
	return path, nil
}
