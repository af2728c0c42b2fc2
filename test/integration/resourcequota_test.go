package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/quota"
)

// quotaPod is a pod of one container requesting cpu ("" requests none).
func quotaPod(name, cpu string) *corev1.Pod {
	c := corev1.Container{Name: "c", Image: "busybox"}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// waitQuotaUsed waits for the quota's status to show its hard limits
// and want as used.
func waitQuotaUsed(t *testing.T, c *cluster, ns, name string, want map[corev1.ResourceName]string) {
	t.Helper()
	wantList := corev1.ResourceList{}
	for k, v := range want {
		wantList[k] = resource.MustParse(v)
	}
	waitFor(t, fmt.Sprintf("quota %s used %v", name, want), func(ctx context.Context) (bool, error) {
		q, err := c.client.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return quota.Equals(q.Status.Hard, q.Spec.Hard) && quota.Equals(q.Status.Used, wantList), nil
	})
}

// A ResourceQuota's status follows what its namespace holds, admission
// refuses what would exceed it (atomically, under concurrent creates),
// a LimitRange's defaults and bounds apply to new pods, and kubectl
// creates, lists and describes quotas.
func TestResourceQuota(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	ns := createNamespace(t, ctx, c, "quota-test")
	waitFor(t, "kube-root-ca.crt", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, nil
	})
	quotas, pods, cms := c.client.CoreV1().ResourceQuotas(ns), c.client.CoreV1().Pods(ns), c.client.CoreV1().ConfigMaps(ns)
	_, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "test-quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceConfigMaps: resource.MustParse("3"),
			corev1.ResourceRequestsCPU: resource.MustParse("1"),
		}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitQuotaUsed(t, c, ns, "test-quota", map[corev1.ResourceName]string{"pods": "0", "configmaps": "1", "requests.cpu": "0"})

	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{quotaPod("p1", "500m"), quotaPod("p2", "300m")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitQuotaUsed(t, c, ns, "test-quota", map[corev1.ResourceName]string{"pods": "2", "configmaps": "2", "requests.cpu": "800m"})

	_, err = pods.Create(ctx, quotaPod("p3", "100m"), metav1.CreateOptions{})
	want := "exceeded quota: test-quota, requested: pods=1, used: pods=2, limited: pods=2"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a third pod: %v, want 403 %q", err, want)
	}
	if _, err := pods.Get(ctx, "p3", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused pod: %v, want NotFound", err)
	}
	_, err = pods.Create(ctx, quotaPod("no-cpu", ""), metav1.CreateOptions{})
	want = "failed quota: test-quota: must specify requests.cpu for: c"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a pod without a cpu request: %v, want 403 %q", err, want)
	}

	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQuotaUsed(t, c, ns, "test-quota", map[corev1.ResourceName]string{"pods": "1", "configmaps": "1", "requests.cpu": "300m"})
	_, err = pods.Create(ctx, quotaPod("big", "800m"), metav1.CreateOptions{})
	want = "exceeded quota: test-quota, requested: requests.cpu=800m, used: requests.cpu=300m, limited: requests.cpu=1"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a pod above the cpu left: %v, want 403 %q", err, want)
	}
	if _, err := pods.Create(ctx, quotaPod("fits", "700m"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod taking the cpu left: %v", err)
	}
	waitQuotaUsed(t, c, ns, "test-quota", map[corev1.ResourceName]string{"pods": "2", "configmaps": "1", "requests.cpu": "1"})

	t.Run("concurrent creates", func(t *testing.T) {
		ns := createNamespace(t, ctx, c, "quota-race")
		qs := c.client.CoreV1().ResourceQuotas(ns)
		if _, err := qs.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "three"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitQuotaUsed(t, c, ns, "three", map[corev1.ResourceName]string{"pods": "0"})
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = c.client.CoreV1().Pods(ns).Create(ctx, quotaPod(fmt.Sprintf("racer-%d", i), ""), metav1.CreateOptions{})
			})
		}
		wg.Wait()
		created := 0
		for _, err := range errs {
			switch {
			case err == nil:
				created++
			case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: three"):
				t.Errorf("a refused racer: %v, want 403 exceeded quota", err)
			}
		}
		list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created != 3 || len(list.Items) != 3 {
			t.Errorf("8 pods racing for 3: %d created, %d stored, want 3", created, len(list.Items))
		}
		waitQuotaUsed(t, c, ns, "three", map[corev1.ResourceName]string{"pods": "3"})
	})

	t.Run("limit range", func(t *testing.T) {
		ns := createNamespace(t, ctx, c, "limits-test")
		_, err := c.client.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:           corev1.LimitTypeContainer,
				Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.client.CoreV1().Pods(ns).Create(ctx, quotaPod("plain", ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := got.Spec.Containers[0].Resources
		wantR := corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		}
		if !quota.Equals(r.Requests, wantR.Requests) || !quota.Equals(r.Limits, wantR.Limits) {
			t.Errorf("a pod without resources got %v, want the LimitRange's defaults %v", r, wantR)
		}
		big := quotaPod("big", "")
		big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		_, err = c.client.CoreV1().Pods(ns).Create(ctx, big, metav1.CreateOptions{})
		want := "maximum cpu usage per Container is 1, but limit is 2"
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("a pod above the max: %v, want 403 %q", err, want)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		k := newKubectl(t, c)
		k.ok(t, "create", "quota", "more", "--hard=pods=5,count/secrets=4", "-n", ns)
		waitFor(t, "quota more counted", func(ctx context.Context) (bool, error) {
			q, err := quotas.Get(ctx, "more", metav1.GetOptions{})
			return err == nil && len(q.Status.Used) == 2, err
		})
		out := k.ok(t, "get", "quota", "-n", ns)
		if h := tableHeader(out); strings.Join(h, " ") != "NAME AGE REQUEST LIMIT" {
			t.Errorf("kubectl get quota header %v\n%s", h, out)
		}
		if !strings.Contains(out, "pods: 2/5") || !strings.Contains(out, "requests.cpu: 1/1") {
			t.Errorf("kubectl get quota:\n%s", out)
		}
		out = k.ok(t, "describe", "quota", "test-quota", "-n", ns)
		for _, w := range []string{"Resource", "Used", "Hard", "requests.cpu", "pods"} {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl describe quota lacks %q:\n%s", w, out)
			}
		}
		out = k.ok(t, "get", "limits", "-n", "limits-test")
		if h := tableHeader(out); strings.Join(h, " ") != "NAME CREATED AT" {
			t.Errorf("kubectl get limits header %v\n%s", h, out)
		}
	})
}
