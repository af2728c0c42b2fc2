package local_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet"
)

// TestEphemeralContainers adds ephemeral containers to a running pod, as
// `kubectl debug --target` and the conformance specs do: the debugger
// runs in the pod's network, with the volume it mounts, its environment,
// and the target container's processes in view; exec and logs reach it
// and its status is reported running. One that exits is reported
// terminated with its exit code and is never started again; one with
// stdin takes an attach session.
func TestEphemeralContainers(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "debuggee", UID: types.UID("uid-ec-" + randomHex(t, 4)), Generation: 1},
		Spec: corev1.PodSpec{
			NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sh", "-c", "mkdir -p /www && echo hello-from-app > /www/index.html && echo shared > /data/note && exec httpd -f -p 8080 -h /www"},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/data"}},
			}},
		},
	}
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	n.waitStatus("default", "debuggee", time.Minute, "the app to run", func(s *corev1.PodStatus) bool {
		return s.Phase == corev1.PodRunning && s.ContainerStatuses[0].State.Running != nil
	})

	// kubectl debug -it debuggee --image=busybox --target=app.
	debug := pod.DeepCopy()
	debug.Generation = 2
	debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
			Command:      []string{"sh", "-c", "while true; do echo polo; sleep 2; done"},
			Env:          []corev1.EnvVar{{Name: "DEBUG_LEVEL", Value: "high"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/data", ReadOnly: true}},
			Stdin:        true, TTY: true,
		}, TargetContainerName: "app"},
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "oneshot", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", "echo done; exit 3"},
		}},
	}
	if err := n.p.UpdatePod(ctx, debug); err != nil {
		t.Fatal(err)
	}
	s := n.waitStatus("default", "debuggee", time.Minute, "the debugger to run and oneshot to exit", func(s *corev1.PodStatus) bool {
		return len(s.EphemeralContainerStatuses) == 2 && s.EphemeralContainerStatuses[0].State.Running != nil &&
			s.EphemeralContainerStatuses[1].State.Terminated != nil
	})
	dbg, oneshot := s.EphemeralContainerStatuses[0], s.EphemeralContainerStatuses[1]
	if dbg.Name != "debugger" || dbg.Ready || dbg.Started != nil || dbg.ContainerID == "" || dbg.Resources != nil {
		t.Errorf("debugger's status: %+v", dbg)
	}
	if term := oneshot.State.Terminated; oneshot.Name != "oneshot" || term.ExitCode != 3 || term.Reason != "Error" {
		t.Errorf("oneshot's status: %+v", oneshot)
	}
	if s.Phase != corev1.PodRunning || !podReady(s) {
		t.Errorf("the pod is %s, ready %v: ephemeral containers must not change its phase or readiness", s.Phase, podReady(s))
	}

	if out, code := n.exec("default", "debuggee", "debugger", "echo", "marco"); code != 0 || out != "marco\n" {
		t.Errorf("exec echo marco in the debugger: %q, exit %d", out, code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(n.logsOf("default", "debuggee", "debugger", false), "polo") {
		if time.Now().After(deadline) {
			t.Fatalf("the debugger's logs never said polo: %q", n.logsOf("default", "debuggee", "debugger", false))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := n.logsOf("default", "debuggee", "oneshot", false); got != "done\n" {
		t.Errorf("oneshot's logs: %q", got)
	}
	// The pod's network, the volume, its own environment, and the
	// target's processes.
	if out, code := n.exec("default", "debuggee", "debugger", "wget", "-qO-", "http://127.0.0.1:8080/"); code != 0 || out != "hello-from-app\n" {
		t.Errorf("the app over localhost from the debugger: %q, exit %d", out, code)
	}
	if out, _ := n.exec("default", "debuggee", "debugger", "cat", "/data/note"); out != "shared\n" {
		t.Errorf("the shared volume in the debugger: %q", out)
	}
	if out, _ := n.exec("default", "debuggee", "debugger", "sh", "-c", "echo $DEBUG_LEVEL"); out != "high\n" {
		t.Errorf("the debugger's environment: %q", out)
	}
	if out, _ := n.exec("default", "debuggee", "debugger", "ps", "-o", "args"); !strings.Contains(out, "httpd -f -p 8080") {
		t.Errorf("the debugger does not see the target's processes:\n%s", out)
	}

	// A third one, with stdin, takes an attach session; meanwhile oneshot
	// stays as it ended.
	more := debug.DeepCopy()
	more.Generation = 3
	more.Spec.EphemeralContainers = append(more.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "shell", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh"}, Stdin: true,
	}})
	if err := n.p.UpdatePod(ctx, more); err != nil {
		t.Fatal(err)
	}
	s = n.waitStatus("default", "debuggee", time.Minute, "the shell to run", func(s *corev1.PodStatus) bool {
		return len(s.EphemeralContainerStatuses) == 3 && s.EphemeralContainerStatuses[2].State.Running != nil
	})
	if got := s.EphemeralContainerStatuses[1]; got.State.Terminated == nil || got.ContainerID != oneshot.ContainerID || got.RestartCount != 0 {
		t.Errorf("oneshot after more syncs: %+v, want still its one terminated attempt", got)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := &watchWriter{want: "attached-ok", seen: cancel}
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	done := make(chan error, 1)
	go func() {
		done <- n.p.AttachToContainer(actx, "default", "debuggee", "shell", &attachSession{stdin: stdinR, stdout: out})
	}()
	// The attached session sees what the shell prints from now on; the
	// command is typed until the session sees its output.
	for actx.Err() == nil {
		if _, err := io.WriteString(stdinW, "echo attached-ok\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-actx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	<-done
	if !out.found() {
		t.Fatalf("attach to the shell: output %q", out.String())
	}
}

func podReady(s *corev1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// attachSession is an attach session with stdin and stdout.
type attachSession struct {
	stdin  io.Reader
	stdout io.Writer
}

func (s *attachSession) Stdin() io.Reader                { return s.stdin }
func (s *attachSession) Stdout() io.WriteCloser          { return nopWriteCloser{s.stdout} }
func (s *attachSession) Stderr() io.WriteCloser          { return nopWriteCloser{s.stdout} }
func (s *attachSession) TTY() bool                       { return false }
func (s *attachSession) Resize() <-chan kubelet.TermSize { return nil }

// watchWriter collects output and calls seen once it holds want.
type watchWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen func()
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.seen()
	}
	return len(p), nil
}

func (w *watchWriter) found() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Contains(w.b.String(), w.want)
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
