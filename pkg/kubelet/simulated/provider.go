package simulated

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/kubelet"
)

// Annotations that script a simulated pod's end.
const (
	AnnotationExitAfter = "minik8s.io/simulate-exit-after"
	AnnotationExitCode  = "minik8s.io/simulate-exit-code"
)

// Config describes the simulated node.
type Config struct {
	NodeName string
	// NodeIP is the node's InternalIP; PodCIDR's addresses go to its pods.
	NodeIP  string
	PodCIDR string
	// Capacity defaults to 32 cpu, 64Gi memory, 110 pods.
	Capacity corev1.ResourceList
	Clock    clock.Clock
}

// Provider is a simulated node.
type Provider struct {
	cfg    Config
	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	nextIP uint32
	base   net.IP
	notify func(*corev1.Pod)
	logs   logBook // what the containers "print" (logs.go)
	// started is the node's start, its summary's startTime (stats.go).
	started time.Time
}

var (
	_ kubelet.Provider     = (*Provider)(nil)
	_ kubelet.NodeProvider = (*Provider)(nil)
)

// New builds a simulated node.
func New(cfg Config) (*Provider, error) {
	if cfg.NodeName == "" {
		return nil, fmt.Errorf("simulated provider: node name required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Capacity == nil {
		cfg.Capacity = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = "10.244.0.0/24"
	}
	_, ipnet, err := net.ParseCIDR(cfg.PodCIDR)
	if err != nil || ipnet.IP.To4() == nil {
		return nil, fmt.Errorf("simulated provider: pod CIDR %q: want IPv4 CIDR", cfg.PodCIDR)
	}
	return &Provider{cfg: cfg, pods: map[string]*corev1.Pod{}, base: ipnet.IP.To4(), nextIP: 2, started: cfg.Clock.Now()}, nil
}

func key(ns, name string) string { return ns + "/" + name }

func (p *Provider) ConfigureNode(_ context.Context, node *corev1.Node) {
	node.Status.Capacity = p.cfg.Capacity.DeepCopy()
	node.Status.Allocatable = p.cfg.Capacity.DeepCopy()
	if p.cfg.NodeIP != "" {
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: p.cfg.NodeIP}}
	}
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: p.cfg.NodeName})
	node.Status.NodeInfo.ContainerRuntimeVersion = "simulated://" + kubelet.Version
	node.Status.NodeInfo.OSImage = "minik8s simulated node"
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels["type"] = "simulated"
}

func (p *Provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	now := metav1.NewTime(p.cfg.Clock.Now())
	p.mu.Lock()
	ip := make(net.IP, 4)
	copy(ip, p.base)
	ip[3] += byte(p.nextIP % 254)
	ip[2] += byte(p.nextIP / 254)
	p.nextIP++
	running := pod.DeepCopy()
	running.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: p.cfg.NodeIP, PodIP: ip.String(),
		PodIPs:    []corev1.PodIP{{IP: ip.String()}},
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
	}
	if p.cfg.NodeIP != "" {
		running.Status.HostIPs = []corev1.HostIP{{IP: p.cfg.NodeIP}}
	}
	for _, c := range pod.Spec.Containers {
		running.Status.ContainerStatuses = append(running.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "simulated://" + c.Image, Ready: true, Started: ptrTo(true),
			ContainerID:        "simulated://" + string(pod.UID) + "/" + c.Name,
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			Resources:          runsWith(c),
			AllocatedResources: c.Resources.Requests.DeepCopy(),
		})
	}
	p.pods[key(pod.Namespace, pod.Name)] = running
	for _, c := range pod.Spec.Containers {
		p.logs.start(pod.Namespace, pod.Name, c.Name, now.Time, scriptedLogs(pod)...)
	}
	snapshot := running.DeepCopy()
	notify := p.notify
	p.mu.Unlock()

	if d, err := time.ParseDuration(pod.Annotations[AnnotationExitAfter]); err == nil {
		code, _ := strconv.Atoi(pod.Annotations[AnnotationExitCode])
		go func() {
			<-p.cfg.Clock.After(d)
			p.finish(pod.Namespace, pod.Name, pod.UID, int32(code))
		}()
	}
	if notify != nil {
		go notify(snapshot)
	}
	return nil
}

// finish ends a pod's containers with code, as its restart policy says a
// real node would: Succeeded/Failed for Never and OnFailure-with-success,
// a restart for everything else.
func (p *Provider) finish(ns, name string, uid types.UID, code int32) {
	p.mu.Lock()
	pod, ok := p.pods[key(ns, name)]
	if !ok || pod.UID != uid {
		p.mu.Unlock()
		return
	}
	now := metav1.NewTime(p.cfg.Clock.Now())
	policy := pod.Spec.RestartPolicy
	restart := policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && code != 0)
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		term := &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: now}
		if cs.State.Running != nil {
			term.StartedAt = cs.State.Running.StartedAt
		}
		p.logs.exit(ns, name, cs.Name, now.Time, code, restart, scriptedLogs(pod)...)
		if restart {
			cs.RestartCount++
			cs.LastTerminationState = corev1.ContainerState{Terminated: term}
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
			continue
		}
		cs.State = corev1.ContainerState{Terminated: term}
		cs.Ready = false
	}
	if !restart {
		// A finished pod's ephemeral containers are stopped with it.
		for i := range pod.Status.EphemeralContainerStatuses {
			if cs := &pod.Status.EphemeralContainerStatuses[i]; cs.State.Running != nil {
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "Error", StartedAt: cs.State.Running.StartedAt, FinishedAt: now}}
				p.logs.exit(ns, name, cs.Name, now.Time, 137, false)
			}
		}
		pod.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			pod.Status.Phase = corev1.PodFailed
		}
		for i := range pod.Status.Conditions {
			if t := pod.Status.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
				pod.Status.Conditions[i].Status = corev1.ConditionFalse
				pod.Status.Conditions[i].Reason = "PodCompleted"
				pod.Status.Conditions[i].LastTransitionTime = now
			}
		}
	}
	snapshot := pod.DeepCopy()
	notify := p.notify
	p.mu.Unlock()
	if notify != nil {
		notify(snapshot)
	}
}

func (p *Provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.pods[key(pod.Namespace, pod.Name)]; ok {
		cur.Spec = *pod.Spec.DeepCopy()
		cur.Labels, cur.Annotations = maps.Clone(pod.Labels), maps.Clone(pod.Annotations)
		for i := range cur.Status.ContainerStatuses {
			for _, c := range pod.Spec.Containers {
				if c.Name == cur.Status.ContainerStatuses[i].Name {
					// A resize takes effect at once.
					cur.Status.ContainerStatuses[i].Image = c.Image
					cur.Status.ContainerStatuses[i].Resources = runsWith(c)
					cur.Status.ContainerStatuses[i].AllocatedResources = c.Resources.Requests.DeepCopy()
				}
			}
		}
		// New ephemeral containers start at once, and are never restarted.
		now := metav1.NewTime(p.cfg.Clock.Now())
		for _, ec := range pod.Spec.EphemeralContainers {
			if slices.ContainsFunc(cur.Status.EphemeralContainerStatuses, func(cs corev1.ContainerStatus) bool { return cs.Name == ec.Name }) ||
				cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed {
				continue
			}
			cur.Status.EphemeralContainerStatuses = append(cur.Status.EphemeralContainerStatuses, corev1.ContainerStatus{
				Name: ec.Name, Image: ec.Image, ImageID: "simulated://" + ec.Image, Started: ptrTo(true),
				ContainerID: "simulated://" + string(pod.UID) + "/" + ec.Name,
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
			p.logs.start(pod.Namespace, pod.Name, ec.Name, now.Time)
		}
	}
	return nil
}

// runsWith is the status's resources of a container: its spec's
// requests and limits.
func runsWith(c corev1.Container) *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy(), Limits: c.Resources.Limits.DeepCopy()}
}

func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, key(pod.Namespace, pod.Name))
	p.logs.remove(pod.Namespace, pod.Name)
	return nil
}

func (p *Provider) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pod, ok := p.pods[key(ns, name)]; ok {
		return pod.DeepCopy(), nil
	}
	return nil, nil
}

func (p *Provider) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, ns, name)
	if pod == nil || err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

func (p *Provider) GetPods(_ context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(p.pods))
	for _, pod := range p.pods {
		out = append(out, pod.DeepCopy())
	}
	return out, nil
}

func (p *Provider) NotifyPods(_ context.Context, notify func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = notify
	p.mu.Unlock()
}

func ptrTo[T any](v T) *T { return &v }
