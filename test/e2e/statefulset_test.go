package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStatefulSet: the example StatefulSet web on real nodes. Each pod is
// found by its own DNS name, web-<i>.web.<ns>.svc.cluster.local, through
// the headless Service (the real CoreDNS, from the endpoints' hostnames);
// each keeps what it wrote on its claim of the default StorageClass when
// it is deleted and comes back, and through a rolling update that
// replaces every pod.
func TestStatefulSet(t *testing.T) {
	c := newClusterWithAddons(t, 2)
	k := c.kubectl
	ctx := context.Background()
	const ns = "sts"
	k.OK(t, "create", "namespace", ns)
	k.OK(t, "apply", "-n", ns, "-f", filepath.Join("..", "..", "examples", "storage", "statefulset.yaml"))
	c.apply(clientPod("client", ""))
	c.waitPod("default", "client", 2*time.Minute, "Running", running)
	names := []string{"web-0", "web-1", "web-2"}
	pods := c.stsWaitRolledOut(t, ns, names)

	exec := func(cmd string) (string, error) {
		out, stderr, err := k.Run(t, "exec", "client", "--", "sh", "-c", cmd)
		if err != nil {
			return out, fmt.Errorf("%s: %v: %s %s", cmd, err, strings.TrimSpace(out), strings.TrimSpace(stderr))
		}
		return out, nil
	}
	// resolvesTo waits until the pod's DNS name answers with its IP
	// alone.
	resolvesTo := func(pod corev1.Pod) {
		t.Helper()
		name := fmt.Sprintf("%s.web.%s.svc.cluster.local", pod.Name, ns)
		var last string
		err := pollUntil(time.Minute, func() bool {
			out, err := exec("timeout 10 nslookup " + name)
			last = fmt.Sprint(out, err)
			if err != nil || !strings.Contains(out, pod.Status.PodIP+"\n") {
				return false
			}
			for _, other := range pods {
				if other.Name != pod.Name && strings.Contains(out, other.Status.PodIP+"\n") {
					return false
				}
			}
			return true
		})
		if err != nil {
			t.Fatalf("%s never resolved to %s alone; last answer: %s", name, pod.Status.PodIP, last)
		}
	}
	for _, n := range names {
		resolvesTo(pods[n])
	}

	if _, err := c.client.StorageV1().StorageClasses().Get(ctx, "local-path", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Skip("no local-path StorageClass: the claims are never provisioned")
	}
	page := func(pod string) string {
		t.Helper()
		out, stderr, err := k.Run(t, "exec", "-n", ns, pod, "--", "cat", "/data/index.html")
		if err != nil {
			t.Fatalf("%s: cat /data/index.html: %v %s", pod, err, stderr)
		}
		return out
	}
	pages := map[string]string{}
	for _, n := range names {
		pages[n] = page(n)
		if !strings.HasPrefix(pages[n], n+" since ") {
			t.Fatalf("%s serves %q", n, pages[n])
		}
	}
	// Another pod reaches web-0 by name and gets web-0's own page.
	if out, err := exec(fmt.Sprintf("timeout 10 wget -qO- http://web-0.web.%s.svc.cluster.local/", ns)); err != nil || out != pages["web-0"] {
		t.Errorf("http://web-0.web.%s/: %q, %v; want %q", ns, out, err, pages["web-0"])
	}

	// web-0 deleted: it comes back under its name, on its claim.
	old := pods["web-0"].UID
	k.OK(t, "delete", "pod", "-n", ns, "web-0", "--wait=false")
	c.waitFor(2*time.Minute, "web-0 back", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
		return err == nil && p.UID != old && running(p), nil
	})
	pods = c.stsWaitRolledOut(t, ns, names)
	if got := page("web-0"); got != pages["web-0"] {
		t.Errorf("web-0 after its deletion serves %q, want %q", got, pages["web-0"])
	}
	resolvesTo(pods["web-0"])

	// A rolling update replaces every pod; each finds its page.
	uids := map[string]types.UID{}
	for n, p := range pods {
		uids[n] = p.UID
	}
	k.OK(t, "patch", "statefulset", "web", "-n", ns, "-p", `{"spec":{"template":{"metadata":{"annotations":{"example.com/rev":"2"}}}}}`)
	if out := k.OK(t, "rollout", "status", "-n", ns, "statefulset/web", "--timeout=4m"); !strings.Contains(out, "roll out complete") {
		t.Fatalf("rollout status: %q", out)
	}
	pods = c.stsWaitRolledOut(t, ns, names)
	for _, n := range names {
		if pods[n].UID == uids[n] {
			t.Errorf("%s was not replaced by the rolling update", n)
		}
		if got := page(n); got != pages[n] {
			t.Errorf("%s after the rolling update serves %q, want %q", n, got, pages[n])
		}
	}

	// The claims outlive the set (Retain, the default); deleting them
	// frees their volumes, which the provisioner's reclaim policy
	// (Delete) removes from the nodes.
	k.OK(t, "delete", "statefulset", "web", "-n", ns)
	c.waitFor(2*time.Minute, "web's pods gone", func(ctx context.Context) (bool, error) {
		list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(list.Items) == 0, nil
	})
	for _, n := range names {
		claim, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+n, metav1.GetOptions{})
		if err != nil || claim.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim data-%s after the set's deletion: %v %+v", n, err, claim.Status)
		}
	}
	k.OK(t, "delete", "pvc", "-n", ns, "-l", "app=web")
	c.waitFor(2*time.Minute, "the claims' volumes removed", func(ctx context.Context) (bool, error) {
		pvs, err := c.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, pv := range pvs.Items {
			if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == ns {
				return false, nil
			}
		}
		return true, nil
	})
}

// stsWaitRolledOut waits until the StatefulSet web in ns has observed its
// spec and has every pod of names Running, Ready and at its update
// revision, and returns them by name.
func (c *cluster) stsWaitRolledOut(t *testing.T, ns string, names []string) map[string]corev1.Pod {
	t.Helper()
	pods := map[string]corev1.Pod{}
	c.waitFor(4*time.Minute, "statefulset web rolled out", func(ctx context.Context) (bool, error) {
		ss, err := c.client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || ss.Status.ObservedGeneration != ss.Generation || ss.Status.UpdateRevision == "" {
			return false, nil
		}
		for _, n := range names {
			p, err := c.client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil || !running(p) || p.DeletionTimestamp != nil || p.Labels[appsv1.ControllerRevisionHashLabelKey] != ss.Status.UpdateRevision {
				return false, nil
			}
			pods[n] = *p
		}
		return true, nil
	})
	return pods
}

// pollUntil calls cond every half second until it holds or timeout
// passes.
func pollUntil(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not after %s", timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}
