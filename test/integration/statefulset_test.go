package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// stsNew is a StatefulSet of busybox pods labelled app=name, governed by
// the Service name, changed by opts.
func stsNew(name string, replicas int32, opts ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}},
			},
		},
	}
	for _, o := range opts {
		o(ss)
	}
	return ss
}

// stsWithClaims gives the set the claim template "data" (1Gi, of the
// class "manual", which no StorageClass provisions: the test makes the
// volumes) mounted at /data.
func stsWithClaims(ss *appsv1.StatefulSet) {
	ss.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("manual"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	ss.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
}

// stsVolumesFor creates, for each claim name, a volume reserved for it
// (its claimRef names it), as an administrator pre-provisions storage.
func stsVolumesFor(t *testing.T, c *cluster, ns string, claims ...string) {
	t.Helper()
	for _, claim := range claims {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns + "-" + claim},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName:              "manual",
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + claim}},
			},
		}
		if _, err := c.client.CoreV1().PersistentVolumes().Create(ctxT(t), pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// stsPods are the pods of the set labelled app=name, by name.
func stsPods(ctx context.Context, c *cluster, ns, name string) (map[string]corev1.Pod, error) {
	list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out, nil
}

// stsWaitReady waits until exactly the pods named want exist, all Running
// and Ready and none terminating, and returns them by name.
func stsWaitReady(t *testing.T, c *cluster, ns, name string, want ...string) map[string]corev1.Pod {
	t.Helper()
	var pods map[string]corev1.Pod
	waitFor(t, fmt.Sprintf("pods %v ready", want), func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = stsPods(ctx, c, ns, name); err != nil || len(pods) != len(want) {
			return false, err
		}
		for _, n := range want {
			p, ok := pods[n]
			if !ok || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	return pods
}

// stsWaitStatus waits until the set's status for its current generation
// satisfies ok, and returns the set.
func stsWaitStatus(t *testing.T, c *cluster, ns, name, what string, ok func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var ss *appsv1.StatefulSet
	waitFor(t, "statefulset "+name+": "+what, func(ctx context.Context) (bool, error) {
		var err error
		if ss, err = c.client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return ss.Status.ObservedGeneration == ss.Generation && ok(ss), nil
	})
	return ss
}

// podLog is the stream of pod watch events of a test, in the order the
// apiserver sent them.
type podLog struct {
	mu     sync.Mutex
	events []watch.Event
}

// stsWatchPods records the events of the pods labelled app=name from now
// until the test ends.
func stsWatchPods(t *testing.T, c *cluster, ns, name string) *podLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	l := &podLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if _, ok := ev.Object.(*corev1.Pod); !ok {
				continue
			}
			l.mu.Lock()
			l.events = append(l.events, ev)
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return l
}

func (l *podLog) snapshot() []watch.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// A StatefulSet with OrderedReady pods creates web-0, web-1, web-2 in
// turn, each once the one before is Running and Ready, gives each its
// stable identity, brings a deleted pod back under its name, and scales
// down from the highest ordinal, one pod at a time.
func TestStatefulSetOrderedReady(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	log := stsWatchPods(t, c, "default", "web")

	ss, err := c.client.AppsV1().StatefulSets("default").Create(ctx, stsNew("web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := stsWaitReady(t, c, "default", "web", "web-0", "web-1", "web-2")

	// Order: each pod was created only after its predecessor was seen
	// Running and Ready.
	latest := map[string]*corev1.Pod{}
	var added []string
	for _, ev := range log.snapshot() {
		p := ev.Object.(*corev1.Pod)
		if ev.Type == watch.Added {
			added = append(added, p.Name)
			if _, ord := stsOrdinal(p.Name); ord > 0 {
				prev := latest[fmt.Sprintf("web-%d", ord-1)]
				if prev == nil || prev.Status.Phase != corev1.PodRunning || !podReady(prev) {
					t.Errorf("%s created while its predecessor was %v", p.Name, stsPodState(prev))
				}
			}
		}
		latest[p.Name] = p
	}
	if !slices.Equal(added, []string{"web-0", "web-1", "web-2"}) {
		t.Errorf("pods created in the order %v, want web-0, web-1, web-2", added)
	}

	// Identity.
	for name, p := range pods {
		_, ord := stsOrdinal(name)
		ref := metav1.GetControllerOf(&p)
		switch {
		case ref == nil || ref.UID != ss.UID || ref.Kind != "StatefulSet":
			t.Errorf("%s: controller %+v", name, ref)
		case p.Spec.Hostname != name || p.Spec.Subdomain != "web":
			t.Errorf("%s: hostname %q subdomain %q, want %q and web", name, p.Spec.Hostname, p.Spec.Subdomain, name)
		case p.Labels[appsv1.StatefulSetPodNameLabel] != name || p.Labels[appsv1.PodIndexLabel] != fmt.Sprint(ord):
			t.Errorf("%s: labels %v", name, p.Labels)
		}
	}
	got := stsWaitStatus(t, c, "default", "web", "3 ready, current and updated", func(s *appsv1.StatefulSet) bool {
		st := s.Status
		return st.Replicas == 3 && st.ReadyReplicas == 3 && st.AvailableReplicas == 3 && st.CurrentReplicas == 3 &&
			st.UpdatedReplicas == 3 && st.CurrentRevision != "" && st.CurrentRevision == st.UpdateRevision
	})
	for name, p := range pods {
		if rev := p.Labels[appsv1.ControllerRevisionHashLabelKey]; rev != got.Status.UpdateRevision {
			t.Errorf("%s: revision %q, want %q", name, rev, got.Status.UpdateRevision)
		}
	}
	waitFor(t, "the SuccessfulCreate event of web-0", func(ctx context.Context) (bool, error) {
		evs, err := c.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "SuccessfulCreate" && e.Message == "create Pod web-0 in StatefulSet web successful" {
				return true, nil
			}
		}
		return false, nil
	})

	// A deleted pod comes back with the same name (and a new UID).
	old := pods["web-1"]
	if err := c.client.CoreV1().Pods("default").Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web-1 to come back", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && p.UID != old.UID && p.Status.Phase == corev1.PodRunning && podReady(p), err
	})

	// Scale down through /scale: web-2 goes first, then web-1, each only
	// once the one above it is gone.
	from := len(log.snapshot())
	if _, err := c.client.AppsV1().StatefulSets("default").UpdateScale(ctx, "web",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}},
		metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stsWaitReady(t, c, "default", "web", "web-0")
	var order []string
	for _, ev := range log.snapshot()[from:] {
		p := ev.Object.(*corev1.Pod)
		switch {
		case ev.Type == watch.Deleted:
			order = append(order, p.Name+" gone")
		case p.DeletionTimestamp != nil && !slices.Contains(order, p.Name+" deleting"):
			order = append(order, p.Name+" deleting")
		}
	}
	if want := []string{"web-2 deleting", "web-2 gone", "web-1 deleting", "web-1 gone"}; !slices.Equal(order, want) {
		t.Errorf("scale-down went %v, want %v", order, want)
	}
	stsWaitStatus(t, c, "default", "web", "1 replica", func(s *appsv1.StatefulSet) bool {
		return s.Status.Replicas == 1 && s.Status.ReadyReplicas == 1
	})
}

func stsOrdinal(name string) (string, int) {
	i := strings.LastIndex(name, "-")
	var n int
	if _, err := fmt.Sscanf(name[i+1:], "%d", &n); err != nil {
		return name, -1
	}
	return name[:i], n
}

func stsPodState(p *corev1.Pod) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprintf("%s (ready %v)", p.Status.Phase, podReady(p))
}

// With podManagementPolicy Parallel, pods are created and deleted
// without waiting for each other: pods that cannot be scheduled do not
// hold the next ones back. spec.ordinals.start numbers them.
func TestStatefulSetParallel(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	ss := stsNew("db", 3, func(s *appsv1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
		// No node: the pods stay Pending, never Ready.
		s.Spec.Template.Spec.NodeSelector = map[string]string{"no-such": "node"}
	})
	if _, err := c.client.AppsV1().StatefulSets("default").Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db-5, db-6 and db-7 to exist, none ready", func(ctx context.Context) (bool, error) {
		pods, err := stsPods(ctx, c, "default", "db")
		if err != nil {
			return false, err
		}
		var names []string
		for n := range pods {
			names = append(names, n)
		}
		slices.Sort(names)
		return slices.Equal(names, []string{"db-5", "db-6", "db-7"}), nil
	})
	stsWaitStatus(t, c, "default", "db", "3 replicas, none ready", func(s *appsv1.StatefulSet) bool {
		return s.Status.Replicas == 3 && s.Status.ReadyReplicas == 0
	})

	// Scale to one: the two others go at once, though db-5 is not ready.
	if _, err := c.client.AppsV1().StatefulSets("default").Patch(ctx, "db", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db-5 alone", func(ctx context.Context) (bool, error) {
		pods, err := stsPods(ctx, c, "default", "db")
		_, ok := pods["db-5"]
		return err == nil && len(pods) == 1 && ok, err
	})
}

// Each pod gets a claim per claim template, made before the pod and
// mounted by it; Retain keeps claims through scale-down and the set's
// deletion, Delete lets the garbage collector remove them.
func TestStatefulSetClaims(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	stsVolumesFor(t, c, "default", "data-keep-0", "data-keep-1", "data-drop-0", "data-drop-1")
	claims := c.client.CoreV1().PersistentVolumeClaims("default")
	claimExists := func(name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			_, err := claims.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}
	}
	claimGone := func(name string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			_, err := claims.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}
	}

	// Retain, the default.
	if _, err := c.client.AppsV1().StatefulSets("default").Create(ctx, stsNew("keep", 2, stsWithClaims), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := stsWaitReady(t, c, "default", "keep", "keep-0", "keep-1")
	for _, name := range []string{"keep-0", "keep-1"} {
		claim, err := claims.Get(ctx, "data-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim of %s: %v", name, err)
		}
		if claim.Labels["app"] != "keep" || len(claim.OwnerReferences) != 0 || claim.CreationTimestamp.After(pods[name].CreationTimestamp.Time) {
			t.Errorf("claim %s: labels %v, owners %v, created %v (pod %v)", claim.Name, claim.Labels, claim.OwnerReferences,
				claim.CreationTimestamp, pods[name].CreationTimestamp)
		}
		p := pods[name]
		if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == "data" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "data-"+name
		}) {
			t.Errorf("%s volumes %+v, want data from claim data-%s", name, p.Spec.Volumes, name)
		}
	}
	waitFor(t, "data-keep-0 bound to its volume", func(ctx context.Context) (bool, error) {
		claim, err := claims.Get(ctx, "data-keep-0", metav1.GetOptions{})
		return err == nil && claim.Status.Phase == corev1.ClaimBound && claim.Spec.VolumeName == "pv-default-data-keep-0", err
	})
	if _, err := c.client.AppsV1().StatefulSets("default").Patch(ctx, "keep", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	stsWaitReady(t, c, "default", "keep", "keep-0")
	// Back to two: keep-1 gets its old claim back.
	oldClaim, err := claims.Get(ctx, "data-keep-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim of the scaled-down keep-1: %v", err)
	}
	if _, err := c.client.AppsV1().StatefulSets("default").Patch(ctx, "keep", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	stsWaitReady(t, c, "default", "keep", "keep-0", "keep-1")
	if again, err := claims.Get(ctx, "data-keep-1", metav1.GetOptions{}); err != nil || again.UID != oldClaim.UID {
		t.Errorf("keep-1's claim after scale-up: %v (uid %v, was %v)", err, again.UID, oldClaim.UID)
	}
	if err := c.client.AppsV1().StatefulSets("default").Delete(ctx, "keep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "keep's pods to go", func(ctx context.Context) (bool, error) {
		pods, err := stsPods(ctx, c, "default", "keep")
		return err == nil && len(pods) == 0, err
	})
	for _, name := range []string{"data-keep-0", "data-keep-1"} {
		waitFor(t, name+" kept", claimExists(name))
	}

	// Delete on both counts.
	drop := stsNew("drop", 2, stsWithClaims, func(s *appsv1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
	})
	drop, err = c.client.AppsV1().StatefulSets("default").Create(ctx, drop, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stsWaitReady(t, c, "default", "drop", "drop-0", "drop-1")
	waitFor(t, "drop's claims owned by it", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"data-drop-0", "data-drop-1"} {
			claim, err := claims.Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != drop.UID {
				return false, nil
			}
		}
		return true, nil
	})
	if _, err := c.client.AppsV1().StatefulSets("default").Patch(ctx, "drop", "application/merge-patch+json",
		[]byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the scaled-down drop-1's claim to go", claimGone("data-drop-1"))
	if _, err := claims.Get(ctx, "data-drop-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("drop-0's claim: %v", err)
	}
	if err := c.client.AppsV1().StatefulSets("default").Delete(ctx, "drop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "drop-0's claim to go with the set", claimGone("data-drop-0"))
}

// RollingUpdate replaces pods from the highest ordinal down to the
// partition, one Ready pod at a time; OnDelete waits for the user to
// delete them. Fields a set may not change are refused.
func TestStatefulSetUpdates(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 2)
	sets := c.client.AppsV1().StatefulSets("default")
	ss := stsNew("web", 3, func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}
	})
	if _, err := sets.Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stsWaitReady(t, c, "default", "web", "web-0", "web-1", "web-2")
	first := stsWaitStatus(t, c, "default", "web", "3 current", func(s *appsv1.StatefulSet) bool {
		return s.Status.CurrentReplicas == 3 && s.Status.ReadyReplicas == 3
	}).Status.CurrentRevision
	log := stsWatchPods(t, c, "default", "web")

	// Partition 2: only web-2 moves to the new template.
	stsPatch(t, c, "web", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"busybox:2"}]}}}}`)
	st := stsWaitStatus(t, c, "default", "web", "web-2 updated", func(s *appsv1.StatefulSet) bool {
		return s.Status.UpdatedReplicas == 1 && s.Status.CurrentReplicas == 2 && s.Status.ReadyReplicas == 3
	}).Status
	if st.CurrentRevision != first || st.UpdateRevision == first {
		t.Errorf("revisions current %q update %q, want current %q and a new update", st.CurrentRevision, st.UpdateRevision, first)
	}
	pods := stsWaitReady(t, c, "default", "web", "web-0", "web-1", "web-2")
	for name, want := range map[string]string{"web-0": first, "web-1": first, "web-2": st.UpdateRevision} {
		if got := pods[name].Labels[appsv1.ControllerRevisionHashLabelKey]; got != want {
			t.Errorf("%s at revision %q, want %q", name, got, want)
		}
	}

	// Partition 0: web-1 then web-0, each after the one above is Ready.
	stsPatch(t, c, "web", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	done := stsWaitStatus(t, c, "default", "web", "rolled out", func(s *appsv1.StatefulSet) bool {
		return s.Status.UpdatedReplicas == 3 && s.Status.ReadyReplicas == 3 && s.Status.CurrentRevision == s.Status.UpdateRevision
	}).Status
	if done.UpdateRevision != st.UpdateRevision {
		t.Errorf("update revision %q, want %q", done.UpdateRevision, st.UpdateRevision)
	}
	var deleting []string
	latest := map[string]*corev1.Pod{}
	for _, ev := range log.snapshot() {
		p := ev.Object.(*corev1.Pod)
		if p.DeletionTimestamp != nil && !slices.Contains(deleting, p.Name) && ev.Type != watch.Deleted {
			deleting = append(deleting, p.Name)
			// Everything above it runs the new template, and is Ready.
			_, ord := stsOrdinal(p.Name)
			for above := ord + 1; above < 3; above++ {
				a := latest[fmt.Sprintf("web-%d", above)]
				if a == nil || a.Labels[appsv1.ControllerRevisionHashLabelKey] != st.UpdateRevision || !podReady(a) {
					t.Errorf("%s deleted while web-%d was %v", p.Name, above, stsPodState(a))
				}
			}
		}
		if ev.Type == watch.Deleted {
			delete(latest, p.Name)
		} else {
			latest[p.Name] = p
		}
	}
	if !slices.Equal(deleting, []string{"web-2", "web-1", "web-0"}) {
		t.Errorf("pods replaced in the order %v, want web-2, web-1, web-0", deleting)
	}

	// OnDelete: a new template changes no pod until one is deleted.
	stsPatch(t, c, "web", `{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null},`+
		`"template":{"spec":{"containers":[{"name":"app","image":"busybox:3"}]}}}}`)
	third := stsWaitStatus(t, c, "default", "web", "a third revision", func(s *appsv1.StatefulSet) bool {
		return s.Status.UpdateRevision != st.UpdateRevision && s.Status.UpdateRevision != first
	}).Status.UpdateRevision
	pods = stsWaitReady(t, c, "default", "web", "web-0", "web-1", "web-2")
	for name, p := range pods {
		if got := p.Labels[appsv1.ControllerRevisionHashLabelKey]; got != st.UpdateRevision {
			t.Errorf("OnDelete: %s moved to %q", name, got)
		}
	}
	if err := c.client.CoreV1().Pods("default").Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web-0 back at the third revision", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && p.Labels[appsv1.ControllerRevisionHashLabelKey] == third && podReady(p) &&
			p.Spec.Containers[0].Image == "busybox:3", err
	})

	// What a set may not change.
	for _, patch := range []string{
		`{"spec":{"serviceName":"other"}}`,
		`{"spec":{"podManagementPolicy":"Parallel"}}`,
		`{"spec":{"selector":{"matchLabels":{"tier":"x"}},"template":{"metadata":{"labels":{"tier":"x"}}}}}`,
		`{"spec":{"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`,
	} {
		_, err := sets.Patch(ctx, "web", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "updates to statefulset spec for fields other than") {
			t.Errorf("patch %s: %v, want 422 Forbidden", patch, err)
		}
	}
	// Revisions: one per template, owned by the set.
	revs, err := c.client.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(revs.Items) != 3 {
		t.Errorf("%d revisions, want 3", len(revs.Items))
	}
	// revisionHistoryLimit 0: the first revision, which no pod runs and
	// the status does not name, goes; the two in use stay.
	stsPatch(t, c, "web", `{"spec":{"revisionHistoryLimit":0}}`)
	waitFor(t, "the unused revision deleted", func(ctx context.Context) (bool, error) {
		revs, err := c.client.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		var names []string
		for _, r := range revs.Items {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		want := []string{st.UpdateRevision, third}
		slices.Sort(want)
		return slices.Equal(names, want), nil
	})
}

func stsPatch(t *testing.T, c *cluster, name, patch string) {
	t.Helper()
	if _, err := c.client.AppsV1().StatefulSets("default").Patch(ctxT(t), name, "application/strategic-merge-patch+json",
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
}

// kubectl rollout status, history and undo, and kubectl scale, on a
// StatefulSet.
func TestStatefulSetKubectl(t *testing.T) {
	c := startCluster(t)
	startSimulatedNodes(t, c, 2)
	k := newKubectl(t, c)
	manifest := writeTestFile(t, t.TempDir(), "web.yaml", `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: busybox:1
`)
	k.ok(t, "apply", "-f", manifest)
	if out := k.ok(t, "rollout", "status", "statefulset/web", "--timeout=60s"); !strings.Contains(out, "partitioned roll out complete: 2 new pods have been updated") {
		t.Fatalf("rollout status: %q", out)
	}
	if got := tableHeader(k.ok(t, "get", "sts")); !slices.Equal(got, []string{"NAME", "READY", "AGE"}) {
		t.Errorf("kubectl get sts columns %v", got)
	}
	if got := tableHeader(k.ok(t, "get", "statefulsets", "-o", "wide")); !slices.Equal(got, []string{"NAME", "READY", "AGE", "CONTAINERS", "IMAGES"}) {
		t.Errorf("kubectl get statefulsets -o wide columns %v", got)
	}

	k.ok(t, "set", "image", "statefulset/web", "app=busybox:2")
	k.ok(t, "rollout", "status", "statefulset/web", "--timeout=60s")
	var revisions []string
	for _, l := range outputLines(k.ok(t, "rollout", "history", "statefulset/web"))[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "REVISION" {
			revisions = append(revisions, f[0])
		}
	}
	if !slices.Equal(revisions, []string{"1", "2"}) {
		t.Fatalf("rollout history revisions %v, want [1 2]", revisions)
	}
	if out := k.ok(t, "rollout", "history", "statefulset/web", "--revision=1"); !strings.Contains(out, "busybox:1") {
		t.Errorf("revision 1: %q", out)
	}

	if out := k.ok(t, "rollout", "undo", "statefulset/web"); !strings.Contains(out, "rolled back") {
		t.Errorf("rollout undo: %q", out)
	}
	k.ok(t, "rollout", "status", "statefulset/web", "--timeout=60s")
	stsWaitStatus(t, c, "default", "web", "back on busybox:1", func(s *appsv1.StatefulSet) bool {
		return s.Spec.Template.Spec.Containers[0].Image == "busybox:1" && s.Status.UpdatedReplicas == 2 &&
			s.Status.ReadyReplicas == 2 && s.Status.CurrentRevision == s.Status.UpdateRevision
	})
	pods := stsWaitReady(t, c, "default", "web", "web-0", "web-1")
	for name, p := range pods {
		if p.Spec.Containers[0].Image != "busybox:1" {
			t.Errorf("%s runs %s after undo", name, p.Spec.Containers[0].Image)
		}
	}
	// The undo reused revision 1's data, as revision 3.
	revisions = nil
	for _, l := range outputLines(k.ok(t, "rollout", "history", "statefulset/web"))[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "REVISION" {
			revisions = append(revisions, f[0])
		}
	}
	if !slices.Equal(revisions, []string{"2", "3"}) {
		t.Errorf("rollout history after undo %v, want [2 3]", revisions)
	}

	if out := k.ok(t, "scale", "statefulset/web", "--replicas=3"); !strings.Contains(out, "statefulset.apps/web scaled") {
		t.Errorf("scale: %q", out)
	}
	stsWaitReady(t, c, "default", "web", "web-0", "web-1", "web-2")
	if out := k.ok(t, "get", "sts", "web"); !strings.Contains(out, "3/3") {
		t.Errorf("kubectl get sts web: %q", out)
	}
	// Events are recorded asynchronously: wait for web-2's.
	waitFor(t, "kubectl describe to show 3 running pods and web-2's creation", func(context.Context) (bool, error) {
		out := k.ok(t, "describe", "statefulset", "web")
		return strings.Contains(out, "3 Running / 0 Waiting") &&
			strings.Contains(out, "create Pod web-2 in StatefulSet web successful"), nil
	})
}

// examples/storage/statefulset.yaml: the headless Service and the
// StatefulSet web, whose pods get claims of the default StorageClass.
func TestStatefulSetExample(t *testing.T) {
	c := startCluster(t)
	startSimulatedNodes(t, c, 2)
	k := newKubectl(t, c)
	k.ok(t, "create", "namespace", "sts")
	out := k.ok(t, "apply", "-n", "sts", "-f", filepath.Join(examplesPath(t), "storage", "statefulset.yaml"))
	if want := []string{"service/web created", "statefulset.apps/web created"}; !slices.Equal(outputLines(out), want) {
		t.Fatalf("apply printed %q, want %v", out, want)
	}
	svc, err := c.client.CoreV1().Services("sts").Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Fatalf("service web: %v %+v", err, svc)
	}
	pods := stsWaitReady(t, c, "sts", "web", "web-0", "web-1", "web-2")
	for name, p := range pods {
		if p.Spec.Subdomain != "web" || p.Spec.Hostname != name {
			t.Errorf("%s: hostname %q subdomain %q", name, p.Spec.Hostname, p.Spec.Subdomain)
		}
		claim, err := c.client.CoreV1().PersistentVolumeClaims("sts").Get(ctxT(t), "data-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim of %s: %v", name, err)
		}
		if ptr.Deref(claim.Spec.StorageClassName, "") != "local-path" {
			t.Errorf("claim %s of class %v, want the default local-path", claim.Name, claim.Spec.StorageClassName)
		}
	}
}
