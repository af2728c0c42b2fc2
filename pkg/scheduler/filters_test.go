package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

type filterCase struct {
	name string
	pod  *v1.Pod
	node *v1.Node
	// pods already on the node
	existing []*v1.Pod
	want     []string
}

func runFilterCases(t *testing.T, f FilterPlugin, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := f.Filter(NewPodInfo(tc.pod), NewNodeInfo(tc.node, tc.existing...))
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s.Filter = %q, want %q", f.Name(), got, want)
			}
		})
	}
}

var (
	noSchedule = v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	noExecute  = v1.Taint{Key: "evict", Value: "yes", Effect: v1.TaintEffectNoExecute}
	preferNo   = v1.Taint{Key: "soft", Value: "x", Effect: v1.TaintEffectPreferNoSchedule}
)

func TestNodeUnschedulable(t *testing.T) {
	runFilterCases(t, NodeUnschedulable{}, []filterCase{
		{name: "schedulable", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10)},
		{name: "cordoned", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10, cordoned), want: []string{ReasonUnschedulable}},
		{name: "cordoned, tolerated", node: node("n", "1", "1Gi", 10, cordoned),
			pod: pod("p", "", "", tolerating(v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}))},
		{name: "cordoned, tolerate everything", node: node("n", "1", "1Gi", 10, cordoned),
			pod: pod("p", "", "", tolerating(v1.Toleration{Operator: v1.TolerationOpExists}))},
		{name: "cordoned, toleration of another effect", node: node("n", "1", "1Gi", 10, cordoned),
			pod:  pod("p", "", "", tolerating(v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})),
			want: []string{ReasonUnschedulable}},
	})
}

func TestNodeReady(t *testing.T) {
	notReady := "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
	unreachable := "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
	runFilterCases(t, NodeReady{}, []filterCase{
		{name: "ready", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10)},
		{name: "not ready", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10, withReady(v1.ConditionFalse)), want: []string{notReady}},
		{name: "unknown", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10, withReady(v1.ConditionUnknown)), want: []string{unreachable}},
		{name: "no condition", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10, withReady("")), want: []string{unreachable}},
		{name: "not ready, tolerated", node: node("n", "1", "1Gi", 10, withReady(v1.ConditionFalse)),
			pod: pod("p", "", "", tolerating(v1.Toleration{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists}))},
		{name: "not ready, wrong toleration", node: node("n", "1", "1Gi", 10, withReady(v1.ConditionFalse)),
			pod:  pod("p", "", "", tolerating(v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists})),
			want: []string{notReady}},
		{name: "not ready, already tainted: TaintToleration's call",
			node: node("n", "1", "1Gi", 10, withReady(v1.ConditionFalse), withTaints(v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute})),
			pod:  pod("p", "", "")},
	})
}

func TestNodeName(t *testing.T) {
	runFilterCases(t, NodeName{}, []filterCase{
		{name: "no node name", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10)},
		{name: "this node", pod: pod("p", "", "", onNode("n")), node: node("n", "1", "1Gi", 10)},
		{name: "another node", pod: pod("p", "", "", onNode("m")), node: node("n", "1", "1Gi", 10), want: []string{ReasonNodeName}},
	})
}

func TestTaintToleration(t *testing.T) {
	runFilterCases(t, TaintToleration{}, []filterCase{
		{name: "no taints", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10)},
		{name: "NoSchedule", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10, withTaints(noSchedule)),
			want: []string{"node(s) had untolerated taint {dedicated: gpu}"}},
		{name: "NoExecute", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10, withTaints(noExecute)),
			want: []string{"node(s) had untolerated taint {evict: yes}"}},
		{name: "PreferNoSchedule does not filter", pod: pod("p", "", ""), node: node("n", "1", "1Gi", 10, withTaints(preferNo))},
		{name: "tolerated by Equal", node: node("n", "1", "1Gi", 10, withTaints(noSchedule)),
			pod: pod("p", "", "", tolerating(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}))},
		{name: "tolerated by Exists, any effect", node: node("n", "1", "1Gi", 10, withTaints(noSchedule)),
			pod: pod("p", "", "", tolerating(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists}))},
		{name: "wrong value", node: node("n", "1", "1Gi", 10, withTaints(noSchedule)),
			pod:  pod("p", "", "", tolerating(v1.Toleration{Key: "dedicated", Value: "cpu", Effect: v1.TaintEffectNoSchedule})),
			want: []string{"node(s) had untolerated taint {dedicated: gpu}"}},
		{name: "wrong effect", node: node("n", "1", "1Gi", 10, withTaints(noSchedule)),
			pod:  pod("p", "", "", tolerating(v1.Toleration{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoExecute})),
			want: []string{"node(s) had untolerated taint {dedicated: gpu}"}},
		{name: "first untolerated of two", node: node("n", "1", "1Gi", 10, withTaints(noSchedule, noExecute)),
			pod:  pod("p", "", "", tolerating(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists})),
			want: []string{"node(s) had untolerated taint {evict: yes}"}},
	})
}

func TestNodeAffinity(t *testing.T) {
	zoneA := node("a", "1", "1Gi", 10, withLabels("zone", "a", "gpus", "4"))
	runFilterCases(t, NodeAffinity{}, []filterCase{
		{name: "nothing required", pod: pod("p", "", ""), node: zoneA},
		{name: "nodeSelector matches", pod: pod("p", "", "", selecting("zone", "a")), node: zoneA},
		{name: "nodeSelector does not match", pod: pod("p", "", "", selecting("zone", "b")), node: zoneA, want: []string{ReasonNodeAffinity}},
		{name: "nodeSelector label missing", pod: pod("p", "", "", selecting("disk", "ssd")), node: zoneA, want: []string{ReasonNodeAffinity}},
		{name: "In", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "a", "b")}})), node: zoneA},
		{name: "In, no match", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "b")}})), node: zoneA,
			want: []string{ReasonNodeAffinity}},
		{name: "NotIn", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpNotIn, "a")}})), node: zoneA,
			want: []string{ReasonNodeAffinity}},
		{name: "Exists", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpExists)}})), node: zoneA},
		{name: "DoesNotExist", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpDoesNotExist)}})), node: zoneA,
			want: []string{ReasonNodeAffinity}},
		{name: "Gt", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("gpus", v1.NodeSelectorOpGt, "2")}})), node: zoneA},
		{name: "Gt, not greater", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("gpus", v1.NodeSelectorOpGt, "4")}})), node: zoneA,
			want: []string{ReasonNodeAffinity}},
		{name: "Lt", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("gpus", v1.NodeSelectorOpLt, "8")}})), node: zoneA},
		{name: "terms are ORed", pod: pod("p", "", "", requiring(
			v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "b")}},
			v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "a")}},
		)), node: zoneA},
		{name: "expressions are ANDed", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
			expr("zone", v1.NodeSelectorOpIn, "a"), expr("gpus", v1.NodeSelectorOpLt, "2"),
		}})), node: zoneA, want: []string{ReasonNodeAffinity}},
		{name: "matchFields metadata.name", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpIn, "a")}})), node: zoneA},
		{name: "matchFields another name", pod: pod("p", "", "", requiring(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{expr("metadata.name", v1.NodeSelectorOpIn, "b")}})), node: zoneA,
			want: []string{ReasonNodeAffinity}},
		{name: "nodeSelector and affinity both needed", pod: pod("p", "", "", selecting("zone", "b"),
			requiring(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpExists)}})), node: zoneA,
			want: []string{ReasonNodeAffinity}},
	})
}

func TestNodePorts(t *testing.T) {
	tcp80 := v1.ContainerPort{ContainerPort: 80, HostPort: 80}
	udp80 := v1.ContainerPort{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolUDP}
	ip1 := v1.ContainerPort{ContainerPort: 80, HostPort: 80, HostIP: "10.0.0.1"}
	ip2 := v1.ContainerPort{ContainerPort: 80, HostPort: 80, HostIP: "10.0.0.2"}
	n := node("n", "1", "1Gi", 10)
	runFilterCases(t, NodePorts{}, []filterCase{
		{name: "no ports", pod: pod("p", "", ""), node: n, existing: []*v1.Pod{pod("q", "", "", hostPorts(tcp80))}},
		{name: "container port only", pod: pod("p", "", "", hostPorts(v1.ContainerPort{ContainerPort: 80})), node: n,
			existing: []*v1.Pod{pod("q", "", "", hostPorts(tcp80))}},
		{name: "free", pod: pod("p", "", "", hostPorts(tcp80)), node: n},
		{name: "taken", pod: pod("p", "", "", hostPorts(tcp80)), node: n, existing: []*v1.Pod{pod("q", "", "", hostPorts(tcp80))},
			want: []string{ReasonNodePorts}},
		{name: "other protocol", pod: pod("p", "", "", hostPorts(udp80)), node: n, existing: []*v1.Pod{pod("q", "", "", hostPorts(tcp80))}},
		{name: "other IPs", pod: pod("p", "", "", hostPorts(ip2)), node: n, existing: []*v1.Pod{pod("q", "", "", hostPorts(ip1))}},
		{name: "same IP", pod: pod("p", "", "", hostPorts(ip1)), node: n, existing: []*v1.Pod{pod("q", "", "", hostPorts(ip1))},
			want: []string{ReasonNodePorts}},
		{name: "all addresses vs one", pod: pod("p", "", "", hostPorts(tcp80)), node: n, existing: []*v1.Pod{pod("q", "", "", hostPorts(ip1))},
			want: []string{ReasonNodePorts}},
		{name: "one vs all addresses", pod: pod("p", "", "", hostPorts(ip1)), node: n, existing: []*v1.Pod{pod("q", "", "", hostPorts(tcp80))},
			want: []string{ReasonNodePorts}},
	})
}

func TestNodeResourcesFit(t *testing.T) {
	n := node("n", "4", "8Gi", 3, withAllocatable(v1.ResourceEphemeralStorage, "10Gi"), withAllocatable("nvidia.com/gpu", "2"))
	half := pod("half", "2", "4Gi")
	runFilterCases(t, NodeResourcesFit{}, []filterCase{
		{name: "fits", pod: pod("p", "2", "4Gi"), node: n, existing: []*v1.Pod{half}},
		{name: "exactly full", pod: pod("p", "4", "8Gi"), node: n},
		{name: "cpu short", pod: pod("p", "2500m", "1Gi"), node: n, existing: []*v1.Pod{half}, want: []string{"Insufficient cpu"}},
		{name: "memory short", pod: pod("p", "1", "5Gi"), node: n, existing: []*v1.Pod{half}, want: []string{"Insufficient memory"}},
		{name: "both short", pod: pod("p", "3", "5Gi"), node: n, existing: []*v1.Pod{half}, want: []string{"Insufficient cpu", "Insufficient memory"}},
		{name: "too many pods", pod: pod("p", "", ""), node: n, existing: []*v1.Pod{pod("a", "", ""), pod("b", "", ""), pod("c", "", "")},
			want: []string{ReasonTooManyPods}},
		{name: "too many pods and cpu", pod: pod("p", "5", ""), node: n, existing: []*v1.Pod{pod("a", "", ""), pod("b", "", ""), pod("c", "", "")},
			want: []string{ReasonTooManyPods, "Insufficient cpu"}},
		{name: "best effort fits a full node", pod: pod("p", "", ""), node: n, existing: []*v1.Pod{pod("full", "4", "8Gi")}},
		{name: "ephemeral-storage", pod: pod("p", "", "", requesting(v1.ResourceEphemeralStorage, "11Gi")), node: n,
			want: []string{"Insufficient ephemeral-storage"}},
		{name: "gpu fits", pod: pod("p", "", "", requesting("nvidia.com/gpu", "2")), node: n},
		{name: "gpu short", pod: pod("p", "", "", requesting("nvidia.com/gpu", "1")), node: n,
			existing: []*v1.Pod{pod("g", "", "", requesting("nvidia.com/gpu", "2"))}, want: []string{"Insufficient nvidia.com/gpu"}},
		{name: "extended resource the node lacks", pod: pod("p", "", "", requesting("example.com/fpga", "1")), node: n,
			want: []string{"Insufficient example.com/fpga"}},
		{name: "init container larger than containers", pod: pod("p", "1", "1Gi", withInit("5", "1Gi", false)), node: n,
			want: []string{"Insufficient cpu"}},
		{name: "init container smaller than containers", pod: pod("p", "3", "1Gi", withInit("4", "1Gi", false)), node: n},
		{name: "sidecar adds to containers", pod: pod("p", "3", "1Gi", withInit("2", "1Gi", true)), node: n,
			want: []string{"Insufficient cpu"}},
		{name: "overhead counts", pod: pod("p", "3900m", "1Gi", withOverhead("200m", "0")), node: n,
			want: []string{"Insufficient cpu"}},
		{name: "existing pod overhead counts", pod: pod("p", "1", "1Gi"), node: n,
			existing: []*v1.Pod{pod("o", "2900m", "", withOverhead("200m", "0"))}, want: []string{"Insufficient cpu"}},
	})
}

func TestPodInfoRequests(t *testing.T) {
	cases := []struct {
		name                      string
		pod                       *v1.Pod
		cpu, mem, nonZeroCPU, nzM int64
	}{
		{name: "requests", pod: pod("p", "250m", "1Gi"), cpu: 250, mem: 1 << 30, nonZeroCPU: 250, nzM: 1 << 30},
		{name: "best effort gets defaults for scoring", pod: pod("p", "", ""), nonZeroCPU: 100, nzM: 200 << 20},
		{name: "cpu only", pod: pod("p", "1", ""), cpu: 1000, nonZeroCPU: 1000, nzM: 200 << 20},
		{name: "max of init", pod: pod("p", "1", "1Gi", withInit("2", "512Mi", false)), cpu: 2000, mem: 1 << 30, nonZeroCPU: 2000, nzM: 1 << 30},
		{name: "overhead", pod: pod("p", "1", "1Gi", withOverhead("100m", "64Mi")), cpu: 1100, mem: 1<<30 + 64<<20, nonZeroCPU: 1100, nzM: 1<<30 + 64<<20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pi := NewPodInfo(tc.pod)
			if pi.Requests.MilliCPU != tc.cpu || pi.Requests.Memory != tc.mem {
				t.Errorf("requests = %dm, %d; want %dm, %d", pi.Requests.MilliCPU, pi.Requests.Memory, tc.cpu, tc.mem)
			}
			if pi.NonZero.MilliCPU != tc.nonZeroCPU || pi.NonZero.Memory != tc.nzM {
				t.Errorf("non-zero = %dm, %d; want %dm, %d", pi.NonZero.MilliCPU, pi.NonZero.Memory, tc.nonZeroCPU, tc.nzM)
			}
		})
	}
}
