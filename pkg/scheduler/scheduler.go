package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/lease"
)

// assumedTTL is how long a pod bound by this scheduler counts on its node
// without the informer confirming it.
const assumedTTL = 30 * time.Second

// Scheduler assigns pending pods to nodes. Create it with New and run it
// with Start.
type Scheduler struct {
	cfg     Config
	client  kubernetes.Interface
	log     *slog.Logger
	clock   clock.WithTicker
	profile *profile
	cache   *nodeCache
	// listers are read by the cluster-wide plugins; Start adds the
	// optional ones.
	listers *Listers
	// snap and rnd belong to the one goroutine that schedules.
	snap snapshot
	rnd  *rand.Rand

	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	synced  []cache.InformerSynced
	ready   chan struct{}

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	// mu guards the queue of the current leadership term (nil between
	// terms), the pods that did not fit (true for those that other pods
	// kept out: pod affinity, anti-affinity, topology spread), and the
	// counts of "move" events: any, and assigned pods added or changed.
	mu            sync.Mutex
	queue         workqueue.TypedRateLimitingInterface[string]
	limiter       workqueue.TypedRateLimiter[string]
	unschedulable map[string]bool
	// nominated is the node each preemptor had room made on.
	nominated map[string]string
	moves     uint64
	podMoves  uint64

	// inflight counts bindings and status updates still running.
	inflight sync.WaitGroup
	// attempts counts scheduling attempts (tests).
	attempts atomic.Int64
}

// New validates cfg, fills its defaults and wires the scheduler's
// informers. Nothing runs until Start.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{Clock: cfg.Clock}))
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	nsInf := factory.Core().V1().Namespaces()
	svcInf := factory.Core().V1().Services()
	rsInf := factory.Apps().V1().ReplicaSets()
	pvcInf, pvInf := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes()
	scInf := factory.Storage().V1().StorageClasses()
	listers := &Listers{Namespaces: nsInf.Lister(), Services: svcInf.Lister(), ReplicaSets: rsInf.Lister(),
		Volumes: VolumeListers{Claims: pvcInf.Lister(), Volumes: pvInf.Lister(), Classes: scInf.Lister()}}
	s := &Scheduler{
		nominated:   map[string]string{},
		cfg:         cfg,
		client:      cfg.Client,
		log:         cfg.Logger.With("component", "scheduler", "schedulerName", cfg.SchedulerName),
		clock:       cfg.Clock,
		profile:     newProfile(cfg.Score, listers),
		cache:       newNodeCache(cfg.Clock, assumedTTL),
		listers:     listers,
		rnd:         rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		factory:     factory,
		pods:        podInf.Lister(),
		ready:       make(chan struct{}),
		broadcaster: broadcaster,
		recorder:    broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: cfg.SchedulerName}),
	}
	for _, inf := range []cache.SharedIndexInformer{podInf.Informer(), nodeInf.Informer(), nsInf.Informer(), svcInf.Informer(), rsInf.Informer(),
		pvcInf.Informer(), pvInf.Informer(), scInf.Informer()} {
		s.synced = append(s.synced, inf.HasSynced)
	}
	// A claim bound or created, a volume or a class added may let a pod
	// whose claims kept it out fit now.
	for event, inf := range map[string]cache.SharedIndexInformer{"PvcChange": pvcInf.Informer(), "PvChange": pvInf.Informer(), "StorageClassAdd": scInf.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.moveAll(event) },
			UpdateFunc: func(_, _ any) { s.moveAll(event) },
		}); err != nil {
			return nil, fmt.Errorf("scheduler: %s handler: %w", event, err)
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPod(nil, obj.(*v1.Pod)) },
		UpdateFunc: func(old, obj any) { s.onPod(old.(*v1.Pod), obj.(*v1.Pod)) },
		DeleteFunc: s.onPodDelete,
	}); err != nil {
		return nil, fmt.Errorf("scheduler: pod handler: %w", err)
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.cache.addNode(obj.(*v1.Node))
			s.moveAll("NodeAdd")
		},
		UpdateFunc: func(old, obj any) {
			n := obj.(*v1.Node)
			s.cache.addNode(n)
			if nodeSchedulingChanged(old.(*v1.Node), n) {
				s.moveAll("NodeUpdate")
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				s.cache.removeNode(n.Name)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("scheduler: node handler: %w", err)
	}
	return s, nil
}

// Ready is closed once the scheduler's informers have synced.
func (s *Scheduler) Ready() <-chan struct{} { return s.ready }

// Start runs the scheduler until ctx ends. With leader election it
// schedules only while it holds the lease.
func (s *Scheduler) Start(ctx context.Context) error {
	s.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	defer s.broadcaster.Shutdown()
	ctx, cancel := context.WithCancel(ctx)
	s.watchOptional(ctx)
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return nil
	}
	close(s.ready)
	go s.expireAssumed(ctx)
	if !s.cfg.LeaderElection.Enabled {
		s.log.Info("scheduling")
		s.run(ctx)
		return nil
	}
	return s.campaign(ctx)
}

// watchOptional watches the StatefulSets and ReplicationControllers that
// default spreading reads, where the apiserver serves them: an informer of
// a resource it does not serve would never sync.
func (s *Scheduler) watchOptional(ctx context.Context) {
	if s.served(ctx, "apps/v1", "statefulsets") {
		inf := s.factory.Apps().V1().StatefulSets()
		s.listers.StatefulSets = inf.Lister()
		s.synced = append(s.synced, inf.Informer().HasSynced)
	}
	if s.served(ctx, "v1", "replicationcontrollers") {
		inf := s.factory.Core().V1().ReplicationControllers()
		s.listers.ReplicationControllers = inf.Lister()
		s.synced = append(s.synced, inf.Informer().HasSynced)
	}
}

// served asks the apiserver's discovery whether it serves a resource.
func (s *Scheduler) served(ctx context.Context, groupVersion, resource string) bool {
	list, err := discovery.ToDiscoveryInterfaceWithContext(s.client.Discovery()).ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
	if err != nil {
		s.log.Info("resource not watched", "groupVersion", groupVersion, "resource", resource, "err", err)
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// campaign schedules during each term in which it holds the lease.
func (s *Scheduler) campaign(ctx context.Context) error {
	le := s.cfg.LeaderElection
	return lease.Campaign(ctx, lease.Config{
		Client: s.client, Name: le.LeaseName, Namespace: le.LeaseNamespace, Identity: le.Identity,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Recorder: s.recorder, Logger: s.log,
	}, s.run)
}

// run is one term of scheduling: a fresh queue holding every pending pod,
// worked until ctx ends.
func (s *Scheduler) run(ctx context.Context) {
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](s.cfg.Backoff.Initial, s.cfg.Backoff.Max)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Clock: s.clock})
	s.mu.Lock()
	s.queue, s.limiter, s.unschedulable = q, limiter, map[string]bool{}
	s.mu.Unlock()
	pods, _ := s.pods.List(labels.Everything())
	for _, p := range pods {
		if s.responsible(p) {
			q.Add(podKey(p))
		}
	}
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	for s.scheduleNext(ctx, q) {
	}
	s.mu.Lock()
	s.queue, s.limiter, s.unschedulable = nil, nil, nil
	s.mu.Unlock()
	s.inflight.Wait()
}

// responsible: pending, ours, not being deleted, not gated.
func (s *Scheduler) responsible(pod *v1.Pod) bool {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && name == s.cfg.SchedulerName &&
		len(pod.Spec.SchedulingGates) == 0 && !terminal(pod)
}

func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

func (s *Scheduler) enqueue(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue != nil {
		delete(s.unschedulable, key)
		s.queue.Add(key)
	}
}

// moveAll retries every pod that did not fit, now: something happened that
// may make it fit.
func (s *Scheduler) moveAll(event string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moves++
	if s.queue == nil || len(s.unschedulable) == 0 {
		return
	}
	s.log.Debug("retrying unschedulable pods", "event", event, "pods", len(s.unschedulable))
	for key := range s.unschedulable {
		s.queue.Add(key)
	}
	clear(s.unschedulable)
}

// movePodsKeptOutByPods retries, now, the pods that did not fit because of
// other pods: a pod was assigned, or an assigned pod's labels changed.
func (s *Scheduler) movePodsKeptOutByPods(event string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podMoves++
	if s.queue == nil {
		return
	}
	for key, byPods := range s.unschedulable {
		if byPods {
			s.log.Debug("retrying unschedulable pod", "event", event, "pod", key)
			s.queue.Add(key)
			delete(s.unschedulable, key)
		}
	}
}

// onPod handles an added (old == nil) or updated pod.
func (s *Scheduler) onPod(old, pod *v1.Pod) {
	key := podKey(pod)
	if pod.Spec.NodeName != "" {
		if terminal(pod) {
			// A finished pod frees its node, as if deleted.
			if s.cache.removePod(key) {
				s.moveAll("AssignedPodFinished")
			}
			return
		}
		if s.cache.addOrUpdatePod(pod) {
			s.movePodsKeptOutByPods("AssignedPodAdd")
		}
		return
	}
	if !s.responsible(pod) {
		return
	}
	// Our own status writes come back as updates: only a new pod, or a
	// change of spec (tolerations, gates removed), is worth a new attempt.
	if old == nil || !s.responsible(old) || !equality.Semantic.DeepEqual(old.Spec, pod.Spec) {
		s.enqueue(key)
	}
}

func (s *Scheduler) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	key := podKey(pod)
	if s.cache.removePod(key) {
		s.moveAll("AssignedPodDelete")
	}
	s.mu.Lock()
	delete(s.unschedulable, key)
	delete(s.nominated, key)
	s.mu.Unlock()
}

// nodeSchedulingChanged: a change that may let a pod fit (heartbeats do not).
func nodeSchedulingChanged(old, cur *v1.Node) bool {
	if old.Spec.Unschedulable != cur.Spec.Unschedulable {
		return true
	}
	_, wasNotReady := readinessTaint(old)
	_, isNotReady := readinessTaint(cur)
	if wasNotReady != isNotReady {
		return true
	}
	return !equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints)
}

// expireAssumed drops the assumed pods the informer never confirmed.
func (s *Scheduler) expireAssumed(ctx context.Context) {
	t := s.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if n := s.cache.expire(); n > 0 {
				s.log.Warn("assumed pods expired", "pods", n)
				s.moveAll("AssumedPodExpired")
			}
		}
	}
}
