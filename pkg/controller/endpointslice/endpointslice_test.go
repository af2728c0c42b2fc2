package endpointslice

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

func service(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP,
				AppProtocol: ptr.To("http")}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func pod(name, ip string, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

type fixture struct {
	c       *Controller
	client  *fake.Clientset
	factory informers.SharedInformerFactory
}

func newFixture(t *testing.T, max int) *fixture {
	t.Helper()
	client := fake.NewClientset()
	n := 0
	client.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// The fake does not do generateName.
		s := a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		if s.Name == "" {
			n++
			s.Name = fmt.Sprintf("%s%d", s.GenerateName, n)
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(&kit.Context{Client: client, Factory: factory, Clock: clocktesting.NewFakeClock(time.Unix(0, 0))}, Config{MaxEndpointsPerSlice: max})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{c: c, client: client, factory: factory}
}

// set puts objects in the informer caches.
func (f *fixture) set(t *testing.T, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			err = f.factory.Core().V1().Services().Informer().GetStore().Update(o)
		case *corev1.Pod:
			err = f.factory.Core().V1().Pods().Informer().GetStore().Update(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sync reconciles the Service and copies the resulting slices into the
// cache, as the informer would.
func (f *fixture) sync(t *testing.T) []discoveryv1.EndpointSlice {
	t.Helper()
	ctx := context.Background()
	if err := f.c.Reconcile(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	list, err := f.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := f.factory.Discovery().V1().EndpointSlices().Informer().GetStore()
	for _, o := range store.List() {
		_ = store.Delete(o)
	}
	for i := range list.Items {
		_ = store.Add(&list.Items[i])
	}
	f.c.written.forget("default/web")
	return list.Items
}

func endpointsOf(slices []discoveryv1.EndpointSlice) map[string]discoveryv1.Endpoint {
	out := map[string]discoveryv1.Endpoint{}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			out[ep.TargetRef.Name] = ep
		}
	}
	return out
}

func TestSliceContents(t *testing.T) {
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		// want is ready/serving/terminating per pod name.
		want map[string][3]bool
	}{
		{"readiness", service(), []*corev1.Pod{pod("a", "10.0.0.1", true), pod("b", "10.0.0.2", false)},
			map[string][3]bool{"a": {true, true, false}, "b": {false, false, false}}},
		{"terminating pods are kept, not ready", service(), []*corev1.Pod{pod("a", "10.0.0.1", true, terminating)},
			map[string][3]bool{"a": {false, true, true}}},
		{"publishNotReadyAddresses", service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			[]*corev1.Pod{pod("a", "10.0.0.1", false), pod("b", "10.0.0.2", true, terminating)},
			map[string][3]bool{"a": {true, true, false}, "b": {true, true, true}}},
		{"no IP and finished pods are left out", service(),
			[]*corev1.Pod{pod("a", "", true), pod("b", "10.0.0.2", true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
			map[string][3]bool{}},
		{"IPv6 family picks IPv6 addresses", service(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }),
			[]*corev1.Pod{pod("a", "10.0.0.1", true), pod("b", "fd00::2", true)},
			map[string][3]bool{"b": {true, true, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 0)
			f.set(t, tt.svc)
			for _, p := range tt.pods {
				f.set(t, p)
			}
			got := f.sync(t)
			if len(got) != 1 {
				t.Fatalf("%d slices, want 1", len(got))
			}
			s := got[0]
			if s.Labels[discoveryv1.LabelServiceName] != "web" || s.Labels[discoveryv1.LabelManagedBy] != ControllerName {
				t.Errorf("labels %v", s.Labels)
			}
			if !metav1.IsControlledBy(&s, tt.svc) {
				t.Errorf("owners %+v", s.OwnerReferences)
			}
			eps := endpointsOf(got)
			if len(eps) != len(tt.want) {
				t.Errorf("endpoints %+v, want %v", eps, tt.want)
			}
			for name, w := range tt.want {
				ep := eps[name]
				c := [3]bool{ptr.Deref(ep.Conditions.Ready, false), ptr.Deref(ep.Conditions.Serving, false), ptr.Deref(ep.Conditions.Terminating, false)}
				if c != w || ptr.Deref(ep.NodeName, "") != "node-1" || ep.Zone != nil {
					t.Errorf("%s: conditions %v node %v zone %v, want %v", name, c, ep.NodeName, ep.Zone, w)
				}
			}
			if len(tt.want) == 0 {
				if len(s.Ports) != 0 {
					t.Errorf("placeholder has ports %+v", s.Ports)
				}
				return
			}
			if len(s.Ports) != 1 || *s.Ports[0].Name != "http" || *s.Ports[0].Port != 8080 || *s.Ports[0].Protocol != corev1.ProtocolTCP ||
				ptr.Deref(s.Ports[0].AppProtocol, "") != "http" {
				t.Errorf("ports %+v", s.Ports)
			}
		})
	}
}

func TestSliceUpdatesInPlaceAndSplits(t *testing.T) {
	f := newFixture(t, 3)
	svc := service()
	f.set(t, svc)
	for i := range 5 {
		f.set(t, pod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.0.0.%d", i+1), true))
	}
	first := f.sync(t)
	if len(first) != 2 || len(endpointsOf(first)) != 5 {
		t.Fatalf("%d slices with %d endpoints, want 2 with 5", len(first), len(endpointsOf(first)))
	}
	// A pod turns unready: updated in its slice, nothing created or deleted.
	f.set(t, pod("p1", "10.0.0.2", false))
	f.client.ClearActions()
	second := f.sync(t)
	var verbs []string
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource == "endpointslices" && a.GetVerb() != "list" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if len(verbs) != 1 || verbs[0] != "update" {
		t.Errorf("writes %v, want one update", verbs)
	}
	if ep := endpointsOf(second)["p1"]; *ep.Conditions.Ready {
		t.Errorf("p1 still ready: %+v", ep)
	}
	// A pod relabelled away is removed; a resync then writes nothing.
	f.set(t, pod("p4", "10.0.0.5", true, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }))
	if eps := endpointsOf(f.sync(t)); len(eps) != 4 {
		t.Errorf("endpoints %v, want 4", eps)
	}
	f.client.ClearActions()
	f.sync(t)
	for _, a := range f.client.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("resync wrote: %v", a)
		}
	}
	// The Service goes: its slices go.
	if err := f.factory.Core().V1().Services().Informer().GetStore().Delete(svc); err != nil {
		t.Fatal(err)
	}
	if got := f.sync(t); len(got) != 0 {
		t.Errorf("%d slices left", len(got))
	}
}

func TestStaleCacheWaits(t *testing.T) {
	f := newFixture(t, 0)
	f.set(t, service(), pod("a", "10.0.0.1", true))
	if err := f.c.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	// The informer has not shown the created slice yet.
	if err := f.c.Reconcile(context.Background(), "default/web"); err != errStaleCache {
		t.Errorf("second sync on a stale cache: %v, want errStaleCache", err)
	}
}
