package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

func TestShouldRestart(t *testing.T) {
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		code   int
		want   bool
	}{
		{corev1.RestartPolicyAlways, 0, true},
		{corev1.RestartPolicyAlways, 1, true},
		{corev1.RestartPolicyOnFailure, 0, false},
		{corev1.RestartPolicyOnFailure, 1, true},
		{corev1.RestartPolicyOnFailure, 137, true},
		{corev1.RestartPolicyNever, 0, false},
		{corev1.RestartPolicyNever, 2, false},
		{"", 0, true},
	} {
		if got := shouldRestart(tc.policy, tc.code); got != tc.want {
			t.Errorf("shouldRestart(%s, %d) = %v, want %v", tc.policy, tc.code, got, tc.want)
		}
	}
}

// state summarises a container status: "running", "terminated:Error:1",
// "waiting:CrashLoopBackOff".
func state(cs corev1.ContainerStatus) string {
	switch s := cs.State; {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return "terminated:" + s.Terminated.Reason + ":" + itoa(int(s.Terminated.ExitCode))
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason
	}
	return "none"
}

func itoa(n int) string { return strconv.Itoa(n) }

func condition(s corev1.PodStatus, t corev1.PodConditionType) string {
	for _, c := range s.Conditions {
		if c.Type == t {
			out := string(c.Status)
			if c.Reason != "" {
				out += ":" + c.Reason
			}
			return out
		}
	}
	return "missing"
}

func TestPodStartsAndRuns(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("web", "c1", "c2")
	w := e.worker(pod)
	s := w.snapshot().Status
	if s.Phase != corev1.PodPending || state(s.ContainerStatuses[0]) != "waiting:ContainerCreating" {
		t.Fatalf("before the first sync: %s %v", s.Phase, s.ContainerStatuses)
	}
	s = e.sync(w)
	if s.Phase != corev1.PodRunning {
		t.Fatalf("phase %s, want Running: %+v", s.Phase, s)
	}
	if s.PodIP != "10.244.0.2" || s.HostIP != "192.168.1.10" || len(s.PodIPs) != 1 || len(s.HostIPs) != 1 {
		t.Errorf("addresses: pod %s %v host %s %v", s.PodIP, s.PodIPs, s.HostIP, s.HostIPs)
	}
	for _, cs := range s.ContainerStatuses {
		if state(cs) != "running" || !cs.Ready || !*cs.Started || cs.RestartCount != 0 ||
			!strings.HasPrefix(cs.ContainerID, "containerd://c") || cs.ImageID != "docker.io/library/busybox@sha256:0123" {
			t.Errorf("container %+v", cs)
		}
	}
	for _, c := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if condition(s, c) != "True" {
			t.Errorf("%s = %s", c, condition(s, c))
		}
	}
	if s.StartTime == nil || !s.StartTime.Equal(&metav1.Time{Time: epoch}) || s.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("startTime %v qos %s", s.StartTime, s.QOSClass)
	}
	if got := e.rt.running(); !slices.Equal(got, []string{"c1/0", "c2/0"}) {
		t.Errorf("running %v", got)
	}

	// The container got the pod's files and its environment.
	var cfg runtime.ContainerConfig
	for _, c := range e.rt.configs {
		if c.Name == "c1" {
			cfg = c
		}
	}
	mounts := map[string]string{}
	for _, m := range cfg.Mounts {
		mounts[m.ContainerPath] = m.HostPath
	}
	dir := filepath.Join(e.root, "pods", "uid-web")
	for target, host := range map[string]string{
		"/etc/hosts": dir + "/etc-hosts", "/etc/resolv.conf": dir + "/resolv.conf", "/etc/hostname": dir + "/hostname",
		"/dev/termination-log": dir + "/containers/c1/0",
	} {
		if mounts[target] != host {
			t.Errorf("mount %s from %q, want %q", target, mounts[target], host)
		}
	}
	if want := filepath.Join(e.root, "logs", "default_web_uid-web", "c1", "0.log"); cfg.LogPath != want {
		t.Errorf("log path %s, want %s", cfg.LogPath, want)
	}
	hosts, _ := os.ReadFile(dir + "/etc-hosts")
	if !strings.Contains(string(hosts), "10.244.0.2\tweb\n") {
		t.Errorf("hosts:\n%s", hosts)
	}
	resolv, _ := os.ReadFile(dir + "/resolv.conf")
	if want := "search default.svc.cluster.local svc.cluster.local cluster.local example.com\nnameserver 10.96.0.10\noptions ndots:5\n"; string(resolv) != want {
		t.Errorf("resolv.conf:\n%s\nwant\n%s", resolv, want)
	}

	// Nothing to do on the next sync.
	e.rt.takeOps()
	e.sync(w)
	if ops := e.rt.takeOps(); len(ops) != 0 {
		t.Errorf("a steady pod was touched: %v", ops)
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	e := newTestEnv(t)
	rec := &recorder{}
	e.p.events = rec
	pod := testPod("crash", "c")
	w := e.worker(pod)
	e.sync(w)
	// Attempt n exits; the table says when attempt n+1 starts.
	steps := []struct {
		wait    time.Duration // after the exit, before the restart
		backoff string
	}{
		{0, ""}, // the first restart is immediate
		{10 * time.Second, "10s"},
		{20 * time.Second, "20s"},
		{40 * time.Second, "40s"},
		{80 * time.Second, "1m20s"},
		{160 * time.Second, "2m40s"},
		{300 * time.Second, "5m0s"},
		{300 * time.Second, "5m0s"},
	}
	for i, step := range steps {
		e.rt.exit(t, "c", 1)
		s := e.sync(w)
		cs := s.ContainerStatuses[0]
		if step.wait > 0 {
			if state(cs) != "waiting:CrashLoopBackOff" {
				t.Fatalf("step %d: %s, want CrashLoopBackOff", i, state(cs))
			}
			want := "back-off " + step.backoff + " restarting failed container=c pod=crash_default(uid-crash)"
			if cs.State.Waiting.Message != want {
				t.Errorf("step %d: message %q, want %q", i, cs.State.Waiting.Message, want)
			}
			if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" {
				t.Errorf("step %d: lastState %+v", i, cs.LastTerminationState)
			}
			if s.Phase != corev1.PodRunning || condition(s, corev1.PodReady) != "False:ContainersNotReady" {
				t.Errorf("step %d: phase %s ready %s", i, s.Phase, condition(s, corev1.PodReady))
			}
			e.clock.Step(step.wait - time.Second)
			if s := e.sync(w); state(s.ContainerStatuses[0]) != "waiting:CrashLoopBackOff" {
				t.Fatalf("step %d: restarted before the back-off ended", i)
			}
			e.clock.Step(time.Second)
			s = e.sync(w)
			cs = s.ContainerStatuses[0]
		}
		if state(cs) != "running" || int(cs.RestartCount) != i+1 {
			t.Fatalf("step %d: %s restarts %d, want running with %d", i, state(cs), cs.RestartCount, i+1)
		}
		if cs.LastTerminationState.Terminated == nil {
			t.Errorf("step %d: no lastState", i)
		}
	}
	// Only the current and the previous attempt are kept.
	e.sync(w)
	if n := len(observe(mustList(t, e.rt), pod.UID).containers); n != keepAttempts {
		t.Errorf("%d attempts kept, want %d", n, keepAttempts)
	}
	// A container that ran long enough restarts at once, then starts
	// over at 10s.
	e.clock.Step(11 * time.Minute)
	e.rt.exit(t, "c", 1)
	if s := e.sync(w); state(s.ContainerStatuses[0]) != "running" {
		t.Errorf("after a long run: %s, want an immediate restart", state(s.ContainerStatuses[0]))
	}
	e.rt.exit(t, "c", 1)
	s := e.sync(w)
	if got := s.ContainerStatuses[0].State.Waiting; got == nil || !strings.HasPrefix(got.Message, "back-off 10s") {
		t.Errorf("after a long run: %+v", s.ContainerStatuses[0].State)
	}
	var backoffs int
	for _, ev := range rec.events {
		if strings.HasPrefix(ev, "Warning BackOff") {
			backoffs++
		}
	}
	if want := len(steps); backoffs != want { // seven back-offs in the table, one after the long run
		t.Errorf("%d BackOff events, want one per back-off (%d)", backoffs, want)
	}
}

func mustList(t *testing.T, rt runtime.Runtime) []runtime.ContainerStatus {
	t.Helper()
	all, err := rt.ListContainers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestRestartPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy    corev1.RestartPolicy
		code      int
		restarted bool
		phase     corev1.PodPhase
		state     string
	}{
		{corev1.RestartPolicyAlways, 0, true, corev1.PodRunning, "running"},
		{corev1.RestartPolicyAlways, 3, true, corev1.PodRunning, "running"},
		{corev1.RestartPolicyOnFailure, 0, false, corev1.PodSucceeded, "terminated:Completed:0"},
		{corev1.RestartPolicyOnFailure, 3, true, corev1.PodRunning, "running"},
		{corev1.RestartPolicyNever, 0, false, corev1.PodSucceeded, "terminated:Completed:0"},
		{corev1.RestartPolicyNever, 3, false, corev1.PodFailed, "terminated:Error:3"},
	} {
		t.Run(string(tc.policy)+"/"+itoa(tc.code), func(t *testing.T) {
			e := newTestEnv(t)
			pod := testPod("p", "c")
			pod.Spec.RestartPolicy = tc.policy
			w := e.worker(pod)
			e.sync(w)
			e.rt.exit(t, "c", tc.code)
			s := e.sync(w)
			cs := s.ContainerStatuses[0]
			if got := cs.RestartCount > 0; got != tc.restarted {
				t.Errorf("restarted = %v, want %v", got, tc.restarted)
			}
			if s.Phase != tc.phase || state(cs) != tc.state {
				t.Errorf("phase %s state %s, want %s %s", s.Phase, state(cs), tc.phase, tc.state)
			}
			if tc.phase == corev1.PodSucceeded || tc.phase == corev1.PodFailed {
				// A finished pod stays finished: network down, sandbox stopped.
				e.sync(w)
				s = e.sync(w)
				if s.Phase != tc.phase || len(e.net.teardowns) != 1 {
					t.Errorf("after finishing: phase %s, teardowns %v", s.Phase, e.net.teardowns)
				}
				want := "False:PodCompleted"
				if tc.phase == corev1.PodFailed {
					want = "False:PodFailed"
				}
				if condition(s, corev1.PodReady) != want || condition(s, corev1.PodReadyToStartContainers) != "False" {
					t.Errorf("conditions %v", s.Conditions)
				}
				if sb := observe(mustList(t, e.rt), pod.UID).sandboxes; len(sb) != 1 || sb[0].State != runtime.StateExited {
					t.Errorf("sandbox %+v, want stopped", sb)
				}
			}
		})
	}
}

func TestInitContainers(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("init", "app")
	pod.Spec.InitContainers = []corev1.Container{{Name: "i1", Image: "busybox"}, {Name: "i2", Image: "busybox"}}
	w := e.worker(pod)

	s := e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"i1/0"}) {
		t.Fatalf("running %v, want i1 alone", got)
	}
	if s.Phase != corev1.PodPending || condition(s, corev1.PodInitialized) != "False:ContainersNotInitialized" ||
		state(s.ContainerStatuses[0]) != "waiting:PodInitializing" || state(s.InitContainerStatuses[1]) != "waiting:PodInitializing" {
		t.Fatalf("while i1 runs: %s %v %v", s.Phase, s.Conditions, s.ContainerStatuses)
	}
	e.rt.exit(t, "i1", 0)
	e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"i2/0"}) {
		t.Fatalf("running %v, want i2", got)
	}
	// A failing init container restarts with back-off (policy Always).
	e.rt.exit(t, "i2", 1)
	s = e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"i2/1"}) {
		t.Fatalf("running %v, want i2 again", got)
	}
	e.rt.exit(t, "i2", 1)
	s = e.sync(w)
	if state(s.InitContainerStatuses[1]) != "waiting:CrashLoopBackOff" || s.Phase != corev1.PodPending {
		t.Fatalf("i2: %s phase %s", state(s.InitContainerStatuses[1]), s.Phase)
	}
	e.clock.Step(10 * time.Second)
	e.sync(w)
	e.rt.exit(t, "i2", 0)
	s = e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"app/0"}) {
		t.Fatalf("running %v, want app", got)
	}
	if s.Phase != corev1.PodRunning || condition(s, corev1.PodInitialized) != "True" ||
		state(s.InitContainerStatuses[0]) != "terminated:Completed:0" || !s.InitContainerStatuses[0].Ready {
		t.Errorf("after init: %s %v %+v", s.Phase, s.Conditions, s.InitContainerStatuses)
	}
	// Init containers do not run again when the app restarts.
	e.rt.exit(t, "app", 1)
	e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"app/1"}) {
		t.Errorf("running %v, want app/1", got)
	}

	// With restartPolicy Never a failed init container fails the pod.
	pod2 := testPod("init-never", "app")
	pod2.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod2.Spec.InitContainers = []corev1.Container{{Name: "i1", Image: "busybox"}}
	w2 := e.worker(pod2)
	e.sync(w2)
	e.rt.exit(t, "i1", 2)
	if s := e.sync(w2); s.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", s.Phase)
	}
}

func TestImagePullErrors(t *testing.T) {
	e := newTestEnv(t)
	e.rt.pullErrs["nope:1"] = errors.New("not found")
	pod := testPod("img", "c")
	pod.Spec.Containers[0].Image = "nope:1"
	w := e.worker(pod)
	s := e.sync(w)
	cs := s.ContainerStatuses[0]
	if state(cs) != "waiting:ErrImagePull" || cs.State.Waiting.Message != `failed to pull image "nope:1": not found` {
		t.Fatalf("%s %q", state(cs), cs.State.Waiting.Message)
	}
	s = e.sync(w)
	cs = s.ContainerStatuses[0]
	want := `Back-off pulling image "nope:1": ErrImagePull: failed to pull image "nope:1": not found`
	if state(cs) != "waiting:ImagePullBackOff" || cs.State.Waiting.Message != want {
		t.Fatalf("%s %q, want %q", state(cs), cs.State.Waiting.Message, want)
	}
	if s.Phase != corev1.PodPending {
		t.Errorf("phase %s", s.Phase)
	}
	e.clock.Step(10 * time.Second)
	if s := e.sync(w); state(s.ContainerStatuses[0]) != "waiting:ErrImagePull" {
		t.Errorf("after the back-off: %s, want a new pull", state(s.ContainerStatuses[0]))
	}
	// The image appears: the next try after the back-off starts it.
	delete(e.rt.pullErrs, "nope:1")
	e.clock.Step(20 * time.Second)
	if s := e.sync(w); state(s.ContainerStatuses[0]) != "running" {
		t.Errorf("%s, want running", state(s.ContainerStatuses[0]))
	}

	never := testPod("never", "c")
	never.Spec.Containers[0].Image = "absent"
	never.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	s = e.sync(e.worker(never))
	if cs := s.ContainerStatuses[0]; state(cs) != "waiting:ErrImageNeverPull" ||
		cs.State.Waiting.Message != `Container image "absent" is not present with pull policy of Never` {
		t.Errorf("%s %q", state(cs), cs.State.Waiting.Message)
	}
}

func TestCreateContainerConfigError(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("cfg", "c")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k"}}}}
	s := e.sync(e.worker(pod))
	cs := s.ContainerStatuses[0]
	if state(cs) != "waiting:CreateContainerConfigError" || cs.State.Waiting.Message != `configmap "missing" not found` {
		t.Errorf("%s %q", state(cs), cs.State.Waiting.Message)
	}
}

func TestStartError(t *testing.T) {
	e := newTestEnv(t)
	e.rt.startErrs["c"] = errors.New(`exec: "nope": executable file not found in $PATH`)
	w := e.worker(testPod("start", "c"))
	s := e.sync(w)
	cs := s.ContainerStatuses[0]
	if state(cs) != "terminated:StartError:128" || !strings.Contains(cs.State.Terminated.Message, "executable file not found") {
		t.Fatalf("%s %+v", state(cs), cs.State)
	}
	s = e.sync(w)
	if state(s.ContainerStatuses[0]) != "terminated:StartError:128" && state(s.ContainerStatuses[0]) != "waiting:CrashLoopBackOff" {
		t.Errorf("second sync: %s", state(s.ContainerStatuses[0]))
	}
	s = e.sync(w)
	if state(s.ContainerStatuses[0]) != "waiting:CrashLoopBackOff" {
		t.Errorf("third sync: %s, want CrashLoopBackOff", state(s.ContainerStatuses[0]))
	}
}

func TestImageChangeRestarts(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("upd", "c1", "c2")
	w := e.worker(pod)
	e.sync(w)
	updated := pod.DeepCopy()
	updated.Spec.Containers[1].Image = "busybox:1.36"
	w.setPod(updated)
	e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"c1/0", "c2/1"}) {
		t.Errorf("running %v, want c2 restarted", got)
	}
	if img := w.snapshot().Status.ContainerStatuses[1].Image; img != "busybox:1.36" {
		t.Errorf("image %s", img)
	}
}

func TestActiveDeadline(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("deadline", "c")
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	w := e.worker(pod)
	e.sync(w)
	e.clock.Step(time.Minute)
	s := e.sync(w)
	if s.Phase != corev1.PodFailed || s.Reason != "DeadlineExceeded" || len(e.rt.running()) != 0 {
		t.Errorf("phase %s reason %s running %v", s.Phase, s.Reason, e.rt.running())
	}
}

func TestNetworkFailure(t *testing.T) {
	e := newTestEnv(t)
	e.net.setupErr = errors.New("no bridge")
	w := e.worker(testPod("net", "c"))
	s := e.sync(w)
	if condition(s, corev1.PodReadyToStartContainers) != "False" || s.PodIP != "" {
		t.Errorf("conditions %v ip %s", s.Conditions, s.PodIP)
	}
	if msg := s.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "no bridge") {
		t.Errorf("waiting message %q", msg)
	}
	if sb := observe(mustList(t, e.rt), w.uid).sandboxes; len(sb) != 0 {
		t.Errorf("failed sandbox left: %v", sb)
	}
	e.net.setupErr = nil
	e.sync(w) // in back-off
	e.clock.Step(time.Second)
	if s := e.sync(w); s.Phase != corev1.PodRunning {
		t.Errorf("after the network came back: %s", s.Phase)
	}
}

func TestDeadSandboxIsReplaced(t *testing.T) {
	e := newTestEnv(t)
	w := e.worker(testPod("sb", "c"))
	e.sync(w)
	sb := observe(mustList(t, e.rt), w.uid).sandboxes[0]
	e.rt.mu.Lock()
	e.rt.all[sb.ID].State = runtime.StateExited
	e.rt.mu.Unlock()
	s := e.sync(w)
	obs := observe(mustList(t, e.rt), w.uid)
	if len(obs.sandboxes) != 1 || obs.sandboxes[0].ID == sb.ID || s.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("sandboxes %v restarts %d", obs.sandboxes, s.ContainerStatuses[0].RestartCount)
	}
	if !slices.Contains(e.net.teardowns, sb.ID) {
		t.Errorf("the dead sandbox's network was not torn down: %v", e.net.teardowns)
	}
}

func TestDeletePod(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("del", "c1", "c2")
	if err := e.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(e.rt.running()) == 2 })
	if _, err := os.Stat(filepath.Join(e.root, "pods", "uid-del")); err != nil {
		t.Fatal(err)
	}
	deleted := pod.DeepCopy()
	deleted.DeletionGracePeriodSeconds = ptr.To[int64](7)
	if err := e.p.DeletePod(context.Background(), deleted); err != nil {
		t.Fatal(err)
	}
	if all := mustList(t, e.rt); len(all) != 0 {
		t.Errorf("left in the runtime: %v", all)
	}
	for id, grace := range e.rt.stops {
		if grace != 7*time.Second {
			t.Errorf("%s stopped with %s, want 7s", id, grace)
		}
	}
	if len(e.rt.stops) != 2 || len(e.net.teardowns) != 1 {
		t.Errorf("stops %v teardowns %v", e.rt.stops, e.net.teardowns)
	}
	for _, dir := range []string{"pods/uid-del", "logs/default_del_uid-del"} {
		if _, err := os.Stat(filepath.Join(e.root, dir)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", dir, err)
		}
	}
	if got, _ := e.p.GetPod(context.Background(), "default", "del"); got != nil {
		t.Errorf("GetPod after delete: %v", got)
	}
	if err := e.p.DeletePod(context.Background(), deleted); err != nil {
		t.Errorf("second delete: %v", err)
	}
	// Without a deletion grace period the spec's applies.
	if got := gracePeriod(testPod("x"), nil); got != 30*time.Second {
		t.Errorf("grace %s", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNotifyOnChange(t *testing.T) {
	e := newTestEnv(t)
	var got []corev1.PodPhase
	e.p.NotifyPods(context.Background(), func(p *corev1.Pod) { got = append(got, p.Status.Phase) })
	w := e.worker(testPod("n", "c"))
	e.sync(w)
	e.sync(w)
	e.rt.exit(t, "c", 0)
	e.sync(w)
	if len(got) != 2 || got[0] != corev1.PodRunning {
		t.Errorf("notifications %v, want two (running, restarted)", got)
	}
}

func TestAdoptAfterRestart(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("adopt", "c1", "c2")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	w := e.worker(pod)
	e.sync(w)
	e.rt.exit(t, "init", 0)
	e.sync(w)
	e.rt.exit(t, "c2", 1)
	before := e.sync(w)
	if before.Phase != corev1.PodRunning || before.ContainerStatuses[1].RestartCount != 1 {
		t.Fatalf("before: %+v", before)
	}
	running := e.rt.running()
	e.rt.takeOps()

	// A new provider on the same runtime: a restarted kubelet.
	_ = e.p.Close()
	p2 := e.provider()
	pods, err := p2.GetPods(context.Background())
	if err != nil || len(pods) != 1 {
		t.Fatalf("GetPods: %v %v", pods, err)
	}
	got := pods[0]
	if got.UID != pod.UID || got.Namespace != "default" || got.Name != "adopt" ||
		len(got.Spec.Containers) != 2 || got.Spec.Containers[0].Name != "c1" || got.Spec.InitContainers[0].Name != "init" {
		t.Fatalf("rebuilt pod %+v", got)
	}
	api := pod.DeepCopy()
	api.Status = before
	if err := p2.UpdatePod(context.Background(), api); err != nil {
		t.Fatal(err)
	}
	w2 := p2.worker("default", "adopt")
	w2.stop() // step it by hand from here
	s := e.sync(w2)
	if ops := e.rt.takeOps(); len(ops) != 0 {
		t.Errorf("adoption touched containers: %v", ops)
	}
	if !slices.Equal(e.rt.running(), running) {
		t.Errorf("running %v, want %v", e.rt.running(), running)
	}
	if s.ContainerStatuses[1].RestartCount != 1 || s.PodIP != before.PodIP || s.Phase != corev1.PodRunning ||
		!s.StartTime.Equal(before.StartTime) {
		t.Errorf("after adoption: %+v", s)
	}
	// It goes on as before: c2 crashes again and restarts as attempt 2.
	e.rt.exit(t, "c2", 1)
	e.sync(w2)
	e.clock.Step(time.Minute)
	s = e.sync(w2)
	if s.ContainerStatuses[1].RestartCount != 2 || state(s.ContainerStatuses[1]) != "running" {
		t.Errorf("after a crash: %+v", s.ContainerStatuses[1])
	}
}
