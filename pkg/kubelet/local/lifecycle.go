package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// minStopGrace is the least time a container gets between SIGTERM and
// SIGKILL, whatever its grace period and however long its preStop hook
// took: Kubernetes' minimumGracePeriodInSeconds.
const minStopGrace = 2 * time.Second

// Events of failed lifecycle hooks. Their messages do not carry the
// hook's output, which may hold secrets, as in Kubernetes.
const (
	reasonFailedPostStartHook = "FailedPostStartHook"
	reasonFailedPreStopHook   = "FailedPreStopHook"
)

// runHook runs one lifecycle handler (postStart or preStop) of container
// c, running as id, as Kubernetes' kubelet does: exec in the container
// (its exit code decides), an HTTP GET (any response will do; an HTTPS
// request answered in plain HTTP is retried as HTTP), or a sleep. tcpSocket
// is accepted by the API for compatibility only and fails here, as in
// Kubernetes. ctx bounds it.
func (p *Provider) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler) error {
	if podIP == "" {
		podIP = p.cfg.NodeIP
	}
	switch {
	case h.Exec != nil:
		if ok, out := p.execProbe(ctx, id, h.Exec.Command, 0); !ok {
			return fmt.Errorf("exec lifecycle hook (%v) for container %q in pod %q failed: %s", h.Exec.Command, c.Name, formatPod(pod), out)
		}
	case h.HTTPGet != nil:
		_, _, err := p.httpGet(ctx, h.HTTPGet, c, podIP, "lifecycle")
		if err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
			plain := *h.HTTPGet
			plain.Scheme = corev1.URISchemeHTTP
			plain.HTTPHeaders = nil
			for _, hd := range h.HTTPGet.HTTPHeaders {
				if !strings.EqualFold(hd.Name, "Authorization") {
					plain.HTTPHeaders = append(plain.HTTPHeaders, hd)
				}
			}
			if _, _, perr := p.httpGet(ctx, &plain, c, podIP, "lifecycle"); perr == nil {
				p.event(pod, "", corev1.EventTypeWarning, "LifecycleHTTPFallback",
					"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", h.HTTPGet.Host)
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for container %q in pod %q failed: %w", h.HTTPGet.Path, c.Name, formatPod(pod), err)
		}
	case h.Sleep != nil:
		if h.Sleep.Seconds <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sleep lifecycle hook (%d) for container %q in pod %q: container terminated before sleep hook finished", h.Sleep.Seconds, c.Name, formatPod(pod))
		case <-p.clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
	case h.TCPSocket != nil:
		return fmt.Errorf("lifecycle hook of container %q in pod %q: tcpSocket is not supported as a lifecycle handler", c.Name, formatPod(pod))
	default:
		return fmt.Errorf("lifecycle hook of container %q in pod %q has no handler", c.Name, formatPod(pod))
	}
	return nil
}

// postStart runs a container's postStart hook, if it has one, right after
// it started; the container's start waits for it. False when it failed:
// then a FailedPostStartHook event says so and the container is killed
// (its preStop hook runs), to restart as its policy says.
func (w *podWorker) postStart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string) bool {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return true
	}
	err := w.p.runHook(ctx, pod, c, id, w.podIP, c.Lifecycle.PostStart)
	if err == nil || ctx.Err() != nil {
		return err == nil
	}
	w.log.Warn("postStart hook failed", "container", c.Name, "err", err)
	w.p.event(pod, c.Name, corev1.EventTypeWarning, reasonFailedPostStartHook, "PostStartHook failed")
	w.killContainer(ctx, pod, c, id, containerGrace(pod, nil), fmt.Sprintf("FailedPostStartHook: container %s", c.Name))
	return false
}

// preStop runs a container's preStop hook, if it has one and grace is
// not zero, until it ends or deadline passes (a hook still running then
// is cancelled). A hook that fails gives a FailedPreStopHook event.
func (p *Provider) preStop(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, grace time.Duration, deadline time.Time) {
	if c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil || grace <= 0 {
		return
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.runHook(hctx, pod, c, id, podIP, c.Lifecycle.PreStop) }()
	select {
	case err := <-errc:
		if err != nil && ctx.Err() == nil {
			p.log.Warn("preStop hook failed", "pod", podKey(pod.Namespace, pod.Name), "container", c.Name, "err", err)
			p.event(pod, c.Name, corev1.EventTypeWarning, reasonFailedPreStopHook, "PreStopHook failed")
		}
	case <-p.after(deadline.Sub(p.clock.Now())):
		p.log.Info("preStop hook did not finish within the grace period", "pod", podKey(pod.Namespace, pod.Name), "container", c.Name, "grace", grace)
	case <-ctx.Done():
	}
}

// stopContainers stops running containers of pod as Kubernetes' kubelet
// kills a pod, all at once, within grace: each one's preStop hook runs
// first, and what is left of grace (at least minStopGrace) is the time
// between SIGTERM and SIGKILL. Sidecars (restartable init containers)
// stop last, in reverse order, once the app containers and the sidecars
// declared after them have stopped, so that the others' hooks and
// shutdown may still use them; the wait counts against their grace too.
func (p *Provider) stopContainers(ctx context.Context, pod *corev1.Pod, podIP string, insts []runtime.ContainerStatus, grace time.Duration) error {
	deadline := p.clock.Now().Add(grace)
	// rank orders the stops: app containers first (-1), then sidecars
	// from the last declared.
	rank := func(name string) int {
		for i := range pod.Spec.InitContainers {
			if c := &pod.Spec.InitContainers[i]; c.Name == name && isRestartable(c) {
				return i
			}
		}
		return -1
	}
	done := make([]chan struct{}, len(insts))
	for i := range insts {
		done[i] = make(chan struct{})
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for i, inst := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			p.preStop(ctx, pod, podenv.FindContainer(pod, inst.Name), inst.ID, podIP, grace, deadline)
			if mine := rank(inst.Name); mine >= 0 {
				timeout := p.after(deadline.Sub(p.clock.Now()))
			wait:
				for j, other := range insts {
					if r := rank(other.Name); j == i || (r >= 0 && r <= mine) {
						continue
					}
					select {
					case <-done[j]:
					case <-timeout:
						break wait
					case <-ctx.Done():
						break wait
					}
				}
			}
			left := max(deadline.Sub(p.clock.Now()), minStopGrace)
			if err := p.rt.StopContainer(ctx, inst.ID, left); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// after is the provider's clock's After, fired at once when d is not
// positive.
func (p *Provider) after(d time.Duration) <-chan time.Time {
	if d <= 0 {
		ch := make(chan time.Time, 1)
		ch <- p.clock.Now()
		return ch
	}
	return p.clock.After(d)
}
