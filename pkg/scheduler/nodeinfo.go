package scheduler

import (
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Kubernetes' requests for containers that set none, used by the
// LeastAllocated and MostAllocated scores (not by the fit check).
const (
	defaultMilliCPURequest int64 = 100               // 0.1 core
	defaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

var nonZeroDefaults = v1.ResourceList{
	v1.ResourceCPU:    *resource.NewMilliQuantity(defaultMilliCPURequest, resource.DecimalSI),
	v1.ResourceMemory: *resource.NewQuantity(defaultMemoryRequest, resource.BinarySI),
}

// Resource is an amount of each schedulable resource in the units the fit
// check compares: millicores for cpu, bytes for memory and storage.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is a node's pod capacity (allocatable "pods").
	AllowedPodNumber int64
	// Scalar holds extended resources (nvidia.com/gpu), hugepages and the like.
	Scalar map[v1.ResourceName]int64
}

// NewResource converts a resource list.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds a resource list.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if isScalarResourceName(name) {
				if r.Scalar == nil {
					r.Scalar = map[v1.ResourceName]int64{}
				}
				r.Scalar[name] += q.Value()
			}
		}
	}
}

func (r *Resource) plus(o Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += sign * o.AllowedPodNumber
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] += sign * v
	}
}

// Get returns the amount of one resource.
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return r.AllowedPodNumber
	}
	return r.Scalar[name]
}

func (r Resource) clone() Resource {
	r.Scalar = maps.Clone(r.Scalar)
	return r
}

// isScalarResourceName: extended (example.com/foo), prefixed native
// (kubernetes.io/...), hugepages-* and attachable-volumes-* resources.
func isScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") || strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix)
}

// hostPort is one host port a pod uses.
type hostPort struct {
	IP       string
	Protocol v1.Protocol
	Port     int32
}

const bindAllHostIP = "0.0.0.0"

// podHostPorts lists the host ports of a pod's containers and sidecars
// (restartable init containers), defaulted as Kubernetes does.
func podHostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
			if hp.IP == "" {
				hp.IP = bindAllHostIP
			}
			if hp.Protocol == "" {
				hp.Protocol = v1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// PodInfo is what the plugins need to know about a pod, computed once per
// scheduling attempt rather than once per node.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is what the pod needs: its containers' requests, or the
	// largest init container's when that is more, sidecars, the overhead.
	Requests Resource
	// NonZero is Requests for cpu and memory with Kubernetes' defaults
	// (100m, 200Mi) for containers that request none; scores use it.
	NonZero   Resource
	HostPorts []hostPort

	requiredAffinity  nodeaffinity.RequiredNodeAffinity
	preferredAffinity *nodeaffinity.PreferredSchedulingTerms

	// The pod's inter-pod affinity and anti-affinity terms, parsed.
	podAffinity podAffinityTerms
}

// NewPodInfo computes a pod's requests, ports and node affinity.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{
		Pod:              pod,
		Requests:         NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})),
		HostPorts:        podHostPorts(pod),
		requiredAffinity: nodeaffinity.GetRequiredNodeAffinity(pod),
	}
	nz := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults})
	pi.NonZero.MilliCPU = nz.Cpu().MilliValue()
	pi.NonZero.Memory = nz.Memory().Value()
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		// Invalid terms were refused by validation; if any slip through
		// they score nothing.
		pi.preferredAffinity, _ = nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	pi.podAffinity = newPodAffinityTerms(pod)
	return pi
}

// NodeInfo is a node and what its pods take of it.
type NodeInfo struct {
	Node        *v1.Node
	Allocatable Resource
	// Requested sums the Requests of the node's pods, NonZeroRequested
	// their NonZero.
	Requested        Resource
	NonZeroRequested Resource
	// Pods are the pods the node runs (or is about to).
	Pods []*PodInfo
	// UsedPorts counts the pods using each host port.
	UsedPorts map[hostPort]int
	// podsWithAffinity counts the pods with inter-pod affinity or
	// anti-affinity terms, podsWithRequiredAntiAffinity those with required
	// anti-affinity: nodes without them are skipped when other pods' terms
	// are checked.
	podsWithAffinity             int
	podsWithRequiredAntiAffinity int

	generation int64
}

// NewNodeInfo returns the info of a node running pods.
func NewNodeInfo(node *v1.Node, pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{}
	ni.setNode(node)
	for _, p := range pods {
		ni.addPod(NewPodInfo(p))
	}
	return ni
}

func (n *NodeInfo) setNode(node *v1.Node) {
	n.Node = node
	n.Allocatable = Resource{}
	if node != nil {
		n.Allocatable = NewResource(node.Status.Allocatable)
	}
}

func (n *NodeInfo) addPod(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	n.updatePod(pi, 1)
}

func (n *NodeInfo) removePod(pi *PodInfo) {
	if i := slices.Index(n.Pods, pi); i >= 0 {
		n.Pods = slices.Delete(n.Pods, i, i+1)
	}
	n.updatePod(pi, -1)
}

func (n *NodeInfo) updatePod(pi *PodInfo, sign int64) {
	n.Requested.plus(pi.Requests, sign)
	n.NonZeroRequested.plus(pi.NonZero, sign)
	if pi.podAffinity.any() {
		n.podsWithAffinity += int(sign)
	}
	if len(pi.podAffinity.requiredAnti) > 0 {
		n.podsWithRequiredAntiAffinity += int(sign)
	}
	for _, hp := range pi.HostPorts {
		if n.UsedPorts == nil {
			n.UsedPorts = map[hostPort]int{}
		}
		n.UsedPorts[hp] += int(sign)
		if n.UsedPorts[hp] <= 0 {
			delete(n.UsedPorts, hp)
		}
	}
}

// portConflict: 0.0.0.0 conflicts with every address of the same port and
// protocol, any other address with itself and 0.0.0.0.
func (n *NodeInfo) portConflict(hp hostPort) bool {
	if len(n.UsedPorts) == 0 {
		return false
	}
	if hp.IP == bindAllHostIP {
		for used := range n.UsedPorts {
			if used.Port == hp.Port && used.Protocol == hp.Protocol {
				return true
			}
		}
		return false
	}
	if n.UsedPorts[hp] > 0 {
		return true
	}
	hp.IP = bindAllHostIP
	return n.UsedPorts[hp] > 0
}

func (n *NodeInfo) clone() *NodeInfo {
	c := *n
	c.Allocatable = n.Allocatable.clone()
	c.Requested = n.Requested.clone()
	c.NonZeroRequested = n.NonZeroRequested.clone()
	c.UsedPorts = maps.Clone(n.UsedPorts)
	c.Pods = slices.Clone(n.Pods)
	return &c
}
