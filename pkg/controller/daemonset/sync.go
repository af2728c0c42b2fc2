package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/history"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// Reconcile moves one DaemonSet (namespace/name) a step toward one
// current pod per eligible node and writes its status.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := c.dsLister.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || selector.Empty() {
		// The apiserver refuses these; one that got in must not claim
		// every pod of the namespace.
		c.Recorder.Eventf(ds, corev1.EventTypeWarning, ReasonSelectingAll, "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		// The garbage collector removes the pods and revisions; keeping
		// either up now would fight it.
		return nil
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	ds = ds.DeepCopy()
	cur, old, err := c.constructHistory(ctx, ds, selector)
	if err != nil {
		return fmt.Errorf("history of daemonset %s: %w", key, err)
	}
	hash := cur.Labels[appsv1.ControllerRevisionHashLabelKey]

	if !c.expectations.Satisfied(key) {
		// Our last writes are not in the cache yet: report, do nothing,
		// and leave observedGeneration alone.
		return c.updateStatus(ctx, ds, selector, nodes, hash, false)
	}
	err = c.manage(ctx, key, ds, selector, nodes, hash)
	if err == nil && c.expectations.Satisfied(key) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		err = c.rollingUpdate(ctx, key, ds, selector, nodes, hash)
	}
	if err == nil {
		err = c.cleanupHistory(ctx, ds, selector, old)
	}
	return errors.Join(err, c.updateStatus(ctx, ds, selector, nodes, hash, true))
}

// nodeToPods maps each node to ds's pods on it (or meant for it), after
// adopting and releasing by selector. Pods finished and deleted are left
// out: they are on their way out and hold no node.
func (c *Controller) nodeToPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (map[string][]*corev1.Pod, error) {
	all, err := c.podLister.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	m := &controllerref.Claimer[*corev1.Pod]{
		Owner: ds, Kind: controllerKind, Selector: selector, Dependent: "pod", Logger: c.Log,
		Get:   controllerref.GetWith(c.Client.AppsV1().DaemonSets(ds.Namespace).Get, ds.Name),
		Patch: controllerref.PatchWith(c.Client.CoreV1().Pods(ds.Namespace).Patch),
	}
	claimed, err := m.Claim(ctx, all)
	out := map[string][]*corev1.Pod{}
	for _, p := range claimed {
		if podutil.IsTerminal(p) && p.DeletionTimestamp != nil {
			continue
		}
		if node := targetNode(p); node != "" {
			out[node] = append(out[node], p)
		}
	}
	return out, err
}

// manage creates the missing pods and deletes the misplaced, surplus and
// failed ones.
func (c *Controller) manage(ctx context.Context, key string, ds *appsv1.DaemonSet, selector labels.Selector, nodes []*corev1.Node, hash string) error {
	byNode, err := c.nodeToPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	surge := allowsSurge(ds)
	var create []string
	var del []*corev1.Pod
	now := c.Clock.Now()
	known := map[string]bool{}
	for _, node := range nodes {
		known[node.Name] = true
		run, keep := shouldRun(ds, node)
		pods := byNode[node.Name]
		switch {
		case run && len(pods) == 0:
			create = append(create, node.Name)
			continue
		case !keep:
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					del = append(del, p)
				}
			}
			continue
		}
		var running []*corev1.Pod
		for _, p := range pods {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodFailed:
				// The node keeps rejecting or killing it: replace it,
				// but not faster than the back-off allows.
				bk := ds.Namespace + "/" + ds.Name + "/" + node.Name
				if c.backoff.IsInBackOffSinceUpdate(bk, now) {
					c.enqueueAfter(ds, c.backoff.Get(bk))
					continue
				}
				c.backoff.Next(bk, now)
				c.Recorder.Eventf(ds, corev1.EventTypeWarning, ReasonFailedDaemonPod,
					"Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node.Name)
				del = append(del, p)
			case p.Status.Phase == corev1.PodSucceeded:
				// A daemon that exits is replaced like one that fails,
				// without back-off: it did nothing wrong.
				del = append(del, p)
			default:
				running = append(running, p)
			}
		}
		switch {
		case !surge && len(running) > 1:
			sortOldestFirst(running)
			del = append(del, running[1:]...)
		case !surge:
			// A new pod waits until the node's old one (failed, or
			// terminating) is gone: two daemons of one kind on a node
			// may fight over its host ports and files.
		case len(running) == 0 && run:
			// Surging promises a live pod on the node at all times.
			create = append(create, node.Name)
		case len(running) > 1:
			del = append(del, surplusWhileSurging(ds, running, hash, now)...)
		}
	}
	// A pod never scheduled, meant for a node that is gone, can never
	// run; one already bound is the pod garbage collector's.
	for node, pods := range byNode {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				del = append(del, p)
			}
		}
	}
	return c.syncNodes(ctx, key, ds, del, create, hash)
}

// surplusWhileSurging: a surging node keeps at most its oldest current
// pod and its oldest old pod; the old one goes once it is not ready or
// the current one is available.
func surplusWhileSurging(ds *appsv1.DaemonSet, running []*corev1.Pod, hash string, now time.Time) []*corev1.Pod {
	sortOldestFirst(running)
	var del []*corev1.Pod
	var newest, oldest *corev1.Pod
	for _, p := range running {
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == hash {
			if newest == nil {
				newest = p
				continue
			}
		} else if oldest == nil {
			oldest = p
			continue
		}
		del = append(del, p)
	}
	if newest != nil && oldest != nil && (!podutil.IsReady(oldest) || isAvailable(newest, ds.Spec.MinReadySeconds, now)) {
		del = append(del, oldest)
	}
	return del
}

// syncNodes deletes del, then creates a pod for each node in create, at
// most burst of each, with expectations set before the first call.
func (c *Controller) syncNodes(ctx context.Context, key string, ds *appsv1.DaemonSet, del []*corev1.Pod, create []string, hash string) error {
	del = del[:min(len(del), c.burst)]
	create = create[:min(len(create), c.burst)]
	keys := make([]string, len(del))
	for i, p := range del {
		keys[i] = podKey(p)
	}
	c.expectations.ExpectCreations(key, len(create))
	c.expectations.ExpectDeletions(key, keys...)

	var errs []error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// Deletions first: an old pod is gone (terminating) before a surge
	// pod starts elsewhere, so no one ever sees more than maxSurge nodes
	// running two.
	var dels sync.WaitGroup
	for _, p := range del {
		dels.Go(func() {
			if err := c.deletePodOf(ctx, ds, p); err != nil {
				c.expectations.DeletionObserved(key, podKey(p))
				if !apierrors.IsNotFound(err) {
					fail(err)
				}
			}
		})
	}
	dels.Wait()
	template := podTemplate(ds, hash)
	// Slow start: batches of 1, 2, 4, ... so that a quota or admission
	// error costs one call, not hundreds.
	next := 0
	for batch := min(1, len(create)); batch > 0; batch = min(2*batch, len(create)-next) {
		var wg sync.WaitGroup
		failed := false
		for _, node := range create[next : next+batch] {
			wg.Go(func() {
				if err := c.createPod(ctx, ds, template, node); err != nil {
					c.expectations.CreationObserved(key)
					mu.Lock()
					failed = true
					mu.Unlock()
					fail(err)
				}
			})
		}
		wg.Wait()
		next += batch
		if failed {
			// Creations never issued will never be observed.
			c.expectations.CreationsObserved(key, len(create)-next)
			break
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) createPod(ctx context.Context, ds *appsv1.DaemonSet, t *corev1.PodTemplateSpec, node string) error {
	pod, err := c.Client.CoreV1().Pods(ds.Namespace).Create(ctx, newPod(ds, t, node), metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.Recorder.Eventf(ds, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		return fmt.Errorf("create pod of daemonset %s/%s for node %s: %w", ds.Namespace, ds.Name, node, err)
	}
	c.Recorder.Eventf(ds, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", pod.Name)
	return nil
}

func (c *Controller) deletePodOf(ctx context.Context, ds *appsv1.DaemonSet, pod *corev1.Pod) error {
	err := c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		c.Recorder.Eventf(ds, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.Recorder.Eventf(ds, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", pod.Name)
	return nil
}

// allowsSurge: a RollingUpdate with a non-zero maxSurge.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return false
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 100, true)
	return err == nil && n > 0
}

// limits are ds's maxSurge and maxUnavailable for desired nodes,
// percentages rounded up; never both zero.
func limits(ds *appsv1.DaemonSet, desired int) (surge, unavailable int) {
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
		}
		if ru.MaxUnavailable != nil {
			unavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
		}
	}
	if desired > 0 && surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

// updatedAndOld splits a node's live pods into its current and old one;
// ok is false when it has more than one of either (manage cleans that
// up first).
func updatedAndOld(pods []*corev1.Pod, hash string, gen *int64) (cur, old *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(p, hash, gen) {
			if cur != nil {
				return nil, nil, false
			}
			cur = p
		} else {
			if old != nil {
				return nil, nil, false
			}
			old = p
		}
	}
	return cur, old, true
}

// rollingUpdate replaces old pods within the strategy's limits.
func (c *Controller) rollingUpdate(ctx context.Context, key string, ds *appsv1.DaemonSet, selector labels.Selector, nodes []*corev1.Node, hash string) error {
	byNode, err := c.nodeToPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	nodeByName := map[string]*corev1.Node{}
	desired := 0
	for _, n := range nodes {
		nodeByName[n.Name] = n
		if run, _ := shouldRun(ds, n); run {
			desired++
			if _, ok := byNode[n.Name]; !ok {
				byNode[n.Name] = nil
			}
		}
	}
	maxSurge, maxUnavailable := limits(ds, desired)
	gen := templateGeneration(ds)
	now := c.Clock.Now()
	available := func(p *corev1.Pod) bool { return isAvailable(p, ds.Spec.MinReadySeconds, now) }
	eligible := func(name string) bool {
		n, ok := nodeByName[name]
		if !ok {
			return false
		}
		run, _ := shouldRun(ds, n)
		return run
	}

	if maxSurge == 0 {
		// Delete old pods while fewer than maxUnavailable nodes lack an
		// available pod; manage creates their successors.
		unavailable := 0
		var replace, candidates []*corev1.Pod
		for _, pods := range byNode {
			cur, old, ok := updatedAndOld(pods, hash, gen)
			switch {
			case !ok, cur == nil && old == nil, cur != nil && old != nil:
				unavailable++
			case cur != nil:
				if !available(cur) {
					unavailable++
				}
			case !available(old):
				// It serves nothing now: replacing it costs nothing.
				replace = append(replace, old)
			default:
				candidates = append(candidates, old)
			}
		}
		sortOldestFirst(candidates)
		n := min(max(maxUnavailable-unavailable, 0), len(candidates))
		return c.syncNodes(ctx, key, ds, append(replace, candidates[:n]...), nil, hash)
	}

	// Surge: start a new pod next to an old one on at most maxSurge nodes
	// at once (at once where the old one is not available), and delete
	// the old one when the new one is available.
	var del, shouldNotRun []*corev1.Pod
	var allowed, candidates []string
	surging, availableNodes := 0, 0
	for name, pods := range byNode {
		cur, old, ok := updatedAndOld(pods, hash, gen)
		if !ok {
			surging++
			continue
		}
		switch {
		case old != nil && available(old), old == nil && cur != nil && available(cur):
			availableNodes++
		}
		switch {
		case old == nil:
			// Nothing to replace; manage handles an empty node.
		case cur == nil && !available(old):
			if !eligible(name) {
				del = append(del, old)
				continue
			}
			allowed = append(allowed, name)
		case cur == nil:
			if !eligible(name) {
				shouldNotRun = append(shouldNotRun, old)
				continue
			}
			if surging < maxSurge {
				candidates = append(candidates, name)
			}
		case !available(cur):
			surging++
		default:
			del = append(del, old)
		}
	}
	// Pods on nodes that no longer match go only while the rest keeps
	// desired pods available: surging promises no gap.
	if n := min(availableNodes-desired, len(shouldNotRun)); n > 0 {
		del = append(del, shouldNotRun[:n]...)
	}
	n := min(max(maxSurge-surging, 0), len(candidates))
	return c.syncNodes(ctx, key, ds, del, append(allowed, candidates[:n]...), hash)
}

// constructHistory returns ds's current revision (written, or
// renumbered as the newest, as needed) and the others.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	all, err := c.historyLister.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	m := &controllerref.Claimer[*appsv1.ControllerRevision]{
		Owner: ds, Kind: controllerKind, Selector: selector, Dependent: "controllerrevision", Logger: c.Log,
		Get:   controllerref.GetWith(c.Client.AppsV1().DaemonSets(ds.Namespace).Get, ds.Name),
		Patch: controllerref.PatchWith(c.Client.AppsV1().ControllerRevisions(ds.Namespace).Patch),
	}
	revisions, err := m.Claim(ctx, all)
	if err != nil {
		return nil, nil, err
	}
	data, err := history.Patch(&ds.Spec.Template)
	if err != nil {
		return nil, nil, err
	}
	want := &appsv1.ControllerRevision{Data: data}
	var current, old []*appsv1.ControllerRevision
	for _, r := range revisions {
		if history.Equal(r, want) {
			current = append(current, r)
		} else {
			old = append(old, r)
		}
	}
	next := history.Next(old)
	client := c.Client.AppsV1()
	if len(current) == 0 {
		collisions := ptrOr(ds.Status.CollisionCount)
		r := history.New(ds, controllerKind, ds.Spec.Template.Labels, data, next, &collisions)
		r.Annotations = ds.Annotations
		cur, err := history.Create(ctx, client, ds, controllerKind, r, &collisions)
		if collisions != ptrOr(ds.Status.CollisionCount) {
			// Persisted with the status at the end of this sync.
			ds.Status.CollisionCount = &collisions
		}
		return cur, old, err
	}
	// The same template twice (a race of two syncs): keep the newest.
	history.Sort(current)
	cur := current[len(current)-1]
	for _, dup := range current[:len(current)-1] {
		if err := client.ControllerRevisions(ds.Namespace).Delete(ctx, dup.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
	}
	if cur.Revision < next {
		// A rollback to this template: it becomes the newest revision.
		up := cur.DeepCopy()
		up.Revision = next
		if cur, err = client.ControllerRevisions(ds.Namespace).Update(ctx, up, metav1.UpdateOptions{}); err != nil {
			return nil, nil, err
		}
	}
	return cur, old, nil
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// cleanupHistory deletes the oldest revisions beyond
// revisionHistoryLimit that no pod of ds still runs.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, old []*appsv1.ControllerRevision) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	byNode, err := c.nodeToPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, pods := range byNode {
		for _, p := range pods {
			live[p.Labels[appsv1.ControllerRevisionHashLabelKey]] = true
		}
	}
	history.Sort(old)
	for _, r := range old {
		if toKill <= 0 {
			break
		}
		if live[r.Labels[appsv1.ControllerRevisionHashLabelKey]] {
			continue
		}
		if err := c.Client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		toKill--
	}
	return nil
}

// calculateStatus is ds's status for its pods on nodes.
func calculateStatus(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string, now time.Time) appsv1.DaemonSetStatus {
	st := *ds.Status.DeepCopy()
	gen := templateGeneration(ds)
	var desired, current, misscheduled, ready, available, updated int32
	for _, node := range nodes {
		run, _ := shouldRun(ds, node)
		pods := byNode[node.Name]
		if !run {
			if len(pods) > 0 {
				misscheduled++
			}
			continue
		}
		desired++
		if len(pods) == 0 {
			continue
		}
		current++
		sorted := append([]*corev1.Pod(nil), pods...)
		sortOldestFirst(sorted)
		p := sorted[0]
		if podutil.IsReady(p) {
			ready++
			if isAvailable(p, ds.Spec.MinReadySeconds, now) {
				available++
			}
		}
		if isUpdated(p, hash, gen) {
			updated++
		}
	}
	st.DesiredNumberScheduled = desired
	st.CurrentNumberScheduled = current
	st.NumberMisscheduled = misscheduled
	st.NumberReady = ready
	st.NumberAvailable = available
	st.NumberUnavailable = desired - available
	st.UpdatedNumberScheduled = updated
	return st
}

// updateStatus writes ds's status (observedGeneration too when this sync
// acted on ds's generation), retrying once on a fresh read.
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector, nodes []*corev1.Node, hash string, observed bool) error {
	byNode, err := c.nodeToPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	st := calculateStatus(ds, nodes, byNode, hash, c.Clock.Now())
	if observed {
		st.ObservedGeneration = ds.Generation
	}
	if ds.Spec.MinReadySeconds > 0 && st.NumberReady != st.NumberAvailable {
		// Some ready pods become available later: look again then.
		c.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	// Against the cached object: ds carries what this sync changed
	// (collisionCount), which must still be written.
	if cached, err := c.dsLister.DaemonSets(ds.Namespace).Get(ds.Name); err == nil && equality.Semantic.DeepEqual(cached.Status, st) {
		return nil
	}
	client := c.Client.AppsV1().DaemonSets(ds.Namespace)
	for i := 0; ; i++ {
		ds.Status = st
		_, err := client.UpdateStatus(ctx, ds, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if i >= 1 {
			return fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		fresh, getErr := client.Get(ctx, ds.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, getErr)
		}
		if !observed {
			st.ObservedGeneration = fresh.Status.ObservedGeneration
		}
		ds = fresh
	}
}
