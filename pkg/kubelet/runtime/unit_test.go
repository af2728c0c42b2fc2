package runtime

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/containers"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func TestCommandLine(t *testing.T) {
	ep, cmd := []string{"/entry"}, []string{"default-arg"}
	for _, tc := range []struct {
		name          string
		command, args []string
		want          string
	}{
		{"image defaults", nil, nil, "/entry default-arg"},
		{"command replaces both", []string{"sh", "-c"}, nil, "sh -c"},
		{"args replace cmd", nil, []string{"x"}, "/entry x"},
		{"command and args", []string{"echo"}, []string{"a", "b"}, "echo a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(commandLine(ep, cmd, tc.command, tc.args), " "); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResources(t *testing.T) {
	for _, tc := range []struct {
		name           string
		req            corev1.ResourceRequirements
		shares         uint64
		quota          int64
		memory         int64
		wantRequestCPU int64
	}{
		{"best effort", corev1.ResourceRequirements{}, 2, 0, 0, 0},
		{"requests only", corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": mustQuantity("250m")}}, 256, 0, 0, 250},
		{"limits only: request = limit", corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": mustQuantity("2"), "memory": mustQuantity("64Mi")}}, 2048, 200000, 64 << 20, 2000},
		{"tiny limit: minimum quota", corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": mustQuantity("1m")}}, 2, 1000, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ResourcesFor(tc.req)
			quota, period := r.Quota()
			if r.Shares() != tc.shares || quota != tc.quota || period != 100000 || r.MemoryLimitBytes != tc.memory || r.CPURequestMilli != tc.wantRequestCPU {
				t.Errorf("%+v: shares %d quota %d/%d", r, r.Shares(), quota, period)
			}
		})
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                    "docker.io/library/busybox:latest",
		"busybox:1.36":               "docker.io/library/busybox:1.36",
		"localhost:5000/fn/hello":    "localhost:5000/fn/hello:latest",
		"registry.k8s.io/pause:3.10": "registry.k8s.io/pause:3.10",
	} {
		if got, err := NormalizeImage(in); err != nil || got != want {
			t.Errorf("NormalizeImage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := NormalizeImage("Busybox"); err == nil {
		t.Error("want an error for an invalid name")
	}
}

func TestCRILogLines(t *testing.T) {
	long := strings.Repeat("y", maxLogLine+10)
	for _, tc := range []struct {
		name   string
		chunks []string
		err    error
		want   []string
	}{
		{"lines", []string{"a\n\nb c\n"}, io.EOF, []string{"F a", "F ", "F b c"}},
		{"split across reads", []string{"he", "llo\r\nwor", "ld\n"}, io.EOF, []string{"F hello", "F world"}},
		{"long line", []string{long + "\n"}, io.EOF, []string{"P " + long[:maxLogLine], "F " + long[maxLogLine:]}},
		{"long line in pieces", []string{long[:100], long[100:], "\n"}, io.EOF, []string{"P " + long[:maxLogLine], "F " + long[maxLogLine:]}},
		// As containerd: the output of a container that ends without a
		// newline is a partial line, and readers do not add one.
		{"last line without newline", []string{"x\nno newline"}, io.EOF, []string{"F x", "P no newline"}},
		{"detached mid-line", []string{"x\nhalf"}, os.ErrClosed, []string{"F x", "P half"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.log")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			var raw bytes.Buffer
			tio := &taskIO{log: f, sessions: map[*session]struct{}{{stderr: &raw}: {}}, copied: make(chan struct{})}
			wantRaw := strings.Join(tc.chunks, "")
			tio.copy("stderr", &chunkReader{chunks: append([]string(nil), tc.chunks...), err: tc.err})
			f.Close()
			b, _ := os.ReadFile(path)
			var got []string
			for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				ts, rest, _ := strings.Cut(line, " ")
				if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
					t.Errorf("timestamp %q: %v", ts, err)
				}
				stream, rest, _ := strings.Cut(rest, " ")
				if stream != "stderr" {
					t.Errorf("stream %q", stream)
				}
				got = append(got, rest)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", short(got), short(tc.want))
			}
			if raw.String() != wantRaw {
				t.Errorf("attached output differs from the raw bytes (%d bytes, want %d)", raw.Len(), len(wantRaw))
			}
		})
	}
}

// chunkReader returns its chunks one Read at a time, then err.
type chunkReader struct {
	chunks []string
	err    error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

func TestStatusOf(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	base := map[string]string{LabelKind: kindContainer, LabelContainerName: "c", "app": "x", labelStartedAt: now.Format(time.RFC3339Nano)}
	with := func(extra map[string]string) map[string]string {
		l := map[string]string{}
		for k, v := range base {
			l[k] = v
		}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		proc   *tasktypes.Process
		state  ContainerState
		code   int
		reason string
	}{
		{"running", base, &tasktypes.Process{Status: tasktypes.Status_RUNNING, Pid: 42}, StateRunning, 0, ""},
		{"stopped task", base, &tasktypes.Process{Status: tasktypes.Status_STOPPED, ExitStatus: 2}, StateExited, 2, ""},
		{"recorded exit", with(map[string]string{labelFinishedAt: now.Format(time.RFC3339Nano), labelExitCode: "137", labelReason: "OOMKilled"}), nil, StateExited, 137, "OOMKilled"},
		{"lost task", base, nil, StateExited, 137, "ContainerStatusUnknown"},
		{"never started", map[string]string{LabelKind: kindContainer}, nil, StateCreated, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := statusOf(containers.Container{ID: "id", Labels: tc.labels}, tc.proc)
			if st.State != tc.state || st.ExitCode != tc.code || st.Reason != tc.reason {
				t.Errorf("got %s %d %q", st.State, st.ExitCode, st.Reason)
			}
			if _, ok := st.Labels[LabelKind]; ok || (tc.labels["app"] != "" && st.Labels["app"] != "x") {
				t.Errorf("labels %v: want only the caller's", st.Labels)
			}
		})
	}
}
