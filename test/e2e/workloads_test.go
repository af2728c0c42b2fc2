package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The workload controllers on real pods: a ReplicaSet keeps its pods, a
// rolling update keeps availability and can be undone, a failing Job
// retries backoffLimit times, deleting a Deployment or a namespace
// removes what it owns or holds.
func TestWorkloads(t *testing.T) {
	c := newCluster(t, 1)
	k := c.kubectl
	ctx := context.Background()

	t.Run("ReplicaSet keeps its pods", func(t *testing.T) {
		c.apply(`apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: keeper}
spec:
  replicas: 3
  selector: {matchLabels: {app: keeper}}
  template:
    metadata: {labels: {app: keeper}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "trap 'exit 1' TERM; while true; do sleep 1; done"]
`)
		pods := c.waitReady(t, "app=keeper", 3)
		victim := pods[0]
		k.OK(t, "delete", "pod", victim.Name, "--wait=false")
		after := c.waitReady(t, "app=keeper", 3)
		for _, p := range after {
			if p.Name == victim.Name {
				t.Errorf("deleted pod %s still counted", p.Name)
			}
		}
		// A container that exits is restarted in its pod; the set is unchanged.
		k.OK(t, "exec", after[0].Name, "--", "kill", "1")
		c.waitPod("default", after[0].Name, time.Minute, "a restart", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 && running(p)
		})
		if got := c.waitReady(t, "app=keeper", 3); len(got) != 3 {
			t.Errorf("after a container exit: %d pods", len(got))
		}
		out := k.OK(t, "get", "rs", "keeper", "--no-headers")
		if f := strings.Fields(out); len(f) < 4 || f[1] != "3" || f[2] != "3" || f[3] != "3" {
			t.Errorf("kubectl get rs keeper (DESIRED CURRENT READY 3 3 3):\n%s", out)
		}
	})

	t.Run("rolling update keeps availability and undoes", func(t *testing.T) {
		c.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`)
		if out := k.OK(t, "rollout", "status", "deployment/web", "--timeout=90s"); !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
		// Image A to B: busybox to the pause image (both are on every
		// node), which runs its own entrypoint.
		minReady := c.watchReadyDuring(t, "app=web", func() {
			k.OK(t, "patch", "deployment", "web", "--type=json", "-p", `[
				{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "registry.k8s.io/pause:3.10"},
				{"op": "remove", "path": "/spec/template/spec/containers/0/command"}]`)
			k.OK(t, "rollout", "status", "deployment/web", "--timeout=120s")
		})
		if minReady < 3 {
			t.Errorf("ready pods dropped to %d during the rollout (replicas 3, maxUnavailable 0)", minReady)
		}
		if imgs := c.images(t, "app=web"); len(imgs) != 1 || imgs["registry.k8s.io/pause:3.10"] != 3 {
			t.Errorf("after the rollout: %v", imgs)
		}
		history := k.OK(t, "rollout", "history", "deployment/web")
		if !strings.Contains(history, "1 ") || !strings.Contains(history, "2 ") {
			t.Errorf("rollout history:\n%s", history)
		}
		k.OK(t, "rollout", "undo", "deployment/web")
		k.OK(t, "rollout", "status", "deployment/web", "--timeout=120s")
		c.waitFor(time.Minute, "busybox pods back", func(ctx context.Context) (bool, error) {
			imgs := c.images(t, "app=web")
			return len(imgs) == 1 && imgs["busybox"] == 3, nil
		})
	})

	t.Run("failing Job retries backoffLimit times", func(t *testing.T) {
		c.apply(`apiVersion: batch/v1
kind: Job
metadata: {name: flaky}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: busybox, command: ["sh", "-c", "exit 4"]}]
`)
		c.waitFor(2*time.Minute, "the Job to fail", func(ctx context.Context) (bool, error) {
			j, err := c.client.BatchV1().Jobs("default").Get(ctx, "flaky", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, cond := range j.Status.Conditions {
				if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
					if cond.Reason != "BackoffLimitExceeded" {
						t.Errorf("Failed condition reason %q, want BackoffLimitExceeded", cond.Reason)
					}
					return true, nil
				}
			}
			return false, nil
		})
		j, _ := c.client.BatchV1().Jobs("default").Get(ctx, "flaky", metav1.GetOptions{})
		if j.Status.Failed != 2 || j.Status.Succeeded != 0 {
			t.Errorf("job status failed=%d succeeded=%d, want 2 pods failed (1 + backoffLimit 1)", j.Status.Failed, j.Status.Succeeded)
		}
		c.apply(`apiVersion: batch/v1
kind: Job
metadata: {name: works}
spec:
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: ["sh", "-c", "echo done"]}]
`)
		k.OK(t, "wait", "--for=condition=complete", "job/works", "--timeout=90s")
	})

	t.Run("deleting a Deployment removes its ReplicaSets and pods", func(t *testing.T) {
		k.OK(t, "delete", "deployment", "web")
		c.waitFor(time.Minute, "web's ReplicaSets and pods to go", func(ctx context.Context) (bool, error) {
			rss, err := c.client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, nil
			}
			pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			return err == nil && len(rss.Items) == 0 && len(pods.Items) == 0, nil
		})
	})

	t.Run("deleting a namespace empties it", func(t *testing.T) {
		k.OK(t, "create", "namespace", "scratch")
		c.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: filler, namespace: scratch}
spec:
  replicas: 2
  selector: {matchLabels: {app: filler}}
  template:
    metadata: {labels: {app: filler}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: scratch}
data: {a: b}
`)
		c.waitFor(time.Minute, "2 filler pods Running", func(ctx context.Context) (bool, error) {
			pods, err := c.client.CoreV1().Pods("scratch").List(ctx, metav1.ListOptions{})
			n := 0
			for i := range pods.Items {
				if running(&pods.Items[i]) {
					n++
				}
			}
			return err == nil && n == 2, nil
		})
		k.OK(t, "delete", "namespace", "scratch", "--wait=false")
		if _, err := c.client.CoreV1().ConfigMaps("scratch").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("create in a terminating namespace: %v, want Forbidden", err)
		}
		c.waitFor(2*time.Minute, "namespace scratch to go", func(ctx context.Context) (bool, error) {
			_, err := c.client.CoreV1().Namespaces().Get(ctx, "scratch", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
}

// waitReady waits until exactly n pods match the selector, all Running
// and Ready and none terminating, and returns them.
func (c *cluster) waitReady(t *testing.T, selector string, n int) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	c.waitFor(2*time.Minute, fmt.Sprintf("%d ready pods %s", n, selector), func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		got = got[:0]
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			if !running(p) {
				return false, nil
			}
			got = append(got, *p)
		}
		return len(got) == n, nil
	})
	return got
}

// images counts the selected, not terminating pods by their image.
func (c *cluster) images(t *testing.T, selector string) map[string]int {
	t.Helper()
	pods, err := c.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

// watchReadyDuring runs fn while watching every change of the selected
// pods, and returns the fewest Ready, not terminating pods seen at once.
func (c *cluster) watchReadyDuring(t *testing.T, selector string, fn func()) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := c.client.CoreV1().Pods("default")
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]*corev1.Pod{}
	for i := range list.Items {
		state[list.Items[i].Name] = &list.Items[i]
	}
	ready := func() int {
		n := 0
		for _, p := range state {
			if p.DeletionTimestamp == nil && running(p) {
				n++
			}
		}
		return n
	}
	least := ready()
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(state, p.Name)
			} else {
				state[p.Name] = p
			}
			least = min(least, ready())
		}
	}()
	fn()
	w.Stop()
	<-done
	return least
}
