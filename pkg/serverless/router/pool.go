package router

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// byFunction indexes the pod cache by "<namespace>/<function>".
const byFunction = "function"

// probeTimeout bounds one GET /healthz of a pod.
const probeTimeout = 500 * time.Millisecond

// pokeEvery is how often a held request's function is poked again.
const pokeEvery = time.Second

func functionIndex(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	fn, ok := pod.Labels[fnmeta.FunctionLabel]
	if !ok {
		return nil, nil
	}
	return []string{pod.Namespace + "/" + fn}, nil
}

// podState is what the router knows of one pod beyond the cache.
type podState struct {
	inFlight int
	// probedIP is the IP at which the router's probe last succeeded.
	probedIP string
	// suspect: a connection to the pod failed; it is used again only
	// after a probe succeeds.
	suspect   bool
	probing   bool
	lastProbe time.Time
	// fails counts the probes that failed in a row.
	fails int
}

// slowProbeAfter is how many failed probes in a row (5s at 25ms) make a
// pod probed only every slowProbe: a revision that never becomes healthy
// is not hammered.
const (
	slowProbeAfter = 200
	slowProbe      = 250 * time.Millisecond
)

// instance is the pod one attempt of a request goes to.
type instance struct {
	uid  types.UID
	name string
	ip   string
	rev  int64
}

// probeTarget is a pod worth probing.
type probeTarget struct {
	uid types.UID
	ip  string
}

func revisionOf(pod *corev1.Pod) int64 {
	rev, _ := strconv.ParseInt(pod.Labels[fnmeta.RevisionLabel], 10, 64)
	return rev
}

// live: the pod may serve, or soon: it has an IP, is not being deleted
// and has not finished.
func live(pod *corev1.Pod) bool {
	return pod.Status.PodIP != "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// stateLocked is the pod's state, made on first use.
func (r *Router) stateLocked(uid types.UID) *podState {
	st := r.pods[uid]
	if st == nil {
		st = &podState{}
		r.pods[uid] = st
	}
	return st
}

// usableLocked: the pod takes requests (see the package doc).
func (r *Router) usableLocked(pod *corev1.Pod) bool {
	if !live(pod) || pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodPending {
		return false
	}
	st := r.pods[pod.UID]
	if st != nil && st.probedIP == pod.Status.PodIP {
		return true
	}
	return podReady(pod) && (st == nil || !st.suspect)
}

// pickLocked chooses the pod for one request of key and counts the
// request on it; ok is false when no pod is usable. It also returns the
// pods worth probing: the live, unusable pods newer than the chosen
// revision (all of them when none was chosen).
func (r *Router) pickLocked(key types.NamespacedName) (inst instance, ok bool, probe []probeTarget) {
	objs, _ := r.podIndex.ByIndex(byFunction, key.Namespace+"/"+key.Name)
	// Once a revision has answered, requests never go back to an older
	// one while a pod of it lives: a new pod's connection failing (and
	// the pod waiting for a probe again) holds requests for a moment
	// instead of sending them to the revision the update replaced.
	floor := r.answered[key]
	if floor > 0 && !slices.ContainsFunc(objs, func(obj any) bool {
		pod := obj.(*corev1.Pod)
		return live(pod) && revisionOf(pod) >= floor
	}) {
		floor = 0
	}
	var (
		best      []*corev1.Pod
		bestRev   int64 = -1
		bestLoad  int
		unusables []*corev1.Pod
	)
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		rev := revisionOf(pod)
		if !r.usableLocked(pod) || rev < floor {
			if live(pod) {
				unusables = append(unusables, pod)
			}
			continue
		}
		load := 0
		if st := r.pods[pod.UID]; st != nil {
			load = st.inFlight
		}
		switch {
		case rev > bestRev || rev == bestRev && load < bestLoad:
			best, bestRev, bestLoad = []*corev1.Pod{pod}, rev, load
		case rev == bestRev && load == bestLoad:
			best = append(best, pod)
		}
	}
	for _, pod := range unusables {
		if rev := revisionOf(pod); rev > bestRev && rev >= floor {
			probe = append(probe, probeTarget{uid: pod.UID, ip: pod.Status.PodIP})
		}
	}
	if len(best) == 0 {
		return instance{}, false, probe
	}
	pod := best[rand.IntN(len(best))]
	r.stateLocked(pod.UID).inFlight++
	return instance{uid: pod.UID, name: pod.Name, ip: pod.Status.PodIP, rev: bestRev}, true, probe
}

// answeredBy records that inst answered a request of key: its revision
// is the oldest that key's requests may go to from now on.
func (r *Router) answeredBy(key types.NamespacedName, inst instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if inst.rev > r.answered[key] {
		r.answered[key] = inst.rev
	}
}

// release uncounts a request on the pod it went to.
func (r *Router) release(inst instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.pods[inst.uid]; st != nil && st.inFlight > 0 {
		st.inFlight--
	}
}

// distrust marks a pod whose connection failed: it needs a probe again.
func (r *Router) distrust(inst instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stateLocked(inst.uid)
	st.suspect, st.probedIP = true, ""
}

// notifyLocked wakes every held request: a pod changed.
func (r *Router) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Router) podChanged(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notifyLocked()
}

func (r *Router) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if pod, ok := obj.(*corev1.Pod); ok {
		delete(r.pods, pod.UID)
	}
	r.notifyLocked()
}

// startProbes probes the targets not probed within the last
// ProbeInterval, each in a goroutine of its own.
func (r *Router) startProbes(targets []probeTarget) {
	if len(targets) == 0 {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range targets {
		st := r.stateLocked(t.uid)
		interval := r.cfg.ProbeInterval
		if st.fails >= slowProbeAfter {
			interval = max(interval, slowProbe)
		}
		if st.probing || now.Sub(st.lastProbe) < interval {
			continue
		}
		st.probing, st.lastProbe = true, now
		go r.probe(t)
	}
}

// probe asks the pod's GET /healthz; a 200 makes the pod usable.
func (r *Router) probe(t probeTarget) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	ok := false
	url := "http://" + net.JoinHostPort(t.ip, strconv.Itoa(r.cfg.InstancePort)) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = r.probes.RoundTrip(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			ok = resp.StatusCode == http.StatusOK
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.pods[t.uid]
	if st == nil {
		return // deleted meanwhile
	}
	st.probing = false
	if !ok {
		st.fails++
		return
	}
	st.probedIP, st.suspect, st.fails = t.ip, false, 0
	r.notifyLocked()
}

// acquire is the pod for one attempt of a request of key, waiting for
// one (and poking the Scaler) while none is usable, until ctx ends.
// waited reports whether it had to wait.
func (r *Router) acquire(ctx context.Context, key types.NamespacedName) (inst instance, waited bool, err error) {
	timer := time.NewTimer(r.cfg.ProbeInterval)
	defer timer.Stop()
	for {
		r.mu.Lock()
		inst, ok, probe := r.pickLocked(key)
		changed := r.changed
		poke := false
		if !ok {
			d := r.demandLocked(key)
			if now := time.Now(); now.Sub(d.lastPoke) >= pokeEvery {
				d.lastPoke, poke = now, true
			}
		}
		r.mu.Unlock()
		r.startProbes(probe)
		if ok {
			return inst, waited, nil
		}
		if poke {
			r.cfg.Scaler.Poke(key.Namespace, key.Name)
		}
		waited = true
		timer.Reset(r.cfg.ProbeInterval)
		select {
		case <-ctx.Done():
			return instance{}, true, ctx.Err()
		case <-changed:
		case <-timer.C:
		}
	}
}
