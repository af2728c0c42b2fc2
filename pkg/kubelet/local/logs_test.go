package local

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

const sampleLog = `2025-01-02T03:04:01.000000001Z stdout F first
2025-01-02T03:04:02.5Z stderr F second
2025-01-02T03:04:03Z stdout P par
2025-01-02T03:04:03.1Z stdout P ti
2025-01-02T03:04:03.2Z stdout F al
2025-01-02T03:04:04Z stdout F 
2025-01-02T03:04:05Z stdout F last
`

func TestReadLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(sampleLog), 0o644); err != nil {
		t.Fatal(err)
	}
	n := func(v int64) *int64 { return &v }
	now := time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC)
	for _, tc := range []struct {
		name string
		opts kubelet.LogOptions
		want string
	}{
		{"all", kubelet.LogOptions{}, "first\nsecond\npartial\n\nlast\n"},
		{"tail 2", kubelet.LogOptions{TailLines: n(2)}, "\nlast\n"},
		{"tail 3 spans a partial line", kubelet.LogOptions{TailLines: n(3)}, "partial\n\nlast\n"},
		{"tail 0", kubelet.LogOptions{TailLines: n(0)}, ""},
		{"tail more than there is", kubelet.LogOptions{TailLines: n(100)}, "first\nsecond\npartial\n\nlast\n"},
		{"timestamps", kubelet.LogOptions{TailLines: n(3), Timestamps: true},
			"2025-01-02T03:04:03.000000000Z partial\n2025-01-02T03:04:04.000000000Z \n2025-01-02T03:04:05.000000000Z last\n"},
		{"since seconds", kubelet.LogOptions{SinceSeconds: n(3)}, "partial\n\nlast\n"},
		{"since time", kubelet.LogOptions{SinceTime: &metav1.Time{Time: now.Add(-4 * time.Second)}}, "second\npartial\n\nlast\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := openLog(context.Background(), path, tc.opts, now, func() bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := logTail(path, 2, 3); got != "st\n" {
		t.Errorf("logTail %q", got)
	}
}

func TestFollowLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte("2025-01-02T03:04:01Z stdout F one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	running := make(chan bool, 1)
	running <- true
	isRunning := func() bool {
		v := <-running
		running <- v
		return v
	}
	r, err := openLog(context.Background(), path, kubelet.LogOptions{Follow: true}, time.Now(), isRunning)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 100)
	read := func() string {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return string(buf[:n])
	}
	if got := read(); got != "one\n" {
		t.Fatalf("%q", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A line written in two pieces comes out whole.
	_, _ = f.WriteString("2025-01-02T03:04:02Z stdout F t")
	time.Sleep(3 * followPoll)
	_, _ = f.WriteString("wo\n")
	if got := read(); got != "two\n" {
		t.Fatalf("%q", got)
	}
	// The container stops after a last line: it is read, then EOF.
	_, _ = f.WriteString("2025-01-02T03:04:03Z stdout F three\n")
	<-running
	running <- false
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "three\n" {
		t.Errorf("rest %q %v", rest, err)
	}
}

func TestGetContainerLogsAndExec(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("logs", "c")
	w := e.worker(pod)
	e.sync(w)
	write := func(attempt int, line string) {
		path := e.p.logPath(pod, "c", attempt)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("2025-01-02T03:04:01Z stdout F "+line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(0, "attempt zero")
	e.rt.exit(t, "c", 1)
	e.sync(w)
	write(1, "attempt one")
	e.sync(w)
	read := func(opts kubelet.LogOptions) string {
		t.Helper()
		r, err := e.p.GetContainerLogs(context.Background(), "default", "logs", "c", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return string(b)
	}
	if got := read(kubelet.LogOptions{}); got != "attempt one\n" {
		t.Errorf("current %q", got)
	}
	if got := read(kubelet.LogOptions{Previous: true}); got != "attempt zero\n" {
		t.Errorf("previous %q", got)
	}
	if _, err := e.p.GetContainerLogs(context.Background(), "default", "nope", "c", kubelet.LogOptions{}); err == nil {
		t.Error("logs of a pod that is not here")
	}

	e.rt.exec = func(id string, cmd []string, s runtime.ExecStreams) (int, error) {
		in, _ := io.ReadAll(s.Stdin)
		_, _ = s.Stdout.Write([]byte(id + ":" + strings.Join(cmd, " ") + ":" + string(in)))
		return 3, nil
	}
	var out bytes.Buffer
	code, err := e.p.RunInContainer(context.Background(), "default", "logs", "c", []string{"cat"},
		&attachIO{stdin: strings.NewReader("hi"), stdout: nopCloser{&out}})
	running := observe(mustList(t, e.rt), pod.UID).containers[0]
	if err != nil || code != 3 || out.String() != running.ID+":cat:hi" {
		t.Errorf("exec: %d %v %q", code, err, out.String())
	}
	e.rt.exit(t, "c", 0)
	e.sync(w)
	e.rt.mu.Lock()
	for _, c := range e.rt.all {
		if c.State == runtime.StateRunning && !c.IsSandbox {
			c.State = runtime.StateExited
		}
	}
	e.rt.mu.Unlock()
	if _, err := e.p.RunInContainer(context.Background(), "default", "logs", "c", []string{"true"}, &attachIO{}); err == nil ||
		!strings.Contains(err.Error(), "is not running") {
		t.Errorf("exec in a stopped container: %v", err)
	}
}

type attachIO struct {
	stdin  io.Reader
	stdout io.WriteCloser
}

func (a *attachIO) Stdin() io.Reader                { return a.stdin }
func (a *attachIO) Stdout() io.WriteCloser          { return a.stdout }
func (a *attachIO) Stderr() io.WriteCloser          { return nil }
func (a *attachIO) TTY() bool                       { return false }
func (a *attachIO) Resize() <-chan kubelet.TermSize { return nil }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestConfigureNode(t *testing.T) {
	e := newTestEnv(t)
	e.p.cfg.Capacity = corev1.ResourceList{"example.com/gpu": *resourceQuantity("2")}
	e.p.cfg.Reserved = corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity("100m")}
	e.p.cfg.RuntimeVersion = "containerd://1.7.0"
	node := &corev1.Node{}
	e.p.ConfigureNode(context.Background(), node)
	c, a := node.Status.Capacity, node.Status.Allocatable
	if c.Cpu().IsZero() || c.Memory().IsZero() || c.Pods().Value() != 110 || c.Name("example.com/gpu", "").Value() != 2 {
		t.Errorf("capacity %v", c)
	}
	if a.Cpu().MilliValue() != c.Cpu().MilliValue()-100 || a.Memory().Value() != c.Memory().Value()-100<<20 {
		t.Errorf("allocatable %v from capacity %v", a, c)
	}
	info := node.Status.NodeInfo
	if info.KernelVersion == "" || info.OSImage == "" || info.ContainerRuntimeVersion != "containerd://1.7.0" || info.Architecture == "" {
		t.Errorf("node info %+v", info)
	}
	if len(node.Status.Addresses) != 2 || node.Status.Addresses[0].Address != "192.168.1.10" || node.Status.Addresses[1].Address != "node1" {
		t.Errorf("addresses %v", node.Status.Addresses)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			t.Errorf("runtime reported down: %v", cond)
		}
	}
}

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func TestRotateLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	line := "2025-01-02T03:04:01Z stdout F " + strings.Repeat("x", 70) + "\n"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	running := true
	r, err := openLog(context.Background(), path, kubelet.LogOptions{Follow: true}, time.Now(), func() bool { return running })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan string, 100)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			if n > 0 {
				got <- string(b[:n])
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 6 {
		for range 20 {
			_, _ = f.WriteString(line)
		}
		if err := rotateLog(path, 1000, 3, now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * followPoll)
	}
	_, _ = f.WriteString("2025-01-02T03:04:09Z stdout F after rotation\n")
	rotated, _ := filepath.Glob(path + ".*")
	if len(rotated) != 3 {
		t.Errorf("rotated files %v, want the newest 3", rotated)
	}
	if info, _ := os.Stat(path); info.Size() > 100 {
		t.Errorf("log not truncated: %d bytes", info.Size())
	}
	// The follower goes on in the truncated file.
	deadline := time.After(5 * time.Second)
	var all strings.Builder
	for !strings.Contains(all.String(), "after rotation\n") {
		select {
		case s := <-got:
			all.WriteString(s)
		case <-deadline:
			t.Fatalf("the follower lost the file after rotation; read %d bytes", all.Len())
		}
	}
	removeLogs(path)
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}
