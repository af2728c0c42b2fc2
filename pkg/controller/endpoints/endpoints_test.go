package endpoints

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

func service(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector:  map[string]string{"app": "web"},
			ClusterIP: "10.96.0.10",
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
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
			Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func addr(name, ip string) corev1.EndpointAddress {
	return corev1.EndpointAddress{IP: ip, NodeName: ptr.To("node-1"),
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
}

var httpPort = []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}

func TestSubsets(t *testing.T) {
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{{
		name: "ready and not ready, named port",
		svc:  service(),
		pods: []*corev1.Pod{pod("b", "10.0.0.2", true), pod("a", "10.0.0.1", true), pod("c", "10.0.0.3", false)},
		want: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("b", "10.0.0.2")},
			NotReadyAddresses: []corev1.EndpointAddress{addr("c", "10.0.0.3")},
			Ports:             httpPort,
		}},
	}, {
		name: "publishNotReadyAddresses puts all in addresses, terminating too",
		svc:  service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
		pods: []*corev1.Pod{pod("a", "10.0.0.1", false), pod("b", "10.0.0.2", true, terminating)},
		want: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("b", "10.0.0.2")}, Ports: httpPort,
		}},
	}, {
		name: "no IP, terminating and finished pods are left out",
		svc:  service(),
		pods: []*corev1.Pod{pod("a", "", true), pod("b", "10.0.0.2", true, terminating),
			pod("c", "10.0.0.3", true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
	}, {
		name: "pods lacking the named port are skipped; subsets by port set",
		svc: service(func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9100), Protocol: corev1.ProtocolTCP})
		}),
		pods: []*corev1.Pod{pod("a", "10.0.0.1", true), pod("b", "10.0.0.2", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
		want: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")},
			Ports:     []corev1.EndpointPort{httpPort[0], {Name: "metrics", Port: 9100, Protocol: corev1.ProtocolTCP}},
		}, {
			Addresses: []corev1.EndpointAddress{addr("b", "10.0.0.2")},
			Ports:     []corev1.EndpointPort{{Name: "metrics", Port: 9100, Protocol: corev1.ProtocolTCP}},
		}},
	}, {
		name: "headless without ports lists addresses alone",
		svc:  service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil }),
		pods: []*corev1.Pod{pod("a", "10.0.0.1", true)},
		want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Subsets(tt.svc, tt.pods)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("Subsets:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func newController(t *testing.T, objs ...any) (*Controller, *fake.Clientset, informers.SharedInformerFactory) {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(&kit.Context{Client: client, Factory: factory, Clock: clocktesting.NewFakeClock(time.Unix(100, 0))}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			err = factory.Core().V1().Services().Informer().GetStore().Add(o)
			_, _ = client.CoreV1().Services(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetStore().Add(o)
		case *corev1.Endpoints:
			err = factory.Core().V1().Endpoints().Informer().GetStore().Add(o)
			_, _ = client.CoreV1().Endpoints(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, client, factory
}

func TestReconcile(t *testing.T) {
	ctx := context.Background()
	t.Run("creates labeled endpoints", func(t *testing.T) {
		c, client, _ := newController(t, service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }), pod("a", "10.0.0.1", true))
		c.changed(service())
		if err := c.Reconcile(ctx, "default/web"); err != nil {
			t.Fatal(err)
		}
		ep, err := client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ep.Labels[LabelHeadless]; !ok || ep.Labels["tier"] != "front" {
			t.Errorf("labels %v", ep.Labels)
		}
		if got := ep.Annotations[AnnotationLastChangeTriggerTime]; got != time.Unix(100, 0).UTC().Format(time.RFC3339Nano) {
			t.Errorf("trigger time %q", got)
		}
		if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 {
			t.Errorf("subsets %+v", ep.Subsets)
		}
	})
	t.Run("selectorless service's endpoints are left alone", func(t *testing.T) {
		user := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "1.2.3.4"}}}}}
		c, client, _ := newController(t, service(func(s *corev1.Service) { s.Spec.Selector = nil }), pod("a", "10.0.0.1", true), user)
		if err := c.Reconcile(ctx, "default/web"); err != nil {
			t.Fatal(err)
		}
		ep, err := client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || ep.Subsets[0].Addresses[0].IP != "1.2.3.4" {
			t.Errorf("user endpoints changed: %+v, %v", ep, err)
		}
	})
	t.Run("service gone deletes endpoints", func(t *testing.T) {
		c, client, _ := newController(t, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
		if err := c.Reconcile(ctx, "default/web"); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
			t.Error("endpoints still there")
		}
	})
	t.Run("unchanged endpoints are not written", func(t *testing.T) {
		svc, p := service(), pod("a", "10.0.0.1", true)
		cur := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"tier": "front"}},
			Subsets: Subsets(svc, []*corev1.Pod{p})}
		c, client, _ := newController(t, svc, p, cur)
		client.ClearActions()
		if err := c.Reconcile(ctx, "default/web"); err != nil {
			t.Fatal(err)
		}
		if a := client.Actions(); len(a) != 0 {
			t.Errorf("actions %v", a)
		}
	})
}

func TestPodChangedQueuesMatchingServices(t *testing.T) {
	other := service(func(s *corev1.Service) { s.Name = "db"; s.Spec.Selector = map[string]string{"app": "db"} })
	c, _, _ := newController(t, service(), other)
	tests := []struct {
		name     string
		old, cur map[string]string
		want     int
	}{
		{"matches new labels", nil, map[string]string{"app": "web"}, 1},
		{"relabelled away: old labels matched", map[string]string{"app": "web"}, map[string]string{"app": "x"}, 1},
		{"moved between services", map[string]string{"app": "web"}, map[string]string{"app": "db"}, 2},
		{"matches none", map[string]string{"app": "x"}, map[string]string{"app": "y"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for c.Queue.Len() > 0 {
				k, _ := c.Queue.Get()
				c.Queue.Done(k)
			}
			cur := pod("a", "10.0.0.1", true, func(p *corev1.Pod) { p.Labels = tt.cur })
			// The handler the controller watches pods with.
			h := kit.PodServicesHandler(c.svcLister, func(svc *corev1.Service) { c.changed(svc) })
			if tt.old != nil {
				old := pod("a", "10.0.0.1", true, func(p *corev1.Pod) { p.Labels = tt.old })
				cur.ResourceVersion = "2" // an update, not a resync
				h.OnUpdate(old, cur)
			} else {
				h.OnAdd(cur, false)
			}
			if got := c.Queue.Len(); got != tt.want {
				t.Errorf("queued %d services, want %d", got, tt.want)
			}
		})
	}
}

// A change to Endpoints syncs their Service again; Endpoints without a
// Service are the user's, and a change to them is left alone (only a
// Service's deletion removes Endpoints, as in Kubernetes).
func TestEndpointsChangedQueuesOnlyServices(t *testing.T) {
	c, _, _ := newController(t, service())
	for _, tc := range []struct {
		name string
		want int
	}{{"web", 1}, {"users-own", 0}} {
		for c.Queue.Len() > 0 {
			k, _ := c.Queue.Get()
			c.Queue.Done(k)
		}
		c.endpointsChanged(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "default"}})
		if got := c.Queue.Len(); got != tc.want {
			t.Errorf("endpoints %s changed: queued %d, want %d", tc.name, got, tc.want)
		}
	}
}
