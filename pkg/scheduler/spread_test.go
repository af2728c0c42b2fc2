package scheduler

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func webPod(name string, opts ...func(*v1.Pod)) *v1.Pod {
	return pod(name, "", "", append([]func(*v1.Pod){labelled("app", "web")}, opts...)...)
}

func TestPodTopologySpreadFilter(t *testing.T) {
	byZone := spread(1, zone, v1.DoNotSchedule, "app", "web")
	with := func(c v1.TopologySpreadConstraint, change func(*v1.TopologySpreadConstraint)) v1.TopologySpreadConstraint {
		change(&c)
		return c
	}
	skew, missing := ReasonTopologySpread, ReasonTopologySpreadMissingLabel
	runClusterFilterCases(t, func(l *Listers) PreFilterPlugin { return PodTopologySpread{Listers: l} }, []clusterFilterCase{
		{name: "no constraints", pod: webPod("p"), existing: []*v1.Pod{webPod("w", onNode("n1"))}},
		{name: "skew by zone; a node without the key cannot take the pod", pod: webPod("p", spreading(byZone)),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n2"))},
			want:     map[string]string{"n1": skew, "n2": skew, "n4": missing}},
		{name: "a pod the selector does not select adds nothing to the skew",
			pod:      pod("p", "", "", labelled("app", "db"), spreading(byZone)),
			existing: []*v1.Pod{webPod("w1", onNode("n1"))},
			want:     map[string]string{"n4": missing}},
		{name: "maxSkew 2", pod: webPod("p", spreading(with(byZone, func(c *v1.TopologySpreadConstraint) { c.MaxSkew = 2 }))),
			existing: []*v1.Pod{webPod("w1", onNode("n1"))},
			want:     map[string]string{"n4": missing}},
		{name: "fewer domains than minDomains: the global minimum is 0",
			pod:      webPod("p", spreading(with(byZone, func(c *v1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](3) }))),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n3"))},
			want:     map[string]string{"n1": skew, "n2": skew, "n3": skew, "n4": missing}},
		{name: "as many domains as minDomains", pod: webPod("p", spreading(with(byZone, func(c *v1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](2) }))),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n3"))},
			want:     map[string]string{"n4": missing}},
		{name: "pods being deleted and pods of other namespaces do not count", pod: webPod("p", spreading(byZone)),
			existing: []*v1.Pod{webPod("w1", onNode("n1"), terminating), webPod("w2", onNode("n2"), inNamespace("other"))},
			want:     map[string]string{"n4": missing}},
		{name: "nodeAffinityPolicy Honor: only the zones the pod may go to count",
			pod:      webPod("p", selecting(zone, "a"), spreading(byZone)),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n2"))},
			want:     map[string]string{"n4": missing}},
		{name: "nodeAffinityPolicy Ignore: every zone counts",
			pod: webPod("p", selecting(zone, "a"), spreading(with(byZone, func(c *v1.TopologySpreadConstraint) {
				c.NodeAffinityPolicy = ptr.To(v1.NodeInclusionPolicyIgnore)
			}))),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n2"))},
			want:     map[string]string{"n1": skew, "n2": skew, "n4": missing}},
		{name: "nodeTaintsPolicy Ignore (default): a tainted node's zone counts",
			nodes: []*v1.Node{node("n1", "4", "8Gi", 10, withLabels(zone, "a")), node("n3", "4", "8Gi", 10, withLabels(zone, "b"), withTaints(noSchedule))},
			pod:   webPod("p", spreading(byZone)), existing: []*v1.Pod{webPod("w1", onNode("n1"))},
			want: map[string]string{"n1": skew}},
		{name: "nodeTaintsPolicy Honor: a node with an untolerated taint does not count",
			nodes: []*v1.Node{node("n1", "4", "8Gi", 10, withLabels(zone, "a")), node("n3", "4", "8Gi", 10, withLabels(zone, "b"), withTaints(noSchedule))},
			pod: webPod("p", spreading(with(byZone, func(c *v1.TopologySpreadConstraint) {
				c.NodeTaintsPolicy = ptr.To(v1.NodeInclusionPolicyHonor)
			}))),
			existing: []*v1.Pod{webPod("w1", onNode("n1"))}},
		{name: "nodeTaintsPolicy Honor: a cordoned node does not count",
			nodes: []*v1.Node{node("n1", "4", "8Gi", 10, withLabels(zone, "a")), node("n3", "4", "8Gi", 10, withLabels(zone, "b"), cordoned)},
			pod: webPod("p", spreading(with(byZone, func(c *v1.TopologySpreadConstraint) {
				c.NodeTaintsPolicy = ptr.To(v1.NodeInclusionPolicyHonor)
			}))),
			existing: []*v1.Pod{webPod("w1", onNode("n1"))}},
		{name: "matchLabelKeys: only the pod's version counts",
			pod: webPod("p", labelled("version", "v2"), spreading(with(byZone, func(c *v1.TopologySpreadConstraint) {
				c.MatchLabelKeys = []string{"version"}
			}))),
			existing: []*v1.Pod{webPod("w1", onNode("n1"), labelled("version", "v1")), webPod("w2", onNode("n2"), labelled("version", "v1"))},
			want:     map[string]string{"n4": missing}},
		{name: "two constraints: nodes need both keys to count", pod: webPod("p", spreading(byZone, spread(1, hostname, v1.DoNotSchedule, "app", "web"))),
			existing: []*v1.Pod{webPod("w1", onNode("n3")), webPod("w2", onNode("n4"))},
			want:     map[string]string{"n3": skew, "n4": missing}},
		{name: "ScheduleAnyway does not filter", pod: webPod("p", spreading(spread(1, zone, v1.ScheduleAnyway, "app", "web"))),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n2"))}},
		{name: "the default constraints do not filter", listers: listersOf(replicaSet("web", "app", "web")),
			pod:      webPod("p", ownedBy("apps/v1", "ReplicaSet", "web")),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n1")), webPod("w3", onNode("n1"))}},
	})
}

func TestPodTopologySpreadScore(t *testing.T) {
	hosts := []*v1.Node{node("h1", "4", "8Gi", 10), node("h2", "4", "8Gi", 10), node("h3", "4", "8Gi", 10)}
	rs := listersOf(replicaSet("web", "app", "web"))
	owned := ownedBy("apps/v1", "ReplicaSet", "web")
	cases := []struct {
		name     string
		nodes    []*v1.Node
		listers  *Listers
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]int64
	}{
		// Two domains: each pod weighs log(2+2); n1 and n2 round to 3, n3
		// to 0. n4 lacks the zone: it scores 0.
		{name: "ScheduleAnyway by zone", pod: webPod("p", spreading(spread(1, zone, v1.ScheduleAnyway, "app", "web"))),
			existing: []*v1.Pod{webPod("w1", onNode("n1")), webPod("w2", onNode("n2"))},
			want:     map[string]int64{"n1": 0, "n2": 0, "n3": 100, "n4": 0}},
		// maxSkew 3 adds 2 to every count: 3, 3, 2.
		{name: "maxSkew softens the differences", pod: webPod("p", spreading(spread(3, zone, v1.ScheduleAnyway, "app", "web"))),
			existing: []*v1.Pod{webPod("w1", onNode("n1"))},
			want:     map[string]int64{"n1": 66, "n2": 66, "n3": 100, "n4": 0}},
		// Default, by hostname: pods weigh log(3+2), plus 2: 5, 4, 2.
		{name: "default spreading over the controller's pods", nodes: hosts, listers: rs,
			pod: webPod("p", owned),
			existing: []*v1.Pod{
				webPod("w1", onNode("h1")), webPod("w2", onNode("h1")), webPod("w3", onNode("h2")),
				pod("other", "", "", onNode("h3"), labelled("app", "db")),
			},
			want: map[string]int64{"h1": 40, "h2": 60, "h3": 100}},
		{name: "default spreading over a Service's pods", nodes: hosts,
			listers:  listersOf(&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}}}),
			pod:      webPod("p"),
			existing: []*v1.Pod{webPod("w1", onNode("h1")), webPod("w2", onNode("h1")), webPod("w3", onNode("h2"))},
			want:     map[string]int64{"h1": 40, "h2": 60, "h3": 100}},
		{name: "no default spreading for a pod nothing selects", nodes: hosts, listers: rs, pod: webPod("p"),
			existing: []*v1.Pod{webPod("w1", onNode("h1"))}},
		// Hostname: log(4+2) a pod, plus 2; zone: 3 domains (a, b, and
		// none), log(3+2) a pod, plus 4. n4 has no zone: hostname only.
		{name: "default spreading over hostnames and zones", listers: rs, pod: webPod("p", owned),
			existing: []*v1.Pod{webPod("w1", onNode("n1"))},
			want:     map[string]int64{"n1": 22, "n2": 33, "n3": 55, "n4": 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.nodes == nil {
				tc.nodes = zonedNodes()
			}
			if tc.listers == nil {
				tc.listers = listersOf()
			}
			nodes := cluster(tc.nodes, tc.existing...)
			got := scoreNodes(PodTopologySpread{Listers: tc.listers}.PreScore(NewPodInfo(tc.pod), nodes, nodes), nodes)
			if !maps.Equal(got, tc.want) {
				t.Errorf("scores %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDefaultSelector(t *testing.T) {
	svc := func(name string, selector map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.ServiceSpec{Selector: selector}}
	}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}}}}
	rc := &v1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "default"},
		Spec: v1.ReplicationControllerSpec{Selector: map[string]string{"app": "web"}}}
	l := listersOf(svc("web", map[string]string{"app": "web"}), svc("frontend", map[string]string{"tier": "fe"}),
		svc("db", map[string]string{"app": "db"}), svc("headless", nil),
		replicaSet("web-1", "app", "web", "hash", "1"), ss, rc)
	p := func(opts ...func(*v1.Pod)) *v1.Pod { return webPod("p", append(opts, labelled("tier", "fe"))...) }
	cases := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"the Services that select the pod", p(), "app=web,tier=fe"},
		{"nothing selects the pod", pod("p", "", "", labelled("app", "other")), ""},
		{"and its ReplicaSet", p(ownedBy("apps/v1", "ReplicaSet", "web-1")), "app=web,app=web,hash=1,tier=fe"},
		{"and its StatefulSet", p(ownedBy("apps/v1", "StatefulSet", "db")), "app=web,app in (db,web),tier=fe"},
		{"and its ReplicationController", p(ownedBy("v1", "ReplicationController", "legacy")), "app=web,tier=fe"},
		{"a controller not found", p(ownedBy("apps/v1", "ReplicaSet", "gone")), "app=web,tier=fe"},
		{"a controller of another kind", p(ownedBy("apps/v1", "DaemonSet", "web-1")), "app=web,tier=fe"},
	}
	for _, tc := range cases {
		if got := l.defaultSelector(tc.pod).String(); got != tc.want {
			t.Errorf("%s: selector %q, want %q", tc.name, got, tc.want)
		}
	}
}
