package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/scheduler"
)

// Version is the kubelet version nodes report.
const Version = "v1.37.2"

// Config is what a kubelet is built from.
type Config struct {
	Client   kubernetes.Interface
	NodeName string
	Provider Provider
	// Labels and Taints are applied to the Node at registration.
	Labels map[string]string
	Taints []corev1.Taint
	// LeaseDuration is how long the node's Lease is valid (default 40s);
	// HeartbeatInterval how often it is renewed (default a quarter of
	// LeaseDuration, as the kubelet's renew interval is).
	LeaseDuration     time.Duration
	HeartbeatInterval time.Duration
	// NodeStatusInterval is how often the Node's status is written even
	// when nothing changed (default 1m).
	NodeStatusInterval time.Duration
	// NodeStatusCheckInterval is how often the kubelet compares its view of
	// the node with the API's and writes at once when the conditions differ
	// — e.g. the node lifecycle controller marked the node Unknown while it
	// was cut off (default 10s).
	NodeStatusCheckInterval time.Duration
	// AdmitPods checks each pod about to start against the Node and the
	// pods the provider runs (resources, host ports, node affinity), as
	// Kubernetes' kubelet admits pods. Providers that queue pods
	// themselves (Slurm keeps a job too big for its partition Pending)
	// leave it off, as virtual-kubelet does.
	AdmitPods bool
	// Workers is how many pods are synced at once (default 4).
	Workers int
	Clock   clock.WithTicker
	Logger  *slog.Logger

	// ServerAddress is where the kubelet's HTTPS server (logs, exec,
	// attach, port-forward; server.go) listens, e.g. ":10250"; empty
	// disables it. Its port goes into the Node's daemonEndpoints, and a
	// specific IP into the Node's addresses as InternalIP when the
	// provider gives none.
	ServerAddress string
	// Listen opens the server's listener (default net.Listen); a node in
	// its own network namespace listens there.
	Listen func(network, address string) (net.Listener, error)
	// ServerCert is the server's certificate; nil means a self-signed one.
	ServerCert *tls.Certificate
	// ClientCA verifies the client certificates the server requires
	// (the cluster CA); it must be set with ServerAddress.
	ClientCA *x509.CertPool
}

func (c *Config) complete() error {
	switch {
	case c.Client == nil:
		return errors.New("kubelet: a client is required")
	case c.NodeName == "":
		return errors.New("kubelet: a node name is required")
	case c.Provider == nil:
		return errors.New("kubelet: a provider is required")
	case c.ServerAddress != "" && c.ClientCA == nil:
		return errors.New("kubelet: the server needs a client CA (it only serves verified clients)")
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 40 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = c.LeaseDuration / 4
	}
	if c.NodeStatusInterval == 0 {
		c.NodeStatusInterval = time.Minute
	}
	if c.NodeStatusCheckInterval == 0 {
		c.NodeStatusCheckInterval = 10 * time.Second
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Kubelet keeps one node and its pods in step with the API.
type Kubelet struct {
	cfg     Config
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger
	// serverPort and serverIP are where the server listens, set by Start
	// before the node registers.
	serverPort int32
	serverIP   string
	// lastStatusWrite is when the Node's status was last written (by the
	// registration or the status loop, never at once).
	lastStatusWrite time.Time
}

// New validates cfg and builds the kubelet.
func New(cfg Config) (*Kubelet, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	// Only this node's pods: the apiserver filters, so a kubelet's watch
	// costs nothing for the rest of the cluster.
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
		}))
	inf := factory.Core().V1().Pods()
	k := &Kubelet{
		cfg: cfg, client: cfg.Client, factory: factory,
		pods: inf.Lister(), synced: inf.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"}),
		log: cfg.Logger.With("node", cfg.NodeName),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	})
	return k, nil
}

// Start registers the node and runs heartbeats and pod workers until ctx ends.
func (k *Kubelet) Start(ctx context.Context) error {
	defer k.queue.ShutDown()
	serverErr, err := k.startServer(ctx)
	if err != nil {
		return err
	}
	if err := k.registerNode(ctx); err != nil {
		return err
	}
	k.cfg.Provider.NotifyPods(ctx, func(p *corev1.Pod) {
		k.queue.Add(p.Namespace + "/" + p.Name)
	})
	k.factory.Start(ctx.Done())
	defer k.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), k.synced) {
		return ctx.Err()
	}
	// Adopt what the provider already runs (a restarted kubelet) and
	// look at every pod bound here once.
	if running, err := k.cfg.Provider.GetPods(ctx); err == nil {
		for _, p := range running {
			k.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
	go wait.UntilWithContext(ctx, k.renewLease, k.cfg.HeartbeatInterval)
	go wait.UntilWithContext(ctx, k.updateNodeStatus, k.cfg.NodeStatusCheckInterval)
	for i := 0; i < k.cfg.Workers; i++ {
		go wait.UntilWithContext(ctx, k.work, time.Second)
	}
	select {
	case <-ctx.Done():
	case err := <-serverErr:
		return fmt.Errorf("kubelet server: %w", err)
	}
	return nil
}

func (k *Kubelet) work(ctx context.Context) {
	for {
		key, quit := k.queue.Get()
		if quit {
			return
		}
		if err := k.syncPod(ctx, key); err != nil {
			k.log.Warn("sync pod", "pod", key, "err", err)
			k.queue.AddRateLimited(key)
		} else {
			k.queue.Forget(key)
		}
		k.queue.Done(key)
	}
}

// syncPod moves one pod a step toward what the API says: start it, update
// it, stop it, delete its object once stopped, and report its status.
func (k *Kubelet) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	running, err := k.cfg.Provider.GetPod(ctx, ns, name)
	if err != nil {
		return fmt.Errorf("provider get: %w", err)
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		if running != nil {
			// Deleted behind our back (or while we were down): stop it now.
			return k.cfg.Provider.DeletePod(ctx, withGrace(running, 0))
		}
		return nil
	}
	if err != nil {
		return err
	}
	if running != nil && running.UID != pod.UID {
		if err := k.cfg.Provider.DeletePod(ctx, withGrace(running, 0)); err != nil {
			return err
		}
		running = nil
	}
	if pod.DeletionTimestamp != nil {
		if running != nil {
			if err := k.deletePod(ctx, pod); err != nil {
				return err
			}
		}
		// The containers are gone: the object can go.
		err := k.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	switch {
	case running == nil && !terminal(pod.Status.Phase):
		if k.cfg.AdmitPods {
			if reason, message, err := k.admitPod(ctx, pod); err != nil {
				return err
			} else if reason != "" {
				return k.rejectPod(ctx, pod, reason, message)
			}
		}
		if a, ok := k.cfg.Provider.(PodAdmitter); ok {
			if reason, message := a.AdmitPod(pod); reason != "" {
				return k.rejectPod(ctx, pod, reason, message)
			}
		}
		if err := k.cfg.Provider.CreatePod(ctx, pod); err != nil {
			return fmt.Errorf("create pod: %w", err)
		}
	case running != nil && podChanged(running, pod):
		if err := k.cfg.Provider.UpdatePod(ctx, pod); err != nil {
			return fmt.Errorf("update pod: %w", err)
		}
	}
	return k.syncStatus(ctx, pod)
}

// deletePod stops a deleted pod's containers and, where the provider
// says how they ended, writes that status with a terminal phase before
// the object goes (a finalizer may keep it for a controller to read).
func (k *Kubelet) deletePod(ctx context.Context, pod *corev1.Pod) error {
	d, ok := k.cfg.Provider.(FinalStatusDeleter)
	if !ok {
		return k.cfg.Provider.DeletePod(ctx, pod)
	}
	final, err := d.DeletePodWithStatus(ctx, pod)
	if err != nil || final == nil || terminal(pod.Status.Phase) {
		return err
	}
	status := final.DeepCopy()
	if !terminal(status.Phase) {
		status.Phase = corev1.PodFailed
	}
	updated := pod.DeepCopy()
	updated.Status = *k.mergeStatus(pod, status)
	_, err = k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or changed since: the delete below decides.
		return nil
	}
	return err
}

// podChanged says whether the provider must hear of the API's pod: its
// spec changed, or its labels or annotations, which downwardAPI volumes
// and fieldRef environment (a subPathExpr's) show, as Kubernetes' kubelet
// hands every pod update to its pod worker.
func podChanged(running, pod *corev1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(running.Spec, pod.Spec) ||
		!apiequality.Semantic.DeepEqual(running.Labels, pod.Labels) ||
		!apiequality.Semantic.DeepEqual(running.Annotations, pod.Annotations)
}

// admitPod checks a pod about to start against the node and the pods
// the provider runs there (host ports, resources, node affinity), as
// Kubernetes' kubelet admits pods: one bound by name never met the
// scheduler, and two bound at once may not both fit.
func (k *Kubelet) admitPod(ctx context.Context, pod *corev1.Pod) (reason, message string, err error) {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("admit pod: %w", err)
	}
	all, err := k.cfg.Provider.GetPods(ctx)
	if err != nil {
		return "", "", fmt.Errorf("admit pod: %w", err)
	}
	running := make([]*corev1.Pod, 0, len(all))
	for _, p := range all {
		if p.UID != pod.UID && !terminal(p.Status.Phase) {
			running = append(running, p)
		}
	}
	reason, message = scheduler.AdmitOnNode(pod, node, running)
	return reason, message, nil
}

// PodAdmitter is a provider that refuses some pods before running any of
// their containers, as the kubelet's admission handlers do (a sysctl the
// node does not allow): reason is empty when the pod is admitted.
type PodAdmitter interface {
	AdmitPod(pod *corev1.Pod) (reason, message string)
}

// rejectPod fails a pod the provider refused, in the kubelet's words:
// phase Failed, the refusal's reason, "Pod was rejected: <message>".
func (k *Kubelet) rejectPod(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	k.log.Info("pod rejected", "pod", klogRef(pod), "reason", reason, "message", message)
	updated := pod.DeepCopy()
	updated.Status.Phase = corev1.PodFailed
	updated.Status.Reason = reason
	updated.Status.Message = "Pod was rejected: " + message
	_, err := k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// kubeletOwnedCondition says whether the kubelet writes a pod condition
// of type t (and its observedGeneration); others, such as a readiness
// gate's or DisruptionTarget, are someone else's.
func kubeletOwnedCondition(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady,
		corev1.PodResizePending, corev1.PodResizeInProgress:
		return true
	}
	return false
}

func klogRef(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

func terminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

func withGrace(pod *corev1.Pod, seconds int64) *corev1.Pod {
	p := pod.DeepCopy()
	p.DeletionGracePeriodSeconds = &seconds
	return p
}

// syncStatus writes the provider's view of the pod into its status (and,
// from a PodAnnotator, its annotations).
func (k *Kubelet) syncStatus(ctx context.Context, pod *corev1.Pod) error {
	observed, err := k.cfg.Provider.GetPodStatus(ctx, pod.Namespace, pod.Name)
	if err != nil || observed == nil {
		return err
	}
	status := k.mergeStatus(pod, observed.DeepCopy())
	if !apiequality.Semantic.DeepEqual(&pod.Status, status) {
		updated := pod.DeepCopy()
		updated.Status = *status
		_, err = k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	// After the status: a merge patch has no resourceVersion to conflict on.
	return k.syncAnnotations(ctx, pod)
}

// mergeStatus completes the provider's view of a pod's status with what
// others wrote: the scheduler's condition and any condition the kubelet
// does not own (DisruptionTarget, a readiness gate's), the QoS class, and
// the generation the kubelet has seen. Ready waits for the readiness
// gates, as Kubernetes' kubelet reports it.
func (k *Kubelet) mergeStatus(pod *corev1.Pod, status *corev1.PodStatus) *corev1.PodStatus {
	for _, c := range pod.Status.Conditions {
		if (c.Type == corev1.PodScheduled || !kubeletOwnedCondition(c.Type)) && !hasCondition(status.Conditions, c.Type) {
			status.Conditions = append(status.Conditions, c)
		}
	}
	if status.QOSClass == "" {
		status.QOSClass = pod.Status.QOSClass
	}
	applyReadinessGates(pod, status, metav1.NewTime(time.Now().Truncate(time.Second)))
	// The generation of the spec this kubelet has handed to its provider
	// (syncPod did, just before), on the status and on the conditions the
	// kubelet owns, as Kubernetes' kubelet reports them.
	status.ObservedGeneration = pod.Generation
	for i := range status.Conditions {
		if kubeletOwnedCondition(status.Conditions[i].Type) {
			status.Conditions[i].ObservedGeneration = pod.Generation
		}
	}
	return status
}

// applyReadinessGates turns a Ready condition false while a readiness
// gate's condition is missing or not True, in Kubernetes' words.
func applyReadinessGates(pod *corev1.Pod, status *corev1.PodStatus, now metav1.Time) {
	var unready []string
	for _, g := range pod.Spec.ReadinessGates {
		i := slices.IndexFunc(status.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
		switch {
		case i < 0:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case status.Conditions[i].Status != corev1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, status.Conditions[i].Status))
		}
	}
	i := slices.IndexFunc(status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
	if len(unready) == 0 || i < 0 || status.Conditions[i].Status != corev1.ConditionTrue {
		return
	}
	ready := &status.Conditions[i]
	ready.Status = corev1.ConditionFalse
	ready.Reason = "ReadinessGatesNotReady"
	ready.Message = strings.Join(unready, ", ")
	ready.LastTransitionTime = now
	for _, old := range pod.Status.Conditions {
		if old.Type == corev1.PodReady && old.Status == corev1.ConditionFalse && !old.LastTransitionTime.IsZero() {
			ready.LastTransitionTime = old.LastTransitionTime
		}
	}
}

// syncAnnotations merges the provider's annotations for the pod into its
// metadata, with a merge patch of only the keys that differ. Providers
// that are no PodAnnotator leave the pod as it is.
func (k *Kubelet) syncAnnotations(ctx context.Context, pod *corev1.Pod) error {
	annotator, ok := k.cfg.Provider.(PodAnnotator)
	if !ok {
		return nil
	}
	changed := map[string]string{}
	for key, v := range annotator.PodAnnotations(pod.Namespace, pod.Name) {
		if have, ok := pod.Annotations[key]; !ok || have != v {
			changed[key] = v
		}
	}
	if len(changed) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": changed}})
	if err != nil {
		return err
	}
	_, err = k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("annotate pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func hasCondition(cs []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return true
		}
	}
	return false
}

// registerNode creates the Node, or brings an existing one up to date
// (a restarted kubelet keeps the node's podCIDR and taints set by others).
func (k *Kubelet) registerNode(ctx context.Context) error {
	desired := k.desiredNode(ctx)
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		created, err := k.client.CoreV1().Nodes().Create(ctx, desired, metav1.CreateOptions{})
		if err == nil {
			k.log.Info("node registered", "uid", created.UID)
			return k.statusWritten(ctx, created, desired.Status), nil
		}
		if !apierrors.IsAlreadyExists(err) {
			k.log.Warn("register node", "err", err)
			return false, nil
		}
		existing, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		existing = existing.DeepCopy()
		if existing.Labels == nil {
			existing.Labels = map[string]string{}
		}
		for key, v := range desired.Labels {
			existing.Labels[key] = v
		}
		for _, t := range desired.Spec.Taints {
			if !hasTaint(existing.Spec.Taints, t) {
				existing.Spec.Taints = append(existing.Spec.Taints, t)
			}
		}
		updated, err := k.client.CoreV1().Nodes().Update(ctx, existing, metav1.UpdateOptions{})
		if err != nil {
			return false, nil
		}
		return k.statusWritten(ctx, updated, desired.Status), nil
	})
}

func (k *Kubelet) statusWritten(ctx context.Context, node *corev1.Node, status corev1.NodeStatus) bool {
	if err := k.writeNodeStatus(ctx, node, status); err != nil {
		k.log.Warn("write node status", "err", err)
		return false
	}
	return true
}

func hasTaint(ts []corev1.Taint, t corev1.Taint) bool {
	for _, have := range ts {
		if have.Key == t.Key && have.Effect == t.Effect {
			return true
		}
	}
	return false
}

// desiredNode is the Node as this kubelet describes it.
func (k *Kubelet) desiredNode(ctx context.Context) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: map[string]string{
			corev1.LabelHostname: k.cfg.NodeName,
			corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH,
		}},
		Spec: corev1.NodeSpec{Taints: k.cfg.Taints},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: Version, OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
		}},
	}
	for key, v := range k.cfg.Labels {
		node.Labels[key] = v
	}
	if np, ok := k.cfg.Provider.(NodeProvider); ok {
		np.ConfigureNode(ctx, node)
	}
	k.describeServer(node)
	return node
}

// writeNodeStatus writes status with fresh heartbeat conditions.
func (k *Kubelet) writeNodeStatus(ctx context.Context, node *corev1.Node, status corev1.NodeStatus) error {
	node = node.DeepCopy()
	status = *status.DeepCopy()
	status.Capacity = withForeignExtendedResources(status.Capacity, node.Status.Capacity)
	status.Allocatable = withForeignExtendedResources(status.Allocatable, node.Status.Allocatable)
	node.Status = status
	node.Status.Conditions = k.conditions(node.Status.Conditions, node)
	if _, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return err
	}
	k.lastStatusWrite = k.cfg.Clock.Now()
	return nil
}

// withForeignExtendedResources keeps in a node's capacity (or
// allocatable) the extended resources someone else advertised by
// patching the node's status (example.com/dongle: 4), which this kubelet
// knows nothing of, as Kubernetes' kubelet keeps them across status
// updates.
func withForeignExtendedResources(own, stored corev1.ResourceList) corev1.ResourceList {
	for name, q := range stored {
		if _, ours := own[name]; ours || !strings.Contains(string(name), "/") || strings.HasPrefix(string(name), corev1.ResourceDefaultNamespacePrefix) {
			continue
		}
		if own == nil {
			own = corev1.ResourceList{}
		}
		own[name] = q
	}
	return own
}

// conditions merges the provider's conditions over the kubelet's defaults,
// keeping each condition's transition time while its status holds.
func (k *Kubelet) conditions(fromProvider []corev1.NodeCondition, previous *corev1.Node) []corev1.NodeCondition {
	now := metav1.NewTime(k.cfg.Clock.Now())
	defaults := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	var out []corev1.NodeCondition
	for _, d := range defaults {
		c := d
		for _, p := range fromProvider {
			if p.Type == d.Type {
				c = p
			}
		}
		c.LastHeartbeatTime = now
		c.LastTransitionTime = now
		for _, old := range previous.Status.Conditions {
			if old.Type == c.Type && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

func (k *Kubelet) updateNodeStatus(ctx context.Context) {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Someone deleted our Node: register again, as Kubernetes' kubelet does.
		if err := k.registerNode(ctx); err != nil && ctx.Err() == nil {
			k.log.Warn("re-register node", "err", err)
		}
		return
	}
	if err != nil {
		k.log.Warn("get node", "err", err)
		return
	}
	desired := k.desiredNode(ctx)
	if k.cfg.Clock.Since(k.lastStatusWrite) < k.cfg.NodeStatusInterval && sameConditions(node.Status.Conditions, k.conditions(desired.Status.Conditions, node)) {
		return
	}
	if err := k.writeNodeStatus(ctx, node, desired.Status); err != nil && ctx.Err() == nil {
		k.log.Warn("update node status", "err", err)
	}
}

// sameConditions says whether the API shows each condition with the
// status and reason the kubelet would write.
func sameConditions(have, want []corev1.NodeCondition) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Type == w.Type {
				found = h.Status == w.Status && h.Reason == w.Reason
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// renewLease is the heartbeat: the node lifecycle controller reads the
// Lease's renewTime to decide whether the node is alive.
func (k *Kubelet) renewLease(ctx context.Context) {
	leases := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(k.cfg.Clock.Now())
	lease, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.cfg.NodeName),
				LeaseDurationSeconds: ptr.To(int32(k.cfg.LeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}
		if node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{}); err == nil {
			lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			k.log.Warn("create lease", "err", err)
		}
		return
	}
	if err != nil {
		k.log.Warn("get lease", "err", err)
		return
	}
	lease = lease.DeepCopy()
	lease.Spec.RenewTime = &now
	lease.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
		k.log.Warn("renew lease", "err", err)
	}
}
