package integration

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

// kubectlCLI runs the real kubectl command tree, in-process, against a
// cluster: what a user types, minus the process boundary.
type kubectlCLI struct {
	c        *cluster
	cacheDir string
}

func newKubectl(t *testing.T, c *cluster) *kubectlCLI {
	t.Helper()
	// The user's ~/.kube/kuberc must not change what the tests see.
	t.Setenv("KUBERC", "off")
	return &kubectlCLI{c: c, cacheDir: t.TempDir()}
}

// kubectlExit is what a fatal kubectl error panics with instead of os.Exit.
type kubectlExit struct {
	msg  string
	code int
}

func (e kubectlExit) Error() string { return fmt.Sprintf("exit status %d: %s", e.code, e.msg) }

// run runs `kubectl args...` and returns what it printed. err is non-nil
// when kubectl would have exited non-zero; its message, as kubectl prints
// it, is also in stderr.
func (k *kubectlCLI) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return k.runWithInput(t, "", args...)
}

// runWithInput runs kubectl with stdin. `-f -` reads os.Stdin itself (not
// the IOStreams), so stdin is a file swapped in for the run.
func (k *kubectlCLI) runWithInput(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var in, out, errOut bytes.Buffer
	in.WriteString(stdin)
	if stdin != "" {
		f, ferr := os.Open(writeTestFile(t, t.TempDir(), "stdin", stdin))
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
	full := append([]string{"kubectl", "--kubeconfig", k.c.cp.KubeconfigPath, "--cache-dir", k.cacheDir}, args...)
	cmdutil.BehaviorOnFatal(func(msg string, code int) {
		if msg != "" && !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		errOut.WriteString(msg)
		panic(kubectlExit{msg: strings.TrimSpace(msg), code: code})
	})
	defer cmdutil.DefaultBehaviorOnFatal()
	func() {
		defer func() {
			if v := recover(); v != nil {
				exit, ok := v.(kubectlExit)
				if !ok {
					panic(v)
				}
				err = exit
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

// ok runs kubectl and fails the test unless it succeeds; it returns stdout.
func (k *kubectlCLI) ok(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := k.run(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// fails runs kubectl, fails the test if it succeeds, and returns stderr.
func (k *kubectlCLI) fails(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := k.run(t, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want an error\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
	}
	return stderr
}

// writeFile writes content to name under dir and returns its path.
func writeTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// examplesDir is the repository's examples/ directory.
func examplesPath(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// lines splits output into its non-empty lines.
func outputLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// header returns the column names of a table's first line.
func tableHeader(s string) []string {
	ls := outputLines(s)
	if len(ls) == 0 {
		return nil
	}
	return strings.Fields(ls[0])
}
