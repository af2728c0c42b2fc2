package scheduler

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	zone     = v1.LabelTopologyZone
	hostname = v1.LabelHostname
)

// zonedNodes: n1 and n2 in zone a, n3 in zone b, n4 without a zone.
func zonedNodes() []*v1.Node {
	return []*v1.Node{
		node("n1", "4", "8Gi", 10, withLabels(zone, "a")),
		node("n2", "4", "8Gi", 10, withLabels(zone, "a")),
		node("n3", "4", "8Gi", 10, withLabels(zone, "b")),
		node("n4", "4", "8Gi", 10),
	}
}

type clusterFilterCase struct {
	name string
	// nodes default to zonedNodes.
	nodes    []*v1.Node
	pod      *v1.Pod
	existing []*v1.Pod
	listers  *Listers
	// want is the reason of each node that rejects the pod.
	want map[string]string
}

func runClusterFilterCases(t *testing.T, plugin func(*Listers) PreFilterPlugin, cases []clusterFilterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.listers
			if l == nil {
				l = listersOf()
			}
			if tc.nodes == nil {
				tc.nodes = zonedNodes()
			}
			nodes := cluster(tc.nodes, tc.existing...)
			check := plugin(l).PreFilter(NewPodInfo(tc.pod), nodes)
			got := map[string]string{}
			for _, n := range nodes {
				if check == nil {
					continue
				}
				if r := check(n); len(r) > 0 {
					got[n.Node.Name] = r[0]
				}
			}
			if tc.want == nil {
				tc.want = map[string]string{}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("rejected %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInterPodAffinityFilter(t *testing.T) {
	web := func(name string, opts ...func(*v1.Pod)) *v1.Pod {
		return pod(name, "", "", append([]func(*v1.Pod){labelled("app", "web")}, opts...)...)
	}
	db := func(name string, opts ...func(*v1.Pod)) *v1.Pod {
		return pod(name, "", "", append([]func(*v1.Pod){labelled("app", "db")}, opts...)...)
	}
	nearDB := requirePods(podTerm(zone, "app", "db"))
	prodNS := listersOf(namespace("default"), namespace("prod", "env", "prod"), namespace("dev", "env", "dev"))
	aff, anti, existing := ReasonPodAffinity, ReasonPodAntiAffinity, ReasonExistingPodsAntiAffinity
	runClusterFilterCases(t, func(l *Listers) PreFilterPlugin { return InterPodAffinity{Namespaces: l.Namespaces} }, []clusterFilterCase{
		{name: "no terms", pod: web("p"), existing: []*v1.Pod{db("d", onNode("n1"))}},
		{name: "affinity: the zone of a selected pod", pod: web("p", nearDB), existing: []*v1.Pod{db("d", onNode("n1"))},
			want: map[string]string{"n3": aff, "n4": aff}},
		{name: "affinity: no selected pod anywhere", pod: web("p", nearDB), existing: []*v1.Pod{web("w", onNode("n1"))},
			want: map[string]string{"n1": aff, "n2": aff, "n3": aff, "n4": aff}},
		{name: "affinity: the first pod of a group selecting itself goes where the topology key is",
			pod:  web("p", requirePods(podTerm(zone, "app", "web"))),
			want: map[string]string{"n4": aff}},
		{name: "affinity: the second pod of such a group joins the first",
			pod: web("p", requirePods(podTerm(zone, "app", "web"))), existing: []*v1.Pod{web("w", onNode("n3"))},
			want: map[string]string{"n1": aff, "n2": aff, "n4": aff}},
		{name: "affinity: a pod counts only if it matches every term",
			pod: web("p", requirePods(podTerm(zone, "app", "db"), podTerm(hostname, "tier", "backend"))),
			existing: []*v1.Pod{
				db("d1", onNode("n1"), labelled("tier", "backend")),
				db("d2", onNode("n3")),
				pod("b", "", "", onNode("n3"), labelled("tier", "backend")),
			},
			want: map[string]string{"n2": aff, "n3": aff, "n4": aff}},
		{name: "affinity: pods of other namespaces do not count by default",
			pod: web("p", nearDB), existing: []*v1.Pod{db("d", onNode("n1"), inNamespace("prod"))},
			want: map[string]string{"n1": aff, "n2": aff, "n3": aff, "n4": aff}},
		{name: "affinity: namespaces",
			pod: web("p", requirePods(func() v1.PodAffinityTerm {
				t := podTerm(zone, "app", "db")
				t.Namespaces = []string{"prod"}
				return t
			}())),
			existing: []*v1.Pod{db("d", onNode("n1"), inNamespace("prod")), db("d", onNode("n3"))},
			want:     map[string]string{"n3": aff, "n4": aff}},
		{name: "affinity: namespaceSelector", listers: prodNS,
			pod: web("p", requirePods(func() v1.PodAffinityTerm {
				t := podTerm(zone, "app", "db")
				t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
				return t
			}())),
			existing: []*v1.Pod{db("d", onNode("n1"), inNamespace("dev")), db("d", onNode("n3"), inNamespace("prod"))},
			want:     map[string]string{"n1": aff, "n2": aff, "n4": aff}},
		{name: "affinity: an empty namespaceSelector selects every namespace", listers: prodNS,
			pod: web("p", requirePods(func() v1.PodAffinityTerm {
				t := podTerm(zone, "app", "db")
				t.NamespaceSelector = &metav1.LabelSelector{}
				return t
			}())),
			existing: []*v1.Pod{db("d", onNode("n1"), inNamespace("dev"))},
			want:     map[string]string{"n3": aff, "n4": aff}},
		{name: "anti-affinity by hostname", pod: web("p", avoidPods(podTerm(hostname, "app", "web"))),
			existing: []*v1.Pod{web("w", onNode("n1"))},
			want:     map[string]string{"n1": anti}},
		{name: "anti-affinity by zone; a node without the key is no domain", pod: web("p", avoidPods(podTerm(zone, "app", "web"))),
			existing: []*v1.Pod{web("w", onNode("n1"))},
			want:     map[string]string{"n1": anti, "n2": anti}},
		{name: "anti-affinity: matchLabelKeys takes the pod's value",
			pod: web("p", labelled("version", "v2"), avoidPods(func() v1.PodAffinityTerm {
				t := podTerm(hostname, "app", "web")
				t.MatchLabelKeys = []string{"version"}
				return t
			}())),
			existing: []*v1.Pod{web("old", onNode("n1"), labelled("version", "v1")), web("new", onNode("n2"), labelled("version", "v2"))},
			want:     map[string]string{"n2": anti}},
		{name: "anti-affinity: mismatchLabelKeys keeps tenants apart",
			pod: pod("p", "", "", labelled("tenant", "a"), avoidPods(v1.PodAffinityTerm{
				TopologyKey:       hostname,
				LabelSelector:     &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: metav1.LabelSelectorOpExists}}},
				MismatchLabelKeys: []string{"tenant"},
			})),
			existing: []*v1.Pod{pod("b", "", "", onNode("n1"), labelled("tenant", "b")), pod("a", "", "", onNode("n2"), labelled("tenant", "a"))},
			want:     map[string]string{"n1": anti}},
		{name: "existing pods' anti-affinity: symmetry", pod: web("p"),
			existing: []*v1.Pod{db("d", onNode("n1"), avoidPods(podTerm(zone, "app", "web")))},
			want:     map[string]string{"n1": existing, "n2": existing}},
		{name: "existing pods' anti-affinity that does not select the pod", pod: db("p"),
			existing: []*v1.Pod{db("d", onNode("n1"), avoidPods(podTerm(zone, "app", "web")))}},
		{name: "existing pods' anti-affinity with a namespaceSelector", listers: prodNS, pod: web("p", inNamespace("prod")),
			existing: []*v1.Pod{db("d", onNode("n3"), avoidPods(func() v1.PodAffinityTerm {
				t := podTerm(hostname, "app", "web")
				t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
				return t
			}()))},
			want: map[string]string{"n3": existing}},
		{name: "affinity is checked before anti-affinity",
			pod:      web("p", nearDB, avoidPods(podTerm(hostname, "app", "web"))),
			existing: []*v1.Pod{db("d", onNode("n1")), web("w", onNode("n1")), web("w2", onNode("n3"))},
			want:     map[string]string{"n1": anti, "n3": aff, "n4": aff}},
	})
}

// scoreNodes runs a scorer over the nodes and normalizes, as the profile does.
func scoreNodes(s *NodeScorer, nodes []*NodeInfo) map[string]int64 {
	if s == nil {
		return nil
	}
	scores := make([]int64, len(nodes))
	for i, n := range nodes {
		scores[i] = s.Score(n)
	}
	s.Normalize(scores)
	out := map[string]int64{}
	for i, n := range nodes {
		out[n.Node.Name] = scores[i]
	}
	return out
}

func TestInterPodAffinityScore(t *testing.T) {
	web := func(name string, opts ...func(*v1.Pod)) *v1.Pod {
		return pod(name, "", "", append([]func(*v1.Pod){labelled("app", "web")}, opts...)...)
	}
	db := func(name string, opts ...func(*v1.Pod)) *v1.Pod {
		return pod(name, "", "", append([]func(*v1.Pod){labelled("app", "db")}, opts...)...)
	}
	cases := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		// want nil: every node scores the same (no scorer).
		want map[string]int64
	}{
		{name: "no terms anywhere", pod: web("p"), existing: []*v1.Pod{db("d", onNode("n1"))}},
		{name: "preferred affinity: the zone of a selected pod", pod: web("p", preferPods(weighted(5, podTerm(zone, "app", "db")))),
			existing: []*v1.Pod{db("d", onNode("n1"))},
			want:     map[string]int64{"n1": 100, "n2": 100, "n3": 0, "n4": 0}},
		{name: "preferred anti-affinity", pod: web("p", preferAvoidPods(weighted(5, podTerm(hostname, "app", "web")))),
			existing: []*v1.Pod{web("w", onNode("n1"))},
			want:     map[string]int64{"n1": 0, "n2": 100, "n3": 100, "n4": 100}},
		{name: "weights add up, anti-affinity subtracts",
			// n1: 10 - 5; n2: 10; n3, n4: 0 (min 0, max 10).
			pod:      web("p", preferPods(weighted(10, podTerm(zone, "app", "db"))), preferAvoidPods(weighted(5, podTerm(hostname, "app", "web")))),
			existing: []*v1.Pod{db("d", onNode("n1")), web("w", onNode("n1"))},
			want:     map[string]int64{"n1": 50, "n2": 100, "n3": 0, "n4": 0}},
		{name: "several selected pods count several times",
			// zone a: 2 × 3 = 6; zone b: 3.
			pod:      web("p", preferPods(weighted(3, podTerm(zone, "app", "db")))),
			existing: []*v1.Pod{db("d1", onNode("n1")), db("d2", onNode("n2")), db("d3", onNode("n3"))},
			want:     map[string]int64{"n1": 100, "n2": 100, "n3": 50, "n4": 0}},
		{name: "existing pods' preferred affinity for the pod", pod: web("p"),
			existing: []*v1.Pod{db("d", onNode("n3"), preferPods(weighted(7, podTerm(zone, "app", "web"))))},
			want:     map[string]int64{"n1": 0, "n2": 0, "n3": 100, "n4": 0}},
		{name: "existing pods' preferred anti-affinity against the pod", pod: web("p"),
			existing: []*v1.Pod{db("d", onNode("n3"), preferAvoidPods(weighted(7, podTerm(zone, "app", "web"))))},
			want:     map[string]int64{"n1": 100, "n2": 100, "n3": 0, "n4": 100}},
		{name: "existing pods' required affinity counts hardPodAffinityWeight", pod: web("p"),
			existing: []*v1.Pod{
				db("d", onNode("n1"), requirePods(podTerm(hostname, "app", "web"))),
				db("e", onNode("n2"), preferPods(weighted(2, podTerm(hostname, "app", "web")))),
			},
			want: map[string]int64{"n1": 50, "n2": 100, "n3": 0, "n4": 0}},
		{name: "existing pods' terms that do not select the pod", pod: db("p"),
			existing: []*v1.Pod{db("d", onNode("n3"), preferPods(weighted(7, podTerm(zone, "app", "web"))))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := cluster(zonedNodes(), tc.existing...)
			got := scoreNodes(InterPodAffinity{}.PreScore(NewPodInfo(tc.pod), nodes, nodes), nodes)
			if !maps.Equal(got, tc.want) {
				t.Errorf("scores %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAffinityTermParsing(t *testing.T) {
	p := pod("p", "", "", labelled("app", "web", "version", "v2"))
	cases := []struct {
		name  string
		term  v1.PodAffinityTerm
		other *v1.Pod
		want  bool
	}{
		{"same namespace by default", podTerm(hostname, "app", "web"), pod("o", "", "", labelled("app", "web")), true},
		{"another namespace", podTerm(hostname, "app", "web"), pod("o", "", "", labelled("app", "web"), inNamespace("x")), false},
		{"nil selector selects nothing", v1.PodAffinityTerm{TopologyKey: hostname}, pod("o", "", ""), false},
		{"empty selector selects everything", v1.PodAffinityTerm{TopologyKey: hostname, LabelSelector: &metav1.LabelSelector{}}, pod("o", "", ""), true},
		{"invalid selector selects nothing", v1.PodAffinityTerm{TopologyKey: hostname, LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}}, pod("o", "", "", labelled("app", "web")), false},
		{"matchLabelKeys of a label the pod lacks is ignored", func() v1.PodAffinityTerm {
			t := podTerm(hostname, "app", "web")
			t.MatchLabelKeys = []string{"track"}
			return t
		}(), pod("o", "", "", labelled("app", "web", "track", "x")), true},
	}
	for _, tc := range cases {
		term := newAffinityTerm(p, &tc.term, 0)
		if got := term.matches(tc.other, nil); got != tc.want {
			t.Errorf("%s: matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}
