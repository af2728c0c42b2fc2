package bench

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNodeEnvClose checks that close runs the clean-up steps last first,
// joins their errors to the run's, and keeps the log only when the run
// (or its clean-up) failed, saying where it is.
func TestNodeEnvClose(t *testing.T) {
	errRun, errStep := errors.New("run failed"), errors.New("step failed")
	for _, tc := range []struct {
		name     string
		runErr   error
		stepErr  error
		wantErrs []error
	}{
		{name: "success"},
		{name: "run fails", runErr: errRun, wantErrs: []error{errRun}},
		{name: "clean-up fails", stepErr: errStep, wantErrs: []error{errStep}},
		{name: "both fail", runErr: errRun, stepErr: errStep, wantErrs: []error{errRun, errStep}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logFile, err := os.CreateTemp(t.TempDir(), "minik8s-bench-test-*.log")
			if err != nil {
				t.Fatal(err)
			}
			e := &nodeEnv{logFile: logFile, logLabel: "cluster log", cleanupBase: context.Background(), cleanupTimeout: time.Minute}
			var order []int
			for i := range 3 {
				e.onClose(func(ctx context.Context) error {
					if _, ok := ctx.Deadline(); !ok {
						t.Errorf("step %d: clean-up context without a deadline", i)
					}
					order = append(order, i)
					if i == 1 {
						return tc.stepErr
					}
					return nil
				})
			}
			err = e.close(tc.runErr)
			if want := []int{2, 1, 0}; !slices.Equal(order, want) {
				t.Errorf("clean-up order %v, want %v", order, want)
			}
			_, statErr := os.Stat(logFile.Name())
			if len(tc.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("close: %v", err)
				}
				if !errors.Is(statErr, os.ErrNotExist) {
					t.Errorf("log %s not removed after a successful run (stat: %v)", logFile.Name(), statErr)
				}
				return
			}
			for _, want := range tc.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("close: %v, want it to wrap %v", err, want)
				}
			}
			if err == nil || !strings.Contains(err.Error(), "(cluster log: "+logFile.Name()+")") {
				t.Errorf("close: %v, want it to say where the cluster log is", err)
			}
			if statErr != nil {
				t.Errorf("log of a failed run not kept: %v", statErr)
			}
		})
	}
}
