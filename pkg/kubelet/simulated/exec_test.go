package simulated

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet"
)

func TestParseScript(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []command
		err  string
	}{
		{src: "echo hi", want: []command{{argv: []string{"echo", "hi"}}}},
		{src: `echo 'a  b' "c \"d\"" e\ f`, want: []command{{argv: []string{"echo", "a  b", `c "d"`, "e f"}}}},
		{src: "true && echo ok || echo no; exit 3\n", want: []command{
			{argv: []string{"true"}}, {op: "&&", argv: []string{"echo", "ok"}},
			{op: "||", argv: []string{"echo", "no"}}, {op: ";", argv: []string{"exit", "3"}}}},
		{src: ";;\n", want: nil},
		{src: "echo 'open", err: "unterminated"},
		{src: "&& echo", err: `unexpected "&&"`},
		{src: "echo a &&", err: "unexpected end"},
		{src: "echo $HOME", err: `"$" is not supported`},
		{src: "echo hi > f", err: `">" is not supported`},
	} {
		got, err := parseScript(tc.src)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseScript(%q) error %v, want %q", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseScript(%q) = %+v, %v; want %+v", tc.src, got, err, tc.want)
		}
	}
}

func TestShell(t *testing.T) {
	for _, tc := range []struct {
		argv           []string
		stdin          string
		code           int
		stdout, stderr string
	}{
		{argv: []string{"echo", "hi", "there"}, stdout: "hi there\n"},
		{argv: []string{"/bin/echo", "-n", "x"}, stdout: "x"},
		{argv: []string{"cat"}, stdin: "in\n", stdout: "in\n"},
		{argv: []string{"cat", "/etc/passwd"}, code: 1, stderr: "cat: can't open '/etc/passwd': No such file or directory\n"},
		{argv: []string{"hostname"}, stdout: "pod\n"},
		{argv: []string{"false"}, code: 1},
		{argv: []string{"sh", "-c", "exit 3"}, code: 3},
		{argv: []string{"sh", "-c", "false || echo recovered; exit"}, stdout: "recovered\n"},
		{argv: []string{"sh", "-c", "false && echo skipped"}, code: 1},
		{argv: []string{"sh", "-c", "exit 256"}, code: 0},
		{argv: []string{"sh", "-c", "echo 'unclosed"}, code: 2, stderr: "sh: syntax error: unterminated quoted string\n"},
		{argv: []string{"sh"}, stdin: "echo one\ncat\nrest\n", stdout: "one\nrest\n"},
		{argv: []string{"sh"}, stdin: "echo one\nexit 5\necho two\n", code: 5, stdout: "one\n"},
		{argv: []string{"ls", "/"}, code: 127, stderr: "sh: ls: not found\n"},
		{argv: []string{"sleep", "0.01"}},
	} {
		var out, errOut bytes.Buffer
		sh := &shell{hostname: "pod", stdout: &out, stderr: &errOut}
		if tc.stdin != "" {
			sh.stdin = strings.NewReader(tc.stdin)
		}
		code := sh.run(context.Background(), tc.argv)
		if code != tc.code || out.String() != tc.stdout || errOut.String() != tc.stderr {
			t.Errorf("%q: code %d stdout %q stderr %q; want %d %q %q", tc.argv, code, out.String(), errOut.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// session is an AttachIO over buffers.
type session struct {
	stdin  io.Reader
	stdout *bytes.Buffer
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (s *session) Stdin() io.Reader { return s.stdin }
func (s *session) Stdout() io.WriteCloser {
	if s.stdout == nil {
		return nil
	}
	return nopCloser{s.stdout}
}
func (s *session) Stderr() io.WriteCloser          { return nil }
func (s *session) TTY() bool                       { return false }
func (s *session) Resize() <-chan kubelet.TermSize { return nil }

func readAll(t *testing.T, r io.ReadCloser, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLogsExecAttach(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
	p, err := New(Config{NodeName: "n", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Annotations: map[string]string{AnnotationLogs: "a\nb"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "c"}}}}
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	logs := func(opts kubelet.LogOptions) string {
		r, err := p.GetContainerLogs(ctx, "ns", "p", "c", opts)
		return readAll(t, r, err)
	}
	if got := logs(kubelet.LogOptions{}); got != "simulated container c started\na\nb\n" {
		t.Errorf("logs = %q", got)
	}
	if got := logs(kubelet.LogOptions{TailLines: ptr.To[int64](1), Timestamps: true}); got != "2024-05-06T07:08:09.000000000Z b\n" {
		t.Errorf("logs --tail=1 --timestamps = %q", got)
	}
	if _, err := p.GetContainerLogs(ctx, "ns", "p", "c", kubelet.LogOptions{Previous: true}); err == nil {
		t.Error("previous logs of a container that never restarted: no error")
	}

	// A line sent through attach becomes output; a follower sees it.
	clock.Step(time.Minute)
	follow, err := p.GetContainerLogs(ctx, "ns", "p", "c", kubelet.LogOptions{Follow: true, SinceSeconds: ptr.To[int64](30)})
	if err != nil {
		t.Fatal(err)
	}
	var attached bytes.Buffer
	if err := p.AttachToContainer(ctx, "ns", "p", "c", &session{stdin: strings.NewReader("typed\n"), stdout: &attached}); err != nil {
		t.Fatal(err)
	}
	if attached.String() != "typed\n" {
		t.Errorf("attach saw %q", attached.String())
	}
	buf := make([]byte, 64)
	n, err := follow.Read(buf)
	if err != nil || string(buf[:n]) != "typed\n" {
		t.Errorf("follow read %q, %v; want only the line after --since-seconds", buf[:n], err)
	}

	// Exec runs the shell; a restart keeps the previous instance's logs.
	var out bytes.Buffer
	if code, err := p.RunInContainer(ctx, "ns", "p", "c", []string{"sh", "-c", "echo x; exit 2"}, &session{stdout: &out}); err != nil || code != 2 || out.String() != "x\n" {
		t.Errorf("exec: %d %v %q", code, err, out.String())
	}
	p.finish("ns", "p", "u1", 1) // restartPolicy Always: restarts
	if n, err := follow.Read(buf); err != nil || string(buf[:n]) != "simulated container c exited with code 1\n" {
		t.Errorf("follow after exit: %q, %v", buf[:n], err)
	}
	if _, err := follow.Read(buf); err != io.EOF {
		t.Errorf("follow after the instance ended: %v, want EOF", err)
	}
	if got := logs(kubelet.LogOptions{Previous: true, TailLines: ptr.To[int64](2)}); got != "typed\nsimulated container c exited with code 1\n" {
		t.Errorf("previous logs = %q", got)
	}
	if got := logs(kubelet.LogOptions{}); got != "simulated container c started\na\nb\n" {
		t.Errorf("logs after restart = %q", got)
	}
	if err := p.DeletePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunInContainer(ctx, "ns", "p", "c", []string{"true"}, &session{}); err == nil {
		t.Error("exec in a deleted pod: no error")
	}
}
