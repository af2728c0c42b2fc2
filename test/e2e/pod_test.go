package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/test/testutil"
)

// The seeds' multi-container pod, run through kubectl on a one-node
// cluster: shared localhost and hostPath volume, env, command, limits
// enforced in the cgroup; logs and exec; graceful delete.
func TestMultiContainerPodWithKubectl(t *testing.T) {
	c := newCluster(t, 1)
	k := c.kubectl
	shared := t.TempDir()
	c.apply(`apiVersion: v1
kind: Pod
metadata:
  name: mypod
  labels: {app: mypod}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: c1
    image: busybox
    command: ["sh", "-c"]
    args:
    - |
      trap 'echo got SIGTERM > /shared/term; exit 0' TERM
      echo "hello from $GREETER" > /www/index.html
      echo started c1
      httpd -p 8080 -h /www
      while true; do sleep 1; done
    env:
    - {name: GREETER, value: c1}
    - name: MY_POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    ports: [{containerPort: 8080}]
    volumeMounts:
    - {name: www, mountPath: /www}
    - {name: shared, mountPath: /shared}
  - name: c2
    image: busybox
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 200m, memory: 64Mi}
    volumeMounts:
    - {name: shared, mountPath: /data}
  volumes:
  - name: www
    emptyDir: {}
  - name: shared
    hostPath: {path: ` + shared + `}
`)
	pod := c.waitPod("default", "mypod", time.Minute, "Running and Ready", running)
	if pod.Status.PodIP == "" || pod.Status.HostIP != c.nodes[pod.Spec.NodeName].ip.String() {
		t.Errorf("pod IP %q host IP %q, want a pod IP and the node's IP", pod.Status.PodIP, pod.Status.HostIP)
	}
	wide := k.OK(t, "get", "pods", "-o", "wide")
	if !strings.Contains(wide, "2/2") || !strings.Contains(wide, "Running") || !strings.Contains(wide, pod.Status.PodIP) || !strings.Contains(wide, pod.Spec.NodeName) {
		t.Errorf("kubectl get pods -o wide:\n%s", wide)
	}

	if got := k.OK(t, "logs", "mypod", "-c", "c1"); !strings.Contains(got, "started c1") {
		t.Errorf("kubectl logs mypod -c c1 = %q", got)
	}
	// c2 reaches c1 on localhost: one network namespace.
	if got := k.OK(t, "exec", "mypod", "-c", "c2", "--", "wget", "-qO-", "localhost:8080"); got != "hello from c1\n" {
		t.Errorf("wget localhost:8080 from c2 = %q", got)
	}
	if got := k.OK(t, "exec", "mypod", "-c", "c1", "--", "sh", "-c", "echo $MY_POD_IP"); strings.TrimSpace(got) != pod.Status.PodIP {
		t.Errorf("MY_POD_IP from the downward API = %q, want %s", got, pod.Status.PodIP)
	}
	// The hostPath volume is the same directory for both containers and the host.
	k.OK(t, "exec", "mypod", "-c", "c2", "--", "sh", "-c", "echo from c2 > /data/note")
	if b, err := os.ReadFile(filepath.Join(shared, "note")); err != nil || string(b) != "from c2\n" {
		t.Errorf("host sees the hostPath file as %q, %v", b, err)
	}
	// Limits are enforced: the container's own cgroup carries them.
	if got := k.OK(t, "exec", "mypod", "-c", "c2", "--", "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"); strings.TrimSpace(got) != "67108864" {
		t.Errorf("c2 memory limit in its cgroup = %q, want 67108864 (64Mi)", got)
	}
	if got := k.OK(t, "exec", "mypod", "-c", "c2", "--", "cat", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"); strings.TrimSpace(got) != "20000" {
		t.Errorf("c2 CFS quota in its cgroup = %q, want 20000 (200m of a 100ms period)", got)
	}
	_, _, err := k.Run(t, "exec", "mypod", "-c", "c2", "--", "sh", "-c", "exit 7")
	var exit testutil.ExitError
	if !errors.As(err, &exit) || exit.Code != 7 {
		t.Errorf("kubectl exec sh -c 'exit 7': %v, want exit code 7", err)
	}

	// Delete: c1 traps SIGTERM and leaves; c2 (sleep as pid 1) ignores it
	// and is killed when the 3s grace period ends.
	start := time.Now()
	k.OK(t, "delete", "pod", "mypod", "--wait=false")
	c.waitFor(time.Minute, "mypod to disappear", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Pods("default").Get(ctx, "mypod", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	t.Logf("mypod gone %v after delete (grace period 3s)", time.Since(start).Round(100*time.Millisecond))
	if b, err := os.ReadFile(filepath.Join(shared, "term")); err != nil || string(b) != "got SIGTERM\n" {
		t.Errorf("c1 did not see SIGTERM before it was stopped: %q, %v", b, err)
	}
	if left := c.containersOf(context.Background()); len(left) > 0 {
		t.Errorf("containers left after the pod was deleted: %v", left)
	}
	events := k.OK(t, "get", "events", "--field-selector", "involvedObject.name=mypod")
	for _, reason := range []string{"Scheduled", "Pulled", "Created", "Started", "Killing"} {
		if !strings.Contains(events, reason) {
			t.Errorf("no %s event for mypod:\n%s", reason, events)
		}
	}
}

// restartPolicy and back-off as Kubernetes has them, and a kubelet restart
// that adopts the running pods instead of restarting them.
func TestRestartsAndKubeletRestart(t *testing.T) {
	c := newCluster(t, 1)
	k := c.kubectl
	c.apply(`apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - {name: c, image: busybox, command: ["sh", "-c", "echo crashing; exit 1"]}
---
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  restartPolicy: OnFailure
  containers:
  - name: c
    image: busybox
    # The marker outlives the first run in an emptyDir (a restarted
    # container gets a fresh root filesystem).
    command: ["sh", "-c", "test -f /state/x || { touch /state/x; exit 2; }"]
    volumeMounts: [{name: state, mountPath: /state}]
  volumes: [{name: state, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: ["sh", "-c", "exit 3"]}
---
apiVersion: v1
kind: Pod
metadata: {name: steady}
spec:
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo up; touch /tmp/ready; exec sleep 3600"]
    readinessProbe:
      exec: {command: ["cat", "/tmp/ready"]}
      periodSeconds: 1
`)
	crasher := c.waitPod("default", "crasher", 2*time.Minute, "restarts in CrashLoopBackOff", func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				return true
			}
		}
		return false
	})
	if cs := crasher.Status.ContainerStatuses[0]; cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("crasher's last termination: %+v, want exit code 1", cs.LastTerminationState)
	}
	if got := k.OK(t, "get", "pod", "crasher"); !strings.Contains(got, "CrashLoopBackOff") {
		t.Errorf("kubectl get pod crasher:\n%s", got)
	}
	if got := k.OK(t, "logs", "crasher", "--previous"); !strings.Contains(got, "crashing") {
		t.Errorf("kubectl logs --previous = %q", got)
	}
	once := c.waitPod("default", "once", time.Minute, "Succeeded after one restart", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded
	})
	if n := once.Status.ContainerStatuses[0].RestartCount; n != 1 {
		t.Errorf("OnFailure pod restarted %d times, want 1", n)
	}
	never := c.waitPod("default", "never", time.Minute, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if term := never.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 3 || never.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("Never pod: %s, want terminated with exit code 3 and no restart", describeStatus(never))
	}
	steady := c.waitPod("default", "steady", time.Minute, "Ready by its readiness probe", running)
	before := steady.Status.ContainerStatuses[0]

	// The kubelet restarts: the pod is adopted, not restarted.
	n := c.nodes[steady.Spec.NodeName]
	c.stopNode(n)
	c.startNode(n)
	time.Sleep(3 * time.Second) // a few sync rounds of the new kubelet
	after := c.waitPod("default", "steady", time.Minute, "Ready after the kubelet restart", running).Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 || !after.State.Running.StartedAt.Equal(&before.State.Running.StartedAt) {
		t.Errorf("after a kubelet restart the container is %s (restarts %d, started %v), want the same %s started %v",
			after.ContainerID, after.RestartCount, after.State.Running.StartedAt, before.ContainerID, before.State.Running.StartedAt)
	}
	if got := k.OK(t, "logs", "steady"); got != "up\n" {
		t.Errorf("logs after the kubelet restart = %q", got)
	}
	if got := k.OK(t, "exec", "steady", "--", "echo", "still here"); got != "still here\n" {
		t.Errorf("exec after the kubelet restart = %q", got)
	}
}
