package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/test/testutil"
)

// kubectlCLI is the real kubectl, in-process, against the test's cluster.
type kubectlCLI struct{ *testutil.Kubectl }

func newKubectl(t *testing.T, c *cluster) *kubectlCLI {
	t.Helper()
	return &kubectlCLI{testutil.NewKubectl(t, c.cp.KubeconfigPath)}
}

func (k *kubectlCLI) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return k.Run(t, args...)
}

func (k *kubectlCLI) runWithInput(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return k.RunWithInput(t, stdin, args...)
}

func (k *kubectlCLI) ok(t *testing.T, args ...string) string {
	t.Helper()
	return k.OK(t, args...)
}

func (k *kubectlCLI) fails(t *testing.T, args ...string) string {
	t.Helper()
	return k.Fails(t, args...)
}

func writeTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	return testutil.WriteFile(t, dir, name, content)
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
