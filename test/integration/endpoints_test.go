package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minik8s/minik8s/pkg/controller/endpointslice"
)

// epCreatePod creates a pod bound to a node no kubelet runs, and gives it
// the status a kubelet would: Running with ip, Ready as ready says.
func epCreatePod(t *testing.T, ctx context.Context, c *cluster, name, ip string, ready bool) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{
			Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		}}},
	}
	p, err := c.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	epSetPodStatus(t, ctx, c, p, ip, ready)
}

func epSetPodStatus(t *testing.T, ctx context.Context, c *cluster, p *corev1.Pod, ip string, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}}
	if _, err := c.client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// epState is the ready and not-ready pod names in the Endpoints and in
// the slices of Service web, each sorted.
type epState struct{ ready, notReady, sliceReady, sliceNotReady []string }

func epGet(ctx context.Context, c *cluster) (epState, error) {
	var s epState
	ep, err := c.client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return s, err
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) != 1 || ss.Ports[0].Port != 8080 || ss.Ports[0].Name != "http" {
			return s, fmt.Errorf("endpoints ports %+v", ss.Ports)
		}
		for _, a := range ss.Addresses {
			s.ready = append(s.ready, a.TargetRef.Name)
		}
		for _, a := range ss.NotReadyAddresses {
			s.notReady = append(s.notReady, a.TargetRef.Name)
		}
	}
	list, err := c.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil {
		return s, err
	}
	for _, sl := range list.Items {
		if sl.Labels[discoveryv1.LabelManagedBy] != endpointslice.ControllerName || sl.AddressType != discoveryv1.AddressTypeIPv4 {
			return s, fmt.Errorf("slice %s: labels %v type %s", sl.Name, sl.Labels, sl.AddressType)
		}
		for _, e := range sl.Endpoints {
			if *e.Conditions.Ready {
				s.sliceReady = append(s.sliceReady, e.TargetRef.Name)
			} else {
				s.sliceNotReady = append(s.sliceNotReady, e.TargetRef.Name)
			}
		}
	}
	for _, l := range [][]string{s.ready, s.notReady, s.sliceReady, s.sliceNotReady} {
		slices.Sort(l)
	}
	return s, nil
}

func epWait(t *testing.T, c *cluster, what string, ready, notReady []string) {
	t.Helper()
	var last epState
	var lastErr error
	if !epPoll(30*time.Second, func(ctx context.Context) bool {
		last, lastErr = epGet(ctx, c)
		return lastErr == nil && slices.Equal(last.ready, ready) && slices.Equal(last.notReady, notReady) &&
			slices.Equal(last.sliceReady, ready) && slices.Equal(last.sliceNotReady, notReady)
	}) {
		t.Fatalf("waiting for %s: last %+v, err %v", what, last, lastErr)
	}
}

// epPoll polls cond every 100ms for up to timeout; whether it held.
func epPoll(timeout time.Duration, cond func(context.Context) bool) bool {
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) { return cond(ctx), nil })
	return err == nil
}

func TestEndpointsAndSlicesFollowPods(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	svc, err := c.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"web-0", "web-1", "web-2"} {
		epCreatePod(t, ctx, c, name, fmt.Sprintf("10.244.0.%d", i+10), true)
	}
	epWait(t, c, "3 ready addresses", []string{"web-0", "web-1", "web-2"}, nil)

	list, err := c.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("slices %v, %v", list, err)
	}
	sl := list.Items[0]
	if !metav1.IsControlledBy(&sl, svc) || len(sl.Ports) != 1 || *sl.Ports[0].Port != 8080 || *sl.Ports[0].Name != "http" {
		t.Errorf("slice owners %+v ports %+v", sl.OwnerReferences, sl.Ports)
	}
	if e := sl.Endpoints[0]; e.NodeName == nil || *e.NodeName != "node-a" || e.TargetRef.Kind != "Pod" || !*e.Conditions.Serving || *e.Conditions.Terminating {
		t.Errorf("endpoint %+v", e)
	}

	k := newKubectl(t, c)
	if out := k.ok(t, "get", "endpoints", "web"); !strings.Contains(out, "10.244.0.10:8080") {
		t.Errorf("kubectl get endpoints: %q", out)
	}
	if out := k.ok(t, "get", "endpointslices"); !strings.Contains(out, "web-") || !strings.Contains(out, "IPv4") || !strings.Contains(out, "10.244.0.10") {
		t.Errorf("kubectl get endpointslices: %q", out)
	}

	// A pod turns unready.
	p, err := c.client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	epSetPodStatus(t, ctx, c, p, "10.244.0.11", false)
	epWait(t, c, "web-1 not ready", []string{"web-0", "web-2"}, []string{"web-1"})

	// A pod relabelled away from the selector goes.
	p, err = c.client.CoreV1().Pods("default").Get(ctx, "web-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{"app": "other"}
	if _, err := c.client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	epWait(t, c, "web-2 removed", []string{"web-0"}, []string{"web-1"})

	// The Service goes: so do its Endpoints and slices.
	if err := c.client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "endpoints and slices gone", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		list, err := c.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		return err == nil && len(list.Items) == 0, nil
	})
}

// The Endpoints of a Service without a selector are the user's.
func TestEndpointsOfSelectorlessServiceLeftAlone(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}
	if _, err := c.client.CoreV1().Endpoints("default").Create(ctx, user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	epCreatePod(t, ctx, c, "any", "10.244.0.50", true)
	var changed *corev1.Endpoints
	epPoll(2*time.Second, func(context.Context) bool {
		// Read on the test's context: the poll's may end mid-call.
		ep, err := c.client.CoreV1().Endpoints("default").Get(ctx, "ext", metav1.GetOptions{})
		if ep == nil {
			ep = &corev1.Endpoints{}
		}
		if apierrors.IsNotFound(err) || (err == nil && (len(ep.Subsets) != 1 || ep.Subsets[0].Addresses[0].IP != "192.0.2.1")) {
			changed = ep
		}
		return changed != nil
	})
	if changed != nil {
		t.Errorf("the user's Endpoints were changed: %+v", changed)
	}
	list, err := c.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelManagedBy + "=" + endpointslice.ControllerName})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("managed slices %v, %v", list, err)
	}
}
