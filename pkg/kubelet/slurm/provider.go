package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
)

// Labels, taint and annotations of a Slurm virtual node and its pods.
const (
	LabelType     = "type"
	LabelProvider = "minik8s.io/provider"
	TaintKey      = "virtual-kubelet.io/provider"

	AnnotationJobID      = "slurm.minik8s.io/job-id"
	AnnotationJobState   = "slurm.minik8s.io/job-state"
	AnnotationSubmitTime = "slurm.minik8s.io/submit-time"
	AnnotationNodeList   = "slurm.minik8s.io/node-list"

	// ConditionJob is the pod condition that describes its Slurm job.
	ConditionJob corev1.PodConditionType = "slurm.minik8s.io/Job"
)

// EventRecorder records events on pods (client-go's record.EventRecorder
// is one).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Config describes a Slurm virtual node.
type Config struct {
	NodeName string
	// Runner runs the Slurm commands on the login host.
	Runner Runner
	// Location is the time zone slurmctld prints times in (nil: time.Local).
	Location *time.Location
	// Partition receives the jobs of pods that name none and gives the
	// node its capacity; empty means the cluster's default partition.
	Partition string
	// WorkRoot holds the pods' work directories; it must be shared by the
	// login host and the compute nodes.
	WorkRoot string
	// MaxPods is the node's pod capacity (default 1000).
	MaxPods int64
	// PollInterval is how often Start lists the jobs (default 5s).
	PollInterval time.Duration
	// LogPollInterval is how often a followed log is read again (default 1s).
	LogPollInterval time.Duration
	Clock           clock.WithTicker
	// Client reads the ConfigMaps and Secrets that pods' env and volumes
	// name, to stage them; nil refuses such pods.
	Client kubernetes.Interface
	// Recorder, if set, receives the pods' events (job submitted, image not run).
	Recorder EventRecorder
	Logger   *slog.Logger
}

// Provider runs the pods bound to a virtual node as Slurm batch jobs.
type Provider struct {
	cfg    Config
	client *Client
	log    *slog.Logger

	mu     sync.Mutex
	pods   map[string]*entry // by namespace/name
	gone   map[string]bool   // ids of the jobs of deleted pods, while Slurm lists them
	synced bool              // a Poll has listed the jobs
	notify func(*corev1.Pod)
	// part is the partition as last seen, for ConfigureNode while Slurm is unreachable.
	part *PartitionInfo
}

// entry is one pod and its job.
type entry struct {
	pod *corev1.Pod // the spec as the kubelet gave it; a stub for an adopted job until UpdatePod
	job JobInfo     // job.ID is empty while the pod could not be submitted (but sbatch may refuse a job Slurm records)
	// configErr is why the pod could not become a script.
	configErr error
	// retry: configErr is a ConfigMap or Secret that is missing, which
	// may yet be created: each Poll tries the pod again.
	retry bool
	// submitErr is sbatch's refusal of the job (SubmitRefused): the pod failed.
	submitErr string
	// lost: Slurm stopped listing the job before it ended.
	lost bool
}

var (
	_ kubelet.Provider        = (*Provider)(nil)
	_ kubelet.NodeProvider    = (*Provider)(nil)
	_ kubelet.ContainerLogger = (*Provider)(nil)
)

// New builds a provider; it talks to Slurm only when used.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errors.New("slurm provider: node name required")
	case cfg.Runner == nil:
		return nil, errors.New("slurm provider: runner required")
	case cfg.WorkRoot == "" || !strings.HasPrefix(cfg.WorkRoot, "/"):
		return nil, fmt.Errorf("slurm provider: work root %q: want an absolute path", cfg.WorkRoot)
	case strings.ContainsAny(cfg.WorkRoot, " \t\n'\"%"):
		return nil, fmt.Errorf("slurm provider: work root %q: no spaces, quotes or %% allowed", cfg.WorkRoot)
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = 1000
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.LogPollInterval == 0 {
		cfg.LogPollInterval = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Provider{
		cfg: cfg, client: NewClient(cfg.Runner, cfg.Location),
		log:  cfg.Logger.With("provider", "slurm", "node", cfg.NodeName),
		pods: map[string]*entry{}, gone: map[string]bool{},
	}, nil
}

// Client is the provider's Slurm client.
func (p *Provider) Client() *Client { return p.client }

// Start polls Slurm for the jobs' states until ctx ends.
func (p *Provider) Start(ctx context.Context) error {
	t := p.cfg.Clock.NewTicker(p.cfg.PollInterval)
	defer t.Stop()
	for {
		if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("poll slurm jobs", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

func key(ns, name string) string { return ns + "/" + name }

func (p *Provider) scriptOptions(ctx context.Context, namespace string) ScriptOptions {
	return ScriptOptions{WorkRoot: p.cfg.WorkRoot, Partition: p.cfg.Partition, NodeName: p.cfg.NodeName,
		Objects: podenv.NewObjects(ctx, p.cfg.Client, namespace)}
}

func (p *Provider) event(pod *corev1.Pod, eventType, reason, format string, args ...interface{}) {
	if p.cfg.Recorder != nil {
		p.cfg.Recorder.Eventf(pod, eventType, reason, format, args...)
	}
}

// CreatePod submits the pod's job, unless Slurm already has a job for
// the pod's UID (a restarted provider): then it adopts that one.
func (p *Provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	k := key(pod.Namespace, pod.Name)
	var lastErr string
	p.mu.Lock()
	if e, ok := p.pods[k]; ok && e.pod.UID == pod.UID {
		if !e.retry {
			p.mu.Unlock()
			return nil
		}
		lastErr = e.configErr.Error()
	}
	p.mu.Unlock()

	e := &entry{pod: pod.DeepCopy()}
	job, err := Script(pod, p.scriptOptions(ctx, pod.Namespace))
	if err != nil {
		e.configErr, e.retry = err, podenv.IsNotFound(err)
		if err.Error() != lastErr {
			p.event(pod, corev1.EventTypeWarning, "FailedToSubmit", "%v", err)
		}
		p.store(k, e)
		return nil
	}
	existing, err := p.client.JobsByPrefix(ctx, job.Name)
	if err != nil {
		return fmt.Errorf("slurm: look for the job of pod %s: %w", k, err)
	}
	if j, ok := latest(existing, job.Name, job.Comment); ok {
		e.job = j
		p.log.Info("adopted slurm job", "pod", k, "job", j.ID)
		p.store(k, e)
		return nil
	}
	for _, img := range job.Images {
		p.event(pod, corev1.EventTypeNormal, "ImageNotRun", "image %s not run: the command runs on the Slurm node", img)
	}
	id, err := p.client.Submit(ctx, job)
	if err != nil {
		p.event(pod, corev1.EventTypeWarning, "FailedToSubmit", "%v", err)
		if msg, refused := SubmitRefused(err); refused {
			// Submitting it again would fail again: the pod failed.
			e.submitErr = msg
			// Slurm 22.05 may still record the refused job, FAILED
			// (Reason=BadConstraints): keep its id, so that once the pod
			// is deleted a Poll does not adopt it as a pod again.
			if jobs, err := p.client.JobsByPrefix(ctx, job.Name); err == nil {
				if j, ok := latest(jobs, job.Name, job.Comment); ok {
					e.job = j
				}
			}
			p.log.Warn("sbatch refused the job", "pod", k, "err", msg)
			p.store(k, e)
			return nil
		}
		return fmt.Errorf("slurm: submit pod %s: %w", k, err)
	}
	e.job = JobInfo{ID: id, Name: job.Name, Comment: job.Comment, WorkDir: job.WorkDir, State: "PENDING", Reason: "Submitted"}
	if j, err := p.client.Job(ctx, id); err == nil {
		e.job = j
	}
	p.event(pod, corev1.EventTypeNormal, "Submitted", "Slurm job %s submitted to partition %s", id, orDefault(e.job.Partition, p.cfg.Partition))
	p.log.Info("submitted slurm job", "pod", k, "job", id)
	p.store(k, e)
	return nil
}

func orDefault(s, def string) string {
	switch {
	case s != "":
		return s
	case def != "":
		return def
	}
	return "(default)"
}

// latest is the newest job with this name and comment.
func latest(jobs []JobInfo, name, comment string) (JobInfo, bool) {
	var best JobInfo
	found := false
	for _, j := range jobs {
		if j.Name == name && j.Comment == comment && (!found || jobIDLess(best.ID, j.ID)) {
			best, found = j, true
		}
	}
	return best, found
}

func jobIDLess(a, b string) bool {
	x, _ := strconv.ParseUint(a, 10, 64)
	y, _ := strconv.ParseUint(b, 10, 64)
	return x < y
}

// store records e and reports the pod.
func (p *Provider) store(k string, e *entry) {
	p.mu.Lock()
	p.pods[k] = e
	pod := p.podLocked(e)
	notify := p.notify
	p.mu.Unlock()
	if notify != nil {
		notify(pod)
	}
}

// UpdatePod takes the spec of a pod whose job was adopted; a submitted
// job cannot change.
func (p *Provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.pods[key(pod.Namespace, pod.Name)]; ok && e.pod.UID == pod.UID {
		e.pod = pod.DeepCopy()
	}
	return nil
}

// DeletePod cancels the pod's job and forgets it.
func (p *Provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	e, ok := p.pods[k]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	if e.job.ID != "" && !e.job.Terminal() && !e.lost {
		if err := p.client.Cancel(ctx, e.job.ID); err != nil && !IsNotFound(err) {
			return fmt.Errorf("slurm: cancel job %s of pod %s: %w", e.job.ID, k, err)
		}
		p.log.Info("cancelled slurm job", "pod", k, "job", e.job.ID)
	}
	p.mu.Lock()
	if p.pods[k] == e {
		delete(p.pods, k)
	}
	if e.job.ID != "" {
		p.gone[e.job.ID] = true
	}
	p.mu.Unlock()
	return nil
}

func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[key(namespace, name)]
	if !ok {
		return nil, nil
	}
	return p.podLocked(e), nil
}

func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if pod == nil || err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods lists the pods of the jobs the provider submitted, including,
// on its first call, those a previous run of the provider submitted.
func (p *Provider) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	synced := p.synced
	p.mu.Unlock()
	if !synced {
		if err := p.Poll(ctx); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, 0, len(p.pods))
	for k := range p.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*corev1.Pod, 0, len(keys))
	for _, k := range keys {
		out = append(out, p.podLocked(p.pods[k]))
	}
	return out, nil
}

func (p *Provider) NotifyPods(_ context.Context, notify func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = notify
}

// JobInfo returns what the provider last saw of the pod's job.
func (p *Provider) JobInfo(namespace, name string) (JobInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[key(namespace, name)]
	if !ok || e.job.ID == "" {
		return JobInfo{}, false
	}
	return e.job, true
}

// Annotations are the job's id, state, submit time and node list as pod
// annotations (slurm.minik8s.io/...).
func (j JobInfo) Annotations() map[string]string {
	a := map[string]string{AnnotationJobID: j.ID, AnnotationJobState: j.State}
	if j.Partition != "" {
		a[AnnotationPartition] = j.Partition
	}
	if !j.Submit.IsZero() {
		a[AnnotationSubmitTime] = j.Submit.UTC().Format(time.RFC3339)
	}
	if j.NodeList != "" {
		a[AnnotationNodeList] = j.NodeList
	}
	return a
}

// Poll lists the jobs, updates the pods' states, adopts the jobs a
// previous run submitted, and reports each pod whose status changed.
func (p *Provider) Poll(ctx context.Context) error {
	jobs, err := p.client.Jobs(ctx)
	if err != nil {
		return err
	}
	byID := map[string]JobInfo{}
	for _, j := range jobs {
		if strings.HasPrefix(j.Comment, CommentPrefix) {
			byID[j.ID] = j
		}
	}
	var changed []*corev1.Pod
	p.mu.Lock()
	known := map[string]bool{}
	for _, e := range p.pods {
		if e.job.ID == "" {
			continue
		}
		known[e.job.ID] = true
		before := p.podLocked(e)
		if j, ok := byID[e.job.ID]; ok {
			e.job = j
		} else if !e.job.Terminal() {
			e.lost = true
		}
		if after := p.podLocked(e); !apiequality.Semantic.DeepEqual(before.Status, after.Status) {
			changed = append(changed, after)
		}
	}
	// Adopt, newest first, the jobs of pods this run has not seen.
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return jobIDLess(ids[b], ids[a]) })
	for _, id := range ids {
		j := byID[id]
		if known[id] || p.gone[id] {
			continue
		}
		ns, name, ok := PodKey(j.Name)
		if !ok {
			continue
		}
		k := key(ns, name)
		if _, taken := p.pods[k]; taken {
			continue
		}
		stub := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(strings.TrimPrefix(j.Comment, CommentPrefix)),
		}}
		e := &entry{pod: stub, job: j}
		p.pods[k] = e
		p.log.Info("adopted slurm job", "pod", k, "job", id)
		changed = append(changed, p.podLocked(e))
	}
	for id := range p.gone {
		if _, listed := byID[id]; !listed {
			delete(p.gone, id)
		}
	}
	p.synced = true
	notify := p.notify
	var retry []*corev1.Pod
	for _, e := range p.pods {
		if e.retry {
			retry = append(retry, e.pod)
		}
	}
	p.mu.Unlock()
	if notify != nil {
		for _, pod := range changed {
			notify(pod)
		}
	}
	// Pods waiting for a ConfigMap or Secret: it may exist now.
	var errs []error
	for _, pod := range retry {
		errs = append(errs, p.CreatePod(ctx, pod))
	}
	return errors.Join(errs...)
}

// ConfigureNode describes the virtual node: capacity from the partition,
// Ready while slurmctld answers and the partition has a node up.
func (p *Provider) ConfigureNode(ctx context.Context, node *corev1.Node) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[LabelType] = "virtual-kubelet"
	node.Labels[LabelProvider] = "slurm"
	taint := corev1.Taint{Key: TaintKey, Value: "slurm", Effect: corev1.TaintEffectNoSchedule}
	hasTaint := false
	for _, t := range node.Spec.Taints {
		hasTaint = hasTaint || (t.Key == taint.Key && t.Effect == taint.Effect)
	}
	if !hasTaint {
		node.Spec.Taints = append(node.Spec.Taints, taint)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: p.cfg.NodeName}}
	node.Status.NodeInfo.ContainerRuntimeVersion = "slurm://" + kubelet.Version
	node.Status.NodeInfo.OSImage = "Slurm partition " + orDefault(p.cfg.Partition, "")

	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "SlurmReady"}
	part, err := p.partition(ctx)
	switch {
	case err != nil:
		ready.Status, ready.Reason, ready.Message = corev1.ConditionFalse, "SlurmUnreachable", err.Error()
	case !part.Up:
		ready.Status, ready.Reason = corev1.ConditionFalse, "SlurmPartitionDown"
		ready.Message = fmt.Sprintf("partition %s is %s with no node up among %d", part.Name, part.State, len(part.Nodes))
	default:
		up := 0
		for _, n := range part.Nodes {
			if n.NodeUp() {
				up++
			}
		}
		ready.Message = fmt.Sprintf("slurmctld answers; partition %s has %d of %d nodes up", part.Name, up, len(part.Nodes))
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0"), ResourceGPU: resource.MustParse("0"),
	}
	p.mu.Lock()
	if p.part != nil {
		capacity = p.part.Capacity.DeepCopy()
		node.Status.NodeInfo.OSImage = "Slurm partition " + p.part.Name
	}
	p.mu.Unlock()
	capacity[corev1.ResourcePods] = *resource.NewQuantity(p.cfg.MaxPods, resource.DecimalSI)
	node.Status.Capacity = capacity
	node.Status.Allocatable = capacity.DeepCopy()
	node.Status.Conditions = append(node.Status.Conditions, ready)
}

// partition pings slurmctld and reads the partition, remembering it.
func (p *Provider) partition(ctx context.Context) (PartitionInfo, error) {
	if err := p.client.Ping(ctx); err != nil {
		return PartitionInfo{}, err
	}
	part, err := p.client.Partition(ctx, p.cfg.Partition)
	if err != nil {
		return PartitionInfo{}, err
	}
	p.mu.Lock()
	p.part = &part
	p.mu.Unlock()
	return part, nil
}

// podLocked is e's pod with the status its job gives it.
func (p *Provider) podLocked(e *entry) *corev1.Pod {
	pod := e.pod.DeepCopy()
	pod.Status = podStatus(pod, e)
	return pod
}

// phase is the pod phase of a Slurm job state.
func phase(state string) corev1.PodPhase {
	switch state {
	case "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING":
		return corev1.PodRunning
	case "COMPLETED":
		return corev1.PodSucceeded
	case "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "CANCELLED", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
		"SPECIAL_EXIT", "REVOKED":
		return corev1.PodFailed
	}
	return corev1.PodPending // PENDING, CONFIGURING, REQUEUED, REQUEUE_HOLD, ...
}

// podStatus maps a job onto its pod's status. It depends only on the
// job, so it stays the same between polls while the job does.
func podStatus(pod *corev1.Pod, e *entry) corev1.PodStatus {
	j := e.job
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string, at time.Time) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)}
	}
	var st corev1.PodStatus
	if e.configErr != nil {
		st.Phase = corev1.PodPending
		st.Message = e.configErr.Error()
		st.Conditions = []corev1.PodCondition{cond(corev1.PodReady, false, "CreateContainerConfigError", st.Message, time.Time{})}
		st.ContainerStatuses = containers(pod, func(corev1.Container, bool) corev1.ContainerStatus {
			return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "CreateContainerConfigError", Message: st.Message}}}
		}, &st)
		return st
	}
	if e.submitErr != "" {
		st.Phase, st.Reason = corev1.PodFailed, "SlurmSubmitFailed"
		st.Message = "sbatch refused the job: " + e.submitErr
		st.Conditions = []corev1.PodCondition{cond(corev1.PodReady, false, "SlurmSubmitFailed", st.Message, time.Time{})}
		st.ContainerStatuses = containers(pod, func(corev1.Container, bool) corev1.ContainerStatus {
			// Ended without starting, as the kubelet reports the containers of a pod it rejects.
			return corev1.ContainerStatus{Started: new(false), State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "SlurmSubmitFailed", Message: st.Message}}}
		}, &st)
		return st
	}

	ph := phase(j.State)
	reason := j.Reason
	if reason == "" || reason == "None" {
		reason = j.State
	}
	exit := int32(j.ExitCode)
	if j.Signal != 0 {
		exit = 128 + int32(j.Signal)
	}
	desc := fmt.Sprintf("Slurm job %s, partition %s, state %s", j.ID, orDefault(j.Partition, ""), j.State)
	if j.Reason != "" && j.Reason != "None" {
		desc += ", reason " + j.Reason
	}
	if !j.Submit.IsZero() {
		desc += ", submitted " + j.Submit.UTC().Format(time.RFC3339)
	}
	if j.NodeList != "" {
		desc += ", nodes " + j.NodeList
	}
	if e.lost {
		ph = corev1.PodFailed
		desc += "; slurmctld no longer lists it"
	}
	if ph == corev1.PodFailed || ph == corev1.PodSucceeded {
		desc += fmt.Sprintf(", exit code %d:%d", j.ExitCode, j.Signal)
	}
	st.Phase = ph
	st.Message = desc
	if !j.Submit.IsZero() {
		t := metav1.NewTime(j.Submit)
		st.StartTime = &t
	}
	started, ended := j.Start, j.End
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, true, "", "", j.Submit),
		cond(ConditionJob, true, j.State, desc, j.Submit),
	}
	termReason := j.State
	if e.lost {
		termReason, exit = "ContainerStatusUnknown", 137
	}
	switch ph {
	case corev1.PodPending:
		msg := fmt.Sprintf("Slurm job %s pending in partition %s: %s", j.ID, orDefault(j.Partition, ""), reason)
		st.Conditions = append(st.Conditions,
			cond(corev1.PodInitialized, false, reason, msg, j.Submit),
			cond(corev1.ContainersReady, false, reason, msg, j.Submit),
			cond(corev1.PodReady, false, reason, msg, j.Submit))
		st.ContainerStatuses = containers(pod, func(corev1.Container, bool) corev1.ContainerStatus {
			return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
		}, &st)
	case corev1.PodRunning:
		st.Conditions = append(st.Conditions,
			cond(corev1.PodInitialized, true, "", "", started),
			cond(corev1.ContainersReady, true, "", "", started),
			cond(corev1.PodReady, true, "", "", started))
		st.ContainerStatuses = containers(pod, func(_ corev1.Container, init bool) corev1.ContainerStatus {
			if init {
				// The script runs init containers first; the provider
				// does not see them end, so it says they have.
				return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "Completed", StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(started)}}}
			}
			return corev1.ContainerStatus{Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}
		}, &st)
	default:
		if ended.IsZero() {
			ended = started
		}
		st.Reason = termReason
		if ph == corev1.PodSucceeded {
			termReason, exit = "Completed", 0
			st.Reason = ""
		}
		st.Conditions = append(st.Conditions,
			cond(corev1.PodInitialized, true, "", "", started),
			cond(corev1.ContainersReady, false, "PodCompleted", "", ended),
			cond(corev1.PodReady, false, "PodCompleted", "", ended))
		st.ContainerStatuses = containers(pod, func(corev1.Container, bool) corev1.ContainerStatus {
			return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exit, Reason: termReason, Message: desc,
				StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(ended)}}}
		}, &st)
	}
	return st
}

// containers builds the init and regular container statuses with
// status, filling in names, images and ids (and Started, unless status
// set it); it sets st.InitContainerStatuses and returns the regular ones.
func containers(pod *corev1.Pod, status func(c corev1.Container, init bool) corev1.ContainerStatus, st *corev1.PodStatus) []corev1.ContainerStatus {
	fill := func(c corev1.Container, init bool) corev1.ContainerStatus {
		cs := status(c, init)
		cs.Name, cs.Image = c.Name, c.Image
		if cs.Started == nil {
			started := cs.State.Running != nil || cs.State.Terminated != nil
			cs.Started = &started
		}
		if *cs.Started {
			cs.ContainerID = "slurm://" + string(pod.UID) + "/" + c.Name
		}
		return cs
	}
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, fill(c, true))
	}
	var out []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		out = append(out, fill(c, false))
	}
	return out
}
