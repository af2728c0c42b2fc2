package local

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// ensureLoaded adopts, once, the pods the runtime holds (a restarted
// kubelet): each gets a worker that watches it until the kubelet hands
// over its spec (UpdatePod). Running containers are left as they are.
func (p *Provider) ensureLoaded(ctx context.Context) error {
	p.mu.Lock()
	loaded := p.loaded
	p.mu.Unlock()
	if loaded {
		return nil
	}
	all, err := p.list.get(ctx, p.rt, 0)
	if err != nil {
		return fmt.Errorf("adopt running pods: %w", err)
	}
	pods, orphans := rebuildPods(all, p.cfg.NodeName)
	p.mu.Lock()
	if p.loaded {
		p.mu.Unlock()
		return nil
	}
	var adopted []*podWorker
	for _, pod := range pods {
		key := podKey(pod.Namespace, pod.Name)
		if _, ok := p.pods[key]; ok {
			continue
		}
		w := newPodWorker(p, pod, true)
		p.pods[key] = w
		adopted = append(adopted, w)
	}
	p.loaded = true
	p.mu.Unlock()
	for _, w := range adopted {
		w.log.Info("adopted running pod", "uid", w.uid)
		w.start(p.ctx)
	}
	for _, pod := range orphans {
		// An older pod of the same name whose deletion never finished.
		go func() {
			ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
			defer cancel()
			if err := p.killPod(ctx, pod, pod.UID, 0, nil); err != nil {
				p.log.Warn("remove leftover pod", "pod", podKey(pod.Namespace, pod.Name), "uid", pod.UID, "err", err)
			}
		}()
	}
	return nil
}

// rebuildPods describes the pods the runtime holds from the labels of
// their sandboxes and containers: identity, containers with their images,
// hostNetwork. Where one name has several UIDs, the newest is the pod
// and the others are orphans.
func rebuildPods(all []runtime.ContainerStatus, nodeName string) (pods, orphans []*corev1.Pod) {
	byUID := map[types.UID]*corev1.Pod{}
	newest := map[types.UID]time.Time{}
	started := map[types.UID]time.Time{}
	firstSeen := map[types.UID]map[string]time.Time{}
	for _, c := range all {
		uid := types.UID(c.PodUID)
		if uid == "" {
			continue
		}
		pod, ok := byUID[uid]
		if !ok {
			pod = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: c.PodNamespace, Name: c.PodName, UID: uid},
				Spec:       corev1.PodSpec{NodeName: nodeName},
			}
			byUID[uid] = pod
			firstSeen[uid] = map[string]time.Time{}
		}
		if c.CreatedAt.After(newest[uid]) {
			newest[uid] = c.CreatedAt
		}
		if c.IsSandbox {
			if c.Labels[labelHostNetwork] == "true" {
				pod.Spec.HostNetwork = true
			}
			if t := started[uid]; t.IsZero() || c.CreatedAt.Before(t) {
				started[uid] = c.CreatedAt
			}
			continue
		}
		seen, ok := firstSeen[uid][c.Name]
		if !ok || c.CreatedAt.Before(seen) {
			firstSeen[uid][c.Name] = c.CreatedAt
		}
		if ok {
			continue
		}
		img := c.Labels[labelImage]
		if img == "" {
			img = c.Image
		}
		spec := corev1.Container{Name: c.Name, Image: img}
		switch {
		case c.Labels[labelEphemeral] == "true":
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: c.Name, Image: img},
			})
		case c.Labels[labelInit] == "true":
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, spec)
		default:
			pod.Spec.Containers = append(pod.Spec.Containers, spec)
		}
	}
	byName := map[string]*corev1.Pod{}
	for uid, pod := range byUID {
		order := func(a, b corev1.Container) int { return firstSeen[uid][a.Name].Compare(firstSeen[uid][b.Name]) }
		slices.SortFunc(pod.Spec.Containers, order)
		slices.SortFunc(pod.Spec.InitContainers, order)
		slices.SortFunc(pod.Spec.EphemeralContainers, func(a, b corev1.EphemeralContainer) int {
			return firstSeen[uid][a.Name].Compare(firstSeen[uid][b.Name])
		})
		if t := started[uid]; !t.IsZero() {
			pod.Status.StartTime = &metav1.Time{Time: t}
		}
		key := podKey(pod.Namespace, pod.Name)
		if other, ok := byName[key]; ok {
			if newest[uid].After(newest[other.UID]) {
				orphans = append(orphans, other)
				byName[key] = pod
			} else {
				orphans = append(orphans, pod)
			}
			continue
		}
		byName[key] = pod
	}
	for _, key := range slices.Sorted(maps.Keys(byName)) {
		pods = append(pods, byName[key])
	}
	return pods, orphans
}
