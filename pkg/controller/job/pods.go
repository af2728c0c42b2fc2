package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// Labels the pre-1.27 Job controller put on Pods; still set, as
// Kubernetes does.
const (
	legacyControllerUIDLabel = "controller-uid"
	legacyJobNameLabel       = "job-name"
	completionIndexEnv       = "JOB_COMPLETION_INDEX"
	// maxGenerateName is the longest generateName that still leaves room
	// for the apiserver's random suffix.
	maxGenerateName = 58
	// maxPodChangesPerSync bounds the creations and deletions of one sync
	// so a big Job does not starve the others.
	maxPodChangesPerSync = 500
)

var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

func manualSelector(job *batchv1.Job) bool {
	return job.Spec.ManualSelector != nil && *job.Spec.ManualSelector
}

// selectorOf is the Job's Pod selector. A Job stored without one (an
// apiserver that does not generate selectors) selects its Pods by its
// UID, the label every Pod of a Job without a manual selector carries.
func selectorOf(job *batchv1.Job) (labels.Selector, error) {
	sel := job.Spec.Selector
	if sel == nil {
		if manualSelector(job) {
			return nil, fmt.Errorf("manualSelector is set but spec.selector is empty")
		}
		sel = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(job.UID)}}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("selector: %w", err)
	}
	if s.Empty() {
		return nil, fmt.Errorf("empty selector")
	}
	return s, nil
}

// newPod is the Pod the Job runs for index (noIndex for NonIndexed Jobs).
func newPod(job *batchv1.Job, index int) *corev1.Pod {
	tpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: tpl.ObjectMeta,
		Spec:       tpl.Spec,
	}
	pod.Name, pod.Namespace, pod.ResourceVersion, pod.UID = "", job.Namespace, "", ""
	pod.GenerateName = generateName(job.Name, index)
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)}
	if !slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer) {
		pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if !manualSelector(job) {
		pod.Labels[batchv1.ControllerUidLabel] = string(job.UID)
		pod.Labels[legacyControllerUIDLabel] = string(job.UID)
		pod.Labels[batchv1.JobNameLabel] = job.Name
		pod.Labels[legacyJobNameLabel] = job.Name
	}
	if index != noIndex {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		ix := strconv.Itoa(index)
		pod.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
		pod.Labels[batchv1.JobCompletionIndexAnnotation] = ix
		pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
		addIndexEnv(pod.Spec.InitContainers)
		addIndexEnv(pod.Spec.Containers)
	}
	return pod
}

// addIndexEnv gives every container JOB_COMPLETION_INDEX from the
// index annotation (through the downward API), unless it sets it itself.
func addIndexEnv(cs []corev1.Container) {
	for i := range cs {
		c := &cs[i]
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == completionIndexEnv }) {
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)},
		}})
	}
}

func generateName(job string, index int) string {
	suffix := "-"
	if index != noIndex {
		suffix = "-" + strconv.Itoa(index) + "-"
	}
	if len(job)+len(suffix) > maxGenerateName {
		job = job[:maxGenerateName-len(suffix)]
	}
	return job + suffix
}

// podsForJob lists the Pods the Job owns, adopting orphans its selector
// matches and releasing owned Pods it no longer matches, as Kubernetes'
// controllers do.
func (c *Controller) podsForJob(ctx context.Context, job *batchv1.Job, sel labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.pods.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var owned []*corev1.Pod
	var adoptable *bool
	for _, p := range all {
		ref := metav1.GetControllerOf(p)
		matches := sel.Matches(labels.Set(p.Labels))
		switch {
		case ref != nil && ref.UID == job.UID:
			if matches || job.DeletionTimestamp != nil {
				owned = append(owned, p)
				continue
			}
			if err := c.release(ctx, job, p); err != nil {
				return nil, err
			}
		case ref == nil && matches && p.DeletionTimestamp == nil && job.DeletionTimestamp == nil:
			if adoptable == nil {
				ok, err := c.canAdopt(ctx, job)
				if err != nil {
					return nil, err
				}
				adoptable = &ok
			}
			if !*adoptable {
				continue
			}
			adopted, err := c.adopt(ctx, job, p)
			if err != nil {
				return nil, err
			}
			if adopted != nil {
				owned = append(owned, adopted)
			}
		}
	}
	return owned, nil
}

// canAdopt checks with the apiserver, not the cache, that the Job is
// still the one we know and not being deleted.
func (c *Controller) canAdopt(ctx context.Context, job *batchv1.Job) (bool, error) {
	fresh, err := c.Client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get job for adoption: %w", err)
	}
	return fresh.UID == job.UID && fresh.DeletionTimestamp == nil, nil
}

func (c *Controller) adopt(ctx context.Context, job *batchv1.Job, p *corev1.Pod) (*corev1.Pod, error) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		"finalizers":      []string{batchv1.JobTrackingFinalizer},
		"uid":             p.UID,
	}})
	adopted, err := c.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adopt pod %s: %w", p.Name, err)
	}
	c.Log.Info("adopted pod", "job", job.Namespace+"/"+job.Name, "pod", p.Name)
	return adopted, nil
}

func (c *Controller) release(ctx context.Context, job *batchv1.Job, p *corev1.Pod) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences":                     []map[string]any{{"$patch": "delete", "uid": job.UID}},
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
		"uid":                                 p.UID,
	}})
	_, err := c.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release pod %s: %w", p.Name, err)
	}
	return nil
}

// createPods creates a Pod for each index (or n NonIndexed ones) in
// batches of 1, 2, 4...: when creation fails (a quota, say) it stops
// early instead of failing n times. It returns how many it created.
//
// replaced holds, by index, the failed Pod that a new Pod of a Job with
// backoffLimitPerIndex replaces: the new Pod carries the index's failure
// counts on in its annotations.
func (c *Controller) createPods(ctx context.Context, job *batchv1.Job, key string, n int, indexes []int, replaced map[int]*corev1.Pod) (int32, error) {
	c.expect.ExpectCreations(key, n)
	var created atomic.Int32
	var firstErr error
	var mu sync.Mutex
	next := 0
	for batch := 1; next < n; batch = min(2*batch, n-next) {
		batch = min(batch, n-next)
		var wg sync.WaitGroup
		failures := 0
		for i := range batch {
			ix := noIndex
			if indexes != nil {
				ix = indexes[next+i]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				pod := newPod(job, ix)
				if perIndex(job) && ix != noIndex {
					counted, ignored := replacementFailures(job, replaced[ix])
					pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
					if ignored > 0 {
						pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
					}
				}
				err := c.createPod(ctx, job, pod)
				if err == nil {
					created.Add(1)
					return
				}
				c.expect.CreationObserved(key)
				mu.Lock()
				defer mu.Unlock()
				failures++
				if firstErr == nil {
					firstErr = err
				}
			}()
		}
		wg.Wait()
		next += batch
		if failures > 0 {
			// The rest is not attempted; nor expected.
			c.expect.CreationsObserved(key, n-next)
			break
		}
	}
	return created.Load(), firstErr
}

func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	pod, err := c.Client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return err
		}
		c.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return fmt.Errorf("create pod: %w", err)
	}
	c.Recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", pod.Name)
	return nil
}

// deletePods deletes pods in parallel. With dropFinalizer the tracking
// finalizer goes first, so the Pod is not counted as a failure (a
// suspended or scaled-down Job). It returns how many deletions succeeded
// and how many of those Pods were ready.
func (c *Controller) deletePods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod, dropFinalizer bool) (deletedReady, deleted int32, err error) {
	if dropFinalizer {
		c.expect.ExpectDeletions(key, podKeys(pods)...)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var perr error
			if dropFinalizer && hasTrackingFinalizer(p) {
				perr = c.removeFinalizer(ctx, p)
			}
			if perr == nil {
				perr = c.deletePod(ctx, job, p)
			}
			mu.Lock()
			defer mu.Unlock()
			if perr != nil {
				if dropFinalizer {
					c.expect.DeletionObserved(key, podKey(p))
				}
				if err == nil {
					err = perr
				}
				return
			}
			deleted++
			if podutil.IsReady(p) {
				deletedReady++
			}
		}()
	}
	wg.Wait()
	return deletedReady, deleted, err
}

func (c *Controller) deletePod(ctx context.Context, job *batchv1.Job, p *corev1.Pod) error {
	err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	c.Recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	return nil
}

var removeFinalizerPatch, _ = json.Marshal(map[string]any{"metadata": map[string]any{
	"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
}})

// removeFinalizer drops the tracking finalizer; a Pod that is gone
// already counts as done.
func (c *Controller) removeFinalizer(ctx context.Context, p *corev1.Pod) error {
	_, err := c.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, removeFinalizerPatch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove tracking finalizer of pod %s: %w", p.Name, err)
	}
	return nil
}

// podKey is the pod's namespace/name, the key deletion expectations
// track.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func podKeys(pods []*corev1.Pod) []string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = podKey(p)
	}
	return keys
}
