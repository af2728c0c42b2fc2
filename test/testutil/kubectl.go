// Package testutil holds what the integration and e2e tests share: the
// real kubectl command tree run in-process against a cluster.
package testutil

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/minik8s/minik8s/pkg/kubectl"
)

// Kubectl runs the real kubectl command tree, in-process, against the
// cluster of a kubeconfig: what a user types, minus the process boundary.
type Kubectl struct {
	Kubeconfig string
	cacheDir   string
}

// NewKubectl returns a kubectl for kubeconfig with a discovery cache of
// its own; the user's ~/.kube/kuberc does not change what it prints.
func NewKubectl(t *testing.T, kubeconfig string) *Kubectl {
	t.Helper()
	t.Setenv("KUBERC", "off")
	return &Kubectl{Kubeconfig: kubeconfig, cacheDir: t.TempDir()}
}

// ExitError is a kubectl run that would have exited non-zero; a fatal
// kubectl error panics with it instead of calling os.Exit.
type ExitError struct {
	Msg  string
	Code int
}

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d: %s", e.Code, e.Msg) }

// Run runs `kubectl args...` and returns what it printed. err is non-nil
// when kubectl would have exited non-zero; its message, as kubectl prints
// it, is also in stderr.
func (k *Kubectl) Run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return k.RunWithInput(t, "", args...)
}

// RunWithInput runs kubectl with stdin. `-f -` reads os.Stdin itself (not
// the IOStreams), so stdin is a file swapped in for the run.
func (k *Kubectl) RunWithInput(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var in, out, errOut bytes.Buffer
	in.WriteString(stdin)
	if stdin != "" {
		f, ferr := os.Open(WriteFile(t, t.TempDir(), "stdin", stdin))
		if ferr != nil {
			t.Fatal(ferr)
		}
		saved := os.Stdin
		os.Stdin = f
		defer func() {
			os.Stdin = saved
			_ = f.Close()
		}()
	}
	streams := genericiooptions.IOStreams{In: &in, Out: &out, ErrOut: &errOut}
	full := append([]string{"kubectl", "--kubeconfig", k.Kubeconfig, "--cache-dir", k.cacheDir}, args...)
	cmdutil.BehaviorOnFatal(func(msg string, code int) {
		if msg != "" && !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		errOut.WriteString(msg)
		panic(ExitError{Msg: strings.TrimSpace(msg), Code: code})
	})
	defer cmdutil.DefaultBehaviorOnFatal()
	func() {
		defer func() {
			if v := recover(); v != nil {
				e, ok := v.(ExitError)
				if !ok {
					panic(v)
				}
				err = e
			}
		}()
		if execErr := kubectl.NewCommand(streams, full).Execute(); execErr != nil {
			// cobra's own errors (unknown flag, missing argument).
			errOut.WriteString("error: " + execErr.Error() + "\n")
			err = execErr
		}
	}()
	return out.String(), errOut.String(), err
}

// OK runs kubectl and fails the test unless it succeeds; it returns stdout.
func (k *Kubectl) OK(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := k.Run(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// Fails runs kubectl, fails the test if it succeeds, and returns stderr.
func (k *Kubectl) Fails(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := k.Run(t, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want an error\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
	}
	return stderr
}

// WriteFile writes content to name under dir and returns its path.
func WriteFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
