package local

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// waitingState is why a container is not running: the reason and
// message its status shows while it waits.
type waitingState struct {
	reason, message string
}

// podWorker runs one pod: its goroutine reconciles the pod every sync
// period and whenever it is kicked.
type podWorker struct {
	p   *Provider
	key string
	uid types.UID
	log *slog.Logger

	mu sync.Mutex
	// pod is the pod to run, replaced (never modified) by setPod.
	pod *corev1.Pod
	// partial is true for a pod rebuilt from the runtime whose spec the
	// kubelet has not handed over yet: it is watched, not acted upon.
	partial bool
	gen     uint64 // bumped by every setPod
	status  corev1.PodStatus
	probes  map[string]*containerProbes // by container ID
	cancel  context.CancelFunc
	done    chan struct{}
	kick    chan struct{}
	probeWG sync.WaitGroup

	// The rest belongs to the worker's goroutine (or to tests calling
	// sync directly).
	obs        podObservation
	sandboxID  string
	podIP      string
	podReady   bool   // sandbox and network are up
	podErr     string // why they are not
	volumeErr  string // why the volumes are not ready
	startTime  metav1.Time
	volumesAt  time.Time
	volumesGen uint64
	volumesOK  bool
	etcFor     string // the pod IP the hosts file was written for
	terminal   bool
	netDown    bool // a terminal pod's network is torn down
	deadline   bool // activeDeadlineSeconds passed
	waiting    map[string]waitingState
	// restartBase is the next attempt number of containers whose earlier
	// attempts went with a replaced sandbox.
	restartBase map[string]int
	// killed are containers stopped to be restarted (failed liveness or
	// startup probe, changed image): they restart even with exit code 0.
	killed map[string]bool
	// startErrs are containers created but failed to start.
	startErrs map[string]string
	// termMsgs are the termination messages of exited containers.
	termMsgs map[string]string
	// applied are the resources containers were resized to in place, by
	// container ID, until a relist shows them in the labels; resizeErr
	// is why the last in-place resize of a container failed, by name.
	applied   map[string]corev1.ResourceRequirements
	resizeErr map[string]string
	// podCgroup is what the pod's cgroup was last set to (nil: unknown).
	podCgroup *runtime.Resources
	// backOffSeen avoids one BackOff event per sync for one exit.
	backOffSeen map[string]bool
}

func newPodWorker(p *Provider, pod *corev1.Pod, partial bool) *podWorker {
	w := &podWorker{
		p:           p,
		key:         podKey(pod.Namespace, pod.Name),
		uid:         pod.UID,
		log:         p.log.With("pod", podKey(pod.Namespace, pod.Name)),
		pod:         pod.DeepCopy(),
		partial:     partial,
		gen:         1,
		probes:      map[string]*containerProbes{},
		kick:        make(chan struct{}, 1),
		waiting:     map[string]waitingState{},
		restartBase: map[string]int{},
		killed:      map[string]bool{},
		startErrs:   map[string]string{},
		termMsgs:    map[string]string{},
		backOffSeen: map[string]bool{},
		applied:     map[string]corev1.ResourceRequirements{},
		resizeErr:   map[string]string{},
	}
	w.adoptAPIStatus(pod)
	w.status = w.computeStatus()
	return w
}

// adoptAPIStatus takes what only the API remembers: when the pod
// started, its address and whether it already finished.
func (w *podWorker) adoptAPIStatus(pod *corev1.Pod) {
	switch {
	case pod.Status.StartTime != nil:
		w.startTime = *pod.Status.StartTime
	case w.startTime.IsZero():
		w.startTime = metav1.NewTime(w.p.clock.Now())
	}
	if w.podIP == "" {
		w.podIP = pod.Status.PodIP
	}
	if ph := pod.Status.Phase; ph == corev1.PodSucceeded || ph == corev1.PodFailed {
		w.terminal = true
		if pod.Status.Reason == reasonDeadlineExceeded {
			w.deadline = true
		}
	}
}

// start runs the worker's goroutine until stop or ctx ends.
func (w *podWorker) start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	w.cancel, w.done = cancel, make(chan struct{})
	done := w.done
	w.mu.Unlock()
	go func() {
		defer close(done)
		t := w.p.clock.NewTicker(w.p.cfg.SyncPeriod)
		defer t.Stop()
		for {
			w.syncAndReport(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C():
			case <-w.kick:
			}
		}
	}()
}

// stop ends the worker and its probes and waits for them.
func (w *podWorker) stop() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	w.stopProbes("")
	w.probeWG.Wait()
}

// wake asks for a sync soon.
func (w *podWorker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// setPod hands the worker the pod's current spec.
func (w *podWorker) setPod(pod *corev1.Pod) {
	w.mu.Lock()
	if w.partial || !apiequality.Semantic.DeepEqual(w.pod.Spec, pod.Spec) ||
		!apiequality.Semantic.DeepEqual(w.pod.ObjectMeta, pod.ObjectMeta) {
		w.gen++
	}
	w.pod = pod.DeepCopy()
	w.partial = false
	w.mu.Unlock()
	w.wake()
}

// current returns the pod to run and whether it is only partly known.
func (w *podWorker) current() (*corev1.Pod, bool, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.partial, w.gen
}

// snapshot is the pod with its last computed status.
func (w *podWorker) snapshot() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	pod := w.pod.DeepCopy()
	pod.Status = *w.status.DeepCopy()
	withResizeInProgress(pod, metav1.NewTime(w.p.clock.Now()))
	return pod
}

// syncAndReport reconciles once, recomputes the status and tells the
// kubelet when it changed.
func (w *podWorker) syncAndReport(ctx context.Context) {
	if err := w.sync(ctx); err != nil && ctx.Err() == nil {
		w.log.Warn("sync pod", "err", err)
	}
	if ctx.Err() != nil {
		return
	}
	pod, _, _ := w.current()
	w.readTerminationMessages(pod)
	if pod := w.updateStatus(); pod != nil {
		w.p.notifyPod(pod)
	}
}

// updateStatus recomputes the status from the last observation; it
// returns the pod when the status changed.
func (w *podWorker) updateStatus() *corev1.Pod {
	status := w.computeStatus()
	if ph := status.Phase; (ph == corev1.PodSucceeded || ph == corev1.PodFailed) && !w.terminal {
		w.terminal = true
		w.wake() // stop what is left
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if apiequality.Semantic.DeepEqual(w.status, status) {
		return nil
	}
	w.status = status
	pod := w.pod.DeepCopy()
	pod.Status = *status.DeepCopy()
	return pod
}

// setWaiting records why a container waits.
func (w *podWorker) setWaiting(name, reason, message string) {
	w.waiting[name] = waitingState{reason: reason, message: message}
}

func (w *podWorker) clearWaiting(name string) { delete(w.waiting, name) }

// finalStatus is the status of a stopped worker's pod once its
// containers were stopped for its deletion: what obs says they exited
// with, and a terminal phase, as Kubernetes' kubelet reports a deleted
// pod before the object goes.
func (w *podWorker) finalStatus(obs podObservation) *corev1.PodStatus {
	w.obs = obs
	w.terminal = true
	s := w.computeStatus()
	return &s
}
