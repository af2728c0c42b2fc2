package slurm

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// gpuExamples is examples/gpu, the programs the Slurm e2e runs as Jobs.
var gpuExamples = filepath.Join("..", "..", "..", "examples", "gpu")

var maxErrorLine = regexp.MustCompile(`(?m)^max error: (\S+)`)

// TestGPUPrograms builds the CPU versions of the GPU example programs, the
// ones a virtual node without a GPU runs, and checks their results at sizes
// below, at and across the 16x16 blocks and tiles, and their answers to
// bad sizes.
func TestGPUPrograms(t *testing.T) {
	for _, tool := range []string{"make", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the CPU build of examples/gpu needs make and gcc (hack/install-deps.sh installs them)", tool)
		}
	}
	out := t.TempDir()
	build(t, out)

	for _, tc := range []struct {
		args []string
		tol  float64
	}{
		{[]string{"matadd-cpu"}, 1e-6}, // the defaults, 1024x1024
		{[]string{"matadd-cpu", "1", "1"}, 1e-6},
		{[]string{"matadd-cpu", "16", "32"}, 1e-6},
		{[]string{"matadd-cpu", "37", "53"}, 1e-6},
		{[]string{"matadd-cpu", "100", "3"}, 1e-6},
		{[]string{"matmul-cpu", "1", "1", "1"}, 1e-4},
		{[]string{"matmul-cpu", "16", "16", "16"}, 1e-4},
		{[]string{"matmul-cpu", "37", "53", "29"}, 1e-4},
		{[]string{"matmul-cpu", "64", "17", "80"}, 1e-4},
		{[]string{"matmul-cpu", "1", "100", "1"}, 1e-4},
		{[]string{"matmul-cpu", "33", "1", "47"}, 1e-4},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			stdout, stderr, err := runProgram(out, tc.args...)
			if err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", tc.args, err, stdout, stderr)
			}
			for _, line := range []string{"device: cpu", "OK"} {
				if !hasLine(stdout, line) {
					t.Errorf("%s printed no line %q:\n%s", tc.args, line, stdout)
				}
			}
			m := maxErrorLine.FindStringSubmatch(stdout)
			if m == nil {
				t.Fatalf("%s printed no max error:\n%s", tc.args, stdout)
			}
			maxErr, err := strconv.ParseFloat(m[1], 64)
			if err != nil || !(maxErr <= tc.tol) {
				t.Errorf("%s: max error %s, want a number <= %g", tc.args, m[1], tc.tol)
			}
		})
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"matadd-cpu", "0"}, `N must be an integer from 1 to 65536, got "0"`},
		{[]string{"matadd-cpu", "x"}, `N must be an integer from 1 to 65536, got "x"`},
		{[]string{"matadd-cpu", "8", "3x"}, `M must be an integer from 1 to 65536, got "3x"`},
		{[]string{"matadd-cpu", "1", "2", "3"}, "too many arguments"},
		{[]string{"matadd-cpu", "65536", "65536"}, "A is 65536x65536, more than"},
		{[]string{"matmul-cpu", "4", "-3", "4"}, `K must be an integer from 1 to 65536, got "-3"`},
		{[]string{"matmul-cpu", "4", "4", "99999"}, `M must be an integer from 1 to 65536, got "99999"`},
	} {
		t.Run("bad_"+strings.Join(tc.args, "_"), func(t *testing.T) {
			stdout, stderr, err := runProgram(out, tc.args...)
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("%s: err = %v, want a non-zero exit\nstdout:\n%s", tc.args, err, stdout)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("%s: stderr %q, want it to say %q", tc.args, stderr, tc.want)
			}
			if strings.Contains(stdout, "OK") {
				t.Errorf("%s printed OK:\n%s", tc.args, stdout)
			}
		})
	}

	// nvcc compiles the sources as C++: they must stay valid C++ too.
	t.Run("as_cxx", func(t *testing.T) {
		if _, err := exec.LookPath("g++"); err != nil {
			t.Skip("g++ not found: not checking that the sources compile as C++")
		}
		out := t.TempDir()
		build(t, out, "CPUCC=g++ -x c++")
		for _, args := range [][]string{{"matadd-cpu", "37", "53"}, {"matmul-cpu", "37", "53", "29"}} {
			stdout, stderr, err := runProgram(out, args...)
			if err != nil || !hasLine(stdout, "OK") {
				t.Errorf("%s built with g++: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout, stderr)
			}
		}
	})
}

// build runs make cpu in examples/gpu with the programs going into out.
func build(t *testing.T, out string, vars ...string) {
	t.Helper()
	args := append([]string{"-C", gpuExamples, "cpu", "OUT=" + out}, vars...)
	if b, err := exec.Command("make", args...).CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// runProgram runs the program args[0] from dir with the arguments args[1:].
func runProgram(dir string, args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, args[0]), args[1:]...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func hasLine(s, line string) bool {
	for _, l := range strings.Split(s, "\n") {
		if l == line {
			return true
		}
	}
	return false
}
