package scheduler

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// BenchResult is what one scheduling benchmark measured.
type BenchResult struct {
	Nodes, Pods int
	// Duration runs from the moment the scheduler's informers had synced
	// (every pod already created and pending) to the last pod seen bound.
	Duration time.Duration
	// PodsPerSecond is Pods / Duration.
	PodsPerSecond float64
	// MinPerNode and MaxPerNode show how the pods spread over the nodes.
	MinPerNode, MaxPerNode int
}

// benchLabel marks the fake nodes, benchTaint keeps every other pod off them.
const benchLabel = "minik8s.io/bench"

// Bench measures how fast a scheduler places pods, and writes the result
// to w. It creates nodes fake Node objects (Ready; 32 cpu, 64Gi memory, 110
// pods allocatable; labelled and tainted minik8s.io/bench so nothing else
// lands there) and pods pending pods (100m cpu, 128Mi memory) in a
// namespace of its own, all through the API, then starts a scheduler of its
// own (schedulerName minik8s-bench-<id>) and times it until every pod is
// bound. It removes what it created at the end. It is a benchmark: it
// reports, it does not judge.
//
// The client's rate limit caps the result: each pod costs a binding and an
// event. Give it QPS < 0 (no client-side limit) to measure the scheduler.
func Bench(ctx context.Context, client kubernetes.Interface, nodes, pods int, w io.Writer) error {
	r, err := MeasureThroughput(ctx, client, nodes, pods)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "scheduler: %d nodes, %d pods: %s, %.0f pods/s (pods per node %d-%d)\n",
		r.Nodes, r.Pods, r.Duration.Round(time.Millisecond), r.PodsPerSecond, r.MinPerNode, r.MaxPerNode)
	return err
}

// MeasureThroughput is Bench without the report.
func MeasureThroughput(ctx context.Context, client kubernetes.Interface, nodes, pods int) (BenchResult, error) {
	if nodes < 1 || pods < 1 {
		return BenchResult{}, fmt.Errorf("bench: need at least one node and one pod, got %d and %d", nodes, pods)
	}
	id := rand.String(6)
	ns := "minik8s-bench-" + id
	b := &bench{client: client, id: id, ns: ns, nodes: nodes, pods: pods}
	defer b.cleanup(context.WithoutCancel(ctx))
	return b.run(ctx)
}

type bench struct {
	client      kubernetes.Interface
	id, ns      string
	nodes, pods int
}

func (b *bench) run(ctx context.Context) (BenchResult, error) {
	res := BenchResult{Nodes: b.nodes, Pods: b.pods}
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}}, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("bench: create namespace: %w", err)
	}
	if err := parallel(ctx, b.nodes, func(i int) error {
		_, err := b.client.CoreV1().Nodes().Create(ctx, b.node(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return res, fmt.Errorf("bench: create nodes: %w", err)
	}
	if err := parallel(ctx, b.pods, func(i int) error {
		_, err := b.client.CoreV1().Pods(b.ns).Create(ctx, b.pod(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return res, fmt.Errorf("bench: create pods: %w", err)
	}

	// Watch the pods get bound.
	var bound atomic.Int64
	var mu sync.Mutex
	perNode := map[string]int{}
	allBound := make(chan struct{})
	var last atomic.Int64
	factory := informers.NewSharedInformerFactoryWithOptions(b.client, 0, informers.WithNamespace(b.ns))
	count := func(old *v1.Pod, pod *v1.Pod) {
		if pod.Spec.NodeName == "" || (old != nil && old.Spec.NodeName != "") {
			return
		}
		last.Store(time.Now().UnixNano())
		mu.Lock()
		perNode[pod.Spec.NodeName]++
		mu.Unlock()
		if bound.Add(1) == int64(b.pods) {
			close(allBound)
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { count(nil, obj.(*v1.Pod)) },
		UpdateFunc: func(old, obj any) { count(old.(*v1.Pod), obj.(*v1.Pod)) },
	}); err != nil {
		return res, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	factory.Start(watchCtx.Done())
	defer factory.Shutdown()
	defer stopWatch()
	if !cache.WaitForCacheSync(watchCtx.Done(), factory.Core().V1().Pods().Informer().HasSynced) {
		return res, ctx.Err()
	}

	sched, err := New(Config{Client: b.client, SchedulerName: "minik8s-bench-" + b.id})
	if err != nil {
		return res, err
	}
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Start(schedCtx) }()
	defer func() {
		stopSched()
		<-schedDone
	}()
	select {
	case <-sched.Ready():
	case <-ctx.Done():
		return res, ctx.Err()
	}
	start := time.Now()

	// Give up when no pod has been bound for a minute.
	const stall = time.Minute
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-allBound:
			done = true
		case <-ctx.Done():
			return res, ctx.Err()
		case err := <-schedDone:
			schedDone <- err
			return res, fmt.Errorf("bench: scheduler stopped: %v", err)
		case now := <-tick.C:
			since := start
			if l := last.Load(); l != 0 {
				since = time.Unix(0, l)
			}
			if now.Sub(since) > stall {
				return res, fmt.Errorf("bench: stalled: %d of %d pods bound, none in %s", bound.Load(), b.pods, stall)
			}
		}
	}
	res.Duration = time.Unix(0, last.Load()).Sub(start)
	if res.Duration <= 0 {
		res.Duration = time.Nanosecond
	}
	res.PodsPerSecond = float64(b.pods) / res.Duration.Seconds()
	mu.Lock()
	res.MinPerNode, res.MaxPerNode = b.pods, 0
	for i := range b.nodes {
		n := perNode[b.nodeName(i)]
		res.MinPerNode, res.MaxPerNode = min(res.MinPerNode, n), max(res.MaxPerNode, n)
	}
	mu.Unlock()
	return res, nil
}

func (b *bench) nodeName(i int) string { return fmt.Sprintf("bench-%s-%04d", b.id, i) }

func (b *bench) node(i int) *v1.Node {
	res := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("32"),
		v1.ResourceMemory: resource.MustParse("64Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   b.nodeName(i),
			Labels: map[string]string{benchLabel: b.id, v1.LabelHostname: b.nodeName(i)},
		},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: benchLabel, Value: b.id, Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			Capacity: res, Allocatable: res,
			Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		},
	}
}

func (b *bench) pod(i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: b.ns},
		Spec: v1.PodSpec{
			SchedulerName: "minik8s-bench-" + b.id,
			NodeSelector:  map[string]string{benchLabel: b.id},
			Tolerations: []v1.Toleration{
				{Key: benchLabel, Operator: v1.TolerationOpEqual, Value: b.id, Effect: v1.TaintEffectNoSchedule},
				// The fake nodes have no kubelet: should a node controller
				// mark them not ready, the benchmark still runs.
				{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists},
				{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists},
			},
			Containers: []v1.Container{{
				Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
	}
}

// cleanup deletes the namespace's pods at once (nothing runs them), the
// namespace and the fake nodes.
func (b *bench) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	zero := int64(0)
	_ = b.client.CoreV1().Pods(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = b.client.CoreV1().Namespaces().Delete(ctx, b.ns, metav1.DeleteOptions{})
	_ = b.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: benchLabel + "=" + b.id})
}

// parallel runs f(0..n-1) on 32 goroutines and returns the first error.
func parallel(ctx context.Context, n int, f func(i int) error) error {
	var first error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workqueue.ParallelizeUntil(ctx, 32, n, func(i int) {
		if err := f(i); err != nil {
			once.Do(func() { first = err; cancel() })
		}
	})
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
