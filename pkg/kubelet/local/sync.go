package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

const (
	// volumeResync is how often configMap, secret, downwardAPI and
	// projected volumes are refreshed (Kubernetes' sync period).
	volumeResync = time.Minute
	// keepAttempts is how many attempts of one container stay in the
	// runtime: the current one and the previous (for lastState and logs
	// --previous).
	keepAttempts = 2

	reasonDeadlineExceeded = "DeadlineExceeded"
)

// sync moves the pod one step toward its spec: sandbox and network,
// volumes, init containers in order, then the app containers.
func (w *podWorker) sync(ctx context.Context) error {
	pod, partial, gen := w.current()
	all, err := w.p.list.get(ctx, w.p.rt, -1)
	if err != nil {
		return err
	}
	w.obs = observe(all, w.uid)
	if partial {
		// Adopted after a restart: watch until the kubelet hands over the
		// spec, and touch nothing.
		if sb := w.obs.runningSandbox(); sb != nil && w.sandboxID != sb.ID {
			w.sandboxID = sb.ID
			w.podReady = true
		}
		return nil
	}
	w.adoptAPIStatus(pod)
	if !w.terminal && w.deadlinePassed(pod) {
		w.terminal, w.deadline = true, true
		w.p.event(pod, "", corev1.EventTypeNormal, reasonDeadlineExceeded, "Pod was active on the node longer than the specified deadline")
	}
	if w.terminal {
		return w.syncTerminated(ctx, pod)
	}

	acted := false
	defer func() {
		if acted && ctx.Err() == nil {
			w.p.list.invalidate()
			if all, err := w.p.list.get(ctx, w.p.rt, 0); err == nil {
				w.obs = observe(all, w.uid)
			}
		}
	}()

	if err := w.syncVolumes(ctx, pod, gen); err != nil {
		w.volumeErr = err.Error()
		return nil
	}
	w.volumeErr = ""
	sb, sbActed, err := w.syncSandbox(ctx, pod)
	acted = acted || sbActed
	if err != nil || sb == nil {
		return err
	}
	if err := w.syncPodFiles(pod); err != nil {
		w.volumeErr = err.Error()
		return err
	}
	// Ephemeral containers start even while the pod initialises.
	acted = w.syncEphemeralContainers(ctx, pod, sb) || acted
	initDone, initActed := w.syncInitContainers(ctx, pod, sb)
	acted = acted || initActed
	if !initDone {
		return nil
	}
	if w.resize(ctx, pod, sb) {
		acted = true
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if w.syncContainer(ctx, pod, c, false, sb) {
			acted = true
		}
	}
	if w.gc(ctx, pod, sb) {
		acted = true
	}
	return nil
}

// deadlinePassed says whether spec.activeDeadlineSeconds has run out.
func (w *podWorker) deadlinePassed(pod *corev1.Pod) bool {
	d := pod.Spec.ActiveDeadlineSeconds
	if d == nil || w.startTime.IsZero() {
		return false
	}
	return w.p.clock.Since(w.startTime.Time) >= time.Duration(*d)*time.Second
}

// syncTerminated winds down a pod that has finished: its probes stop,
// anything still running is stopped (a passed deadline), the network is
// torn down and the sandbox stopped. Its containers stay, with their
// logs, until the pod is deleted.
func (w *podWorker) syncTerminated(ctx context.Context, pod *corev1.Pod) error {
	w.stopProbes("")
	w.podReady = false
	grace := gracePeriod(&corev1.Pod{}, pod)
	var errs []error
	fail := func(err error) { errs = append(errs, err) }
	acted := false
	var running []runtime.ContainerStatus
	for _, c := range w.obs.containers {
		if c.State == runtime.StateRunning {
			acted = true
			w.p.event(pod, c.Name, corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
			running = append(running, c)
		}
	}
	if err := w.p.stopContainers(ctx, pod, w.podIP, running, grace); err != nil {
		fail(err)
	}
	if !w.netDown {
		ports := hostPorts(pod)
		ok := true
		for _, sb := range w.obs.sandboxes {
			if err := w.p.teardownNetwork(ctx, sb, ports); err != nil {
				fail(err)
				ok = false
			}
		}
		w.netDown = ok
	}
	for _, sb := range w.obs.sandboxes {
		if sb.State == runtime.StateRunning && w.netDown {
			acted = true
			if err := w.p.rt.StopContainer(ctx, sb.ID, 0); err != nil {
				fail(err)
			}
		}
	}
	if acted {
		w.p.list.invalidate()
		if all, err := w.p.list.get(ctx, w.p.rt, 0); err == nil {
			w.obs = observe(all, w.uid)
		}
	}
	if len(errs) == 0 && !w.obs.anyRunning() {
		// A finished pod holds its node's shared mounts no longer, nor
		// the memory of its tmpfs volumes.
		w.p.releaseGlusterfs(w.uid)
		if err := w.p.unmountImageVolumes(ctx, w.uid); err != nil {
			return err
		}
		if err := w.p.unmountEmptyDirs(w.uid); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// syncVolumes writes the pod's volumes the first time, and refreshes
// them every volumeResync and on spec or metadata changes. A failed
// refresh keeps the volumes as they were.
func (w *podWorker) syncVolumes(ctx context.Context, pod *corev1.Pod, gen uint64) error {
	if w.volumesOK && w.volumesGen == gen && w.p.clock.Since(w.volumesAt) < volumeResync {
		return nil
	}
	err := w.p.setupVolumes(ctx, pod)
	if err != nil {
		w.p.event(pod, "", corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed: %v", err)
		if w.volumesOK {
			w.log.Warn("refresh volumes", "err", err)
			w.volumesAt = w.p.clock.Now()
			return nil
		}
		return err
	}
	w.volumesOK, w.volumesGen, w.volumesAt = true, gen, w.p.clock.Now()
	return nil
}

// syncPodFiles writes /etc/hosts, resolv.conf and hostname for the pod
// once it has its address.
func (w *podWorker) syncPodFiles(pod *corev1.Pod) error {
	if w.etcFor == w.podIP+"/"+strconv.FormatUint(w.volumesGen, 10) {
		return nil
	}
	if err := w.p.writePodFiles(pod, w.podIP); err != nil {
		return fmt.Errorf("write pod files: %w", err)
	}
	w.etcFor = w.podIP + "/" + strconv.FormatUint(w.volumesGen, 10)
	return nil
}

// syncSandbox makes sure the pod has one running sandbox on the pod
// network and returns it; nil when it has none yet (podErr says why).
func (w *podWorker) syncSandbox(ctx context.Context, pod *corev1.Pod) (*runtime.ContainerStatus, bool, error) {
	running := w.obs.runningSandbox()
	acted := false
	if running == nil && w.ranBefore(pod) && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		// The sandbox died under containers that must not run again:
		// what ran stays as it is and the pod finishes.
		return nil, w.stopOrphans(ctx, pod), nil
	}
	for _, s := range w.obs.sandboxes {
		if running != nil && s.ID == running.ID {
			continue
		}
		// A dead or superseded sandbox: its containers go with it, and
		// the next attempts count on from theirs.
		for _, c := range w.obs.containers {
			if c.SandboxID == s.ID {
				w.restartBase[c.Name] = max(w.restartBase[c.Name], restartCountOf(c)+1)
			}
		}
		if err := w.p.teardownNetwork(ctx, s, hostPorts(pod)); err != nil {
			return nil, acted, err
		}
		if err := w.p.rt.RemoveSandbox(ctx, s.ID); err != nil {
			return nil, acted, err
		}
		w.log.Info("removed dead sandbox", "sandbox", s.ID)
		acted = true
	}
	if running != nil {
		if w.sandboxID != running.ID || w.podIP == "" || !w.podReady {
			ip, err := w.sandboxIP(ctx, pod, running.ID, running.NetNSPath)
			if err != nil {
				w.podErr = err.Error()
				return nil, acted, nil
			}
			w.sandboxID, w.podIP, w.podReady, w.podErr = running.ID, ip, true, ""
		}
		return running, acted, nil
	}

	w.podReady = false
	if w.p.sandboxBackOff.IsInBackOffSinceUpdate(string(w.uid), w.p.clock.Now()) {
		return nil, acted, nil
	}
	hostNet := pod.Spec.HostNetwork
	var n network.Network
	if !hostNet {
		var reason string
		if n, reason = w.p.network(ctx); n == nil {
			w.podErr = reason
			return nil, acted, nil
		}
	}
	labels := map[string]string{}
	if hostNet {
		labels[labelHostNetwork] = "true"
	}
	cfg := runtime.SandboxConfig{
		Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID),
		Hostname:  podHostname(pod),
		Labels:    labels,
		Resources: podResources(pod),
		// The node's namespaces, which the pod asks to share.
		HostNetwork: hostNet, HostPID: pod.Spec.HostPID, HostIPC: pod.Spec.HostIPC,
	}
	// CNI ADD runs while the pause container starts (AttachNetwork). What
	// it did is undone should either fail: it tells which sandbox it
	// attached in attachedID (read once CreateSandbox has returned).
	ports := hostPorts(pod)
	var (
		attached             *network.Result
		attachErr            error
		attachedID, attachNS string
	)
	if !hostNet {
		cfg.AttachNetwork = func(ctx context.Context, id, netns string) error {
			attachedID, attachNS = id, netns
			attached, attachErr = n.Setup(ctx, id, netns, ports)
			return attachErr
		}
	}
	sb, err := w.p.rt.CreateSandbox(ctx, cfg)
	if err == nil && !hostNet && attached == nil {
		err = errors.New("the runtime did not attach the sandbox to the pod network")
		if rerr := w.p.rt.RemoveSandbox(context.WithoutCancel(ctx), sb.ID); rerr != nil {
			w.log.Warn("remove failed sandbox", "sandbox", sb.ID, "err", rerr)
		}
	}
	if err != nil {
		if attachedID != "" {
			acted = true
			if err := n.Teardown(context.WithoutCancel(ctx), attachedID, attachNS, ports); err != nil {
				w.log.Warn("tear down the network of a failed sandbox", "sandbox", attachedID, "err", err)
			}
		}
		if attachErr != nil {
			w.sandboxFailed(pod, fmt.Sprintf("failed to set up the network of pod sandbox %s: %v", attachedID, attachErr))
		} else {
			w.sandboxFailed(pod, fmt.Sprintf("failed to create pod sandbox: %v", err))
		}
		return nil, acted, nil
	}
	acted = true
	ip := w.p.cfg.NodeIP
	if !hostNet {
		ip = attached.IP.String()
	}
	w.p.sandboxBackOff.DeleteEntry(string(w.uid))
	w.sandboxID, w.podIP, w.podReady, w.podErr = sb.ID, ip, true, ""
	w.podCgroup = cfg.Resources
	w.log.Info("sandbox ready", "sandbox", sb.ID, "ip", ip)
	return &runtime.ContainerStatus{
		ID: sb.ID, IsSandbox: true, PodNamespace: pod.Namespace, PodName: pod.Name, PodUID: string(pod.UID),
		Labels: labels, State: runtime.StateRunning, NetNSPath: sb.NetNSPath, CgroupParent: sb.CgroupParent,
	}, acted, nil
}

func (w *podWorker) sandboxFailed(pod *corev1.Pod, msg string) {
	w.podErr = msg
	w.p.event(pod, "", corev1.EventTypeWarning, "FailedCreatePodSandBox", "%s", msg)
	w.p.sandboxBackOff.Next(string(w.uid), w.p.clock.Now())
	w.log.Warn("pod sandbox", "err", msg)
}

// sandboxIP finds the address of a sandbox this worker did not create
// (an adopted pod): the node's for hostNetwork, else what CNI cached;
// a sandbox CNI knows nothing of is attached again.
func (w *podWorker) sandboxIP(ctx context.Context, pod *corev1.Pod, id, netns string) (string, error) {
	if pod.Spec.HostNetwork {
		return w.p.cfg.NodeIP, nil
	}
	n, reason := w.p.network(ctx)
	if n == nil {
		return "", errors.New(reason)
	}
	res, err := n.Status(ctx, id, netns)
	if err == nil && res != nil {
		return res.IP.String(), nil
	}
	res, err = n.Setup(ctx, id, netns, hostPorts(pod))
	if err != nil {
		return "", fmt.Errorf("pod network: %w", err)
	}
	return res.IP.String(), nil
}

// ranBefore says whether any app container of the pod was ever created.
func (w *podWorker) ranBefore(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if len(w.obs.instances("", c.Name)) > 0 || w.restartBase[c.Name] > 0 {
			return true
		}
	}
	return false
}

// stopOrphans stops containers still running in a dead sandbox.
func (w *podWorker) stopOrphans(ctx context.Context, pod *corev1.Pod) bool {
	acted := false
	for _, c := range w.obs.containers {
		if c.State == runtime.StateRunning {
			acted = true
			if err := w.p.rt.StopContainer(ctx, c.ID, gracePeriod(&corev1.Pod{}, pod)); err != nil {
				w.log.Warn("stop container of a dead sandbox", "container", c.Name, "err", err)
			}
		}
	}
	return acted
}

// currentSandboxID is the sandbox whose containers make the status: the
// running one, else the newest.
func (w *podWorker) currentSandboxID() string {
	if sb := w.obs.runningSandbox(); sb != nil {
		return sb.ID
	}
	if len(w.obs.sandboxes) > 0 {
		return w.obs.sandboxes[0].ID
	}
	return ""
}

// syncInitContainers runs the init containers one after the other; done
// once all have succeeded (restartable ones: started).
func (w *podWorker) syncInitContainers(ctx context.Context, pod *corev1.Pod, sb *runtime.ContainerStatus) (done, acted bool) {
	if len(pod.Spec.InitContainers) == 0 {
		return true, false
	}
	// App containers exist: initialisation happened in this sandbox, even
	// if the init containers have since been removed.
	for _, c := range pod.Spec.Containers {
		if len(w.obs.instances(sb.ID, c.Name)) > 0 {
			for i := range pod.Spec.InitContainers {
				if c := &pod.Spec.InitContainers[i]; isRestartable(c) {
					acted = w.syncContainer(ctx, pod, c, true, sb) || acted
				}
			}
			return true, acted
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isRestartable(c) {
			acted = w.syncContainer(ctx, pod, c, true, sb) || acted
			insts := w.obs.instances(sb.ID, c.Name)
			if len(insts) == 0 || insts[0].State != runtime.StateRunning || !w.started(insts[0].ID) {
				return false, acted
			}
			continue
		}
		insts := w.obs.instances(sb.ID, c.Name)
		if len(insts) == 0 {
			return false, w.startContainer(ctx, pod, c, true, w.nextAttempt(c.Name, nil), sb) || acted
		}
		latest := insts[0]
		state, code := w.effectiveState(latest)
		switch {
		case state == runtime.StateRunning:
			w.clearWaiting(c.Name)
			return false, acted
		case state == runtime.StateCreated:
			return false, w.replaceCreated(ctx, pod, c, true, latest, sb) || acted
		case code == 0:
			w.clearWaiting(c.Name)
			continue
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			// The pod has failed.
			return false, acted
		case w.inCrashBackOff(pod, c, latest):
			return false, acted
		default:
			return false, w.startContainer(ctx, pod, c, true, w.nextAttempt(c.Name, insts), sb) || acted
		}
	}
	return true, acted
}

// effectiveState is a container's state, with a failed start counting as
// an exit with code 128 (as containerd's StartError).
func (w *podWorker) effectiveState(c runtime.ContainerStatus) (runtime.ContainerState, int) {
	if _, failed := w.startErrs[c.ID]; failed && c.State != runtime.StateRunning {
		return runtime.StateExited, 128
	}
	if c.State == runtime.StateUnknown {
		return runtime.StateExited, 255
	}
	return c.State, c.ExitCode
}

// syncContainer keeps one app (or restartable init) container running as
// the restart policy says. It reports whether it changed anything.
func (w *podWorker) syncContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, isInit bool, sb *runtime.ContainerStatus) bool {
	insts := w.obs.instances(sb.ID, c.Name)
	if len(insts) == 0 {
		return w.startContainer(ctx, pod, c, isInit, w.nextAttempt(c.Name, nil), sb)
	}
	latest := insts[0]
	state, code := w.effectiveState(latest)
	switch state {
	case runtime.StateCreated:
		return w.replaceCreated(ctx, pod, c, isInit, latest, sb)
	case runtime.StateRunning:
		w.clearWaiting(c.Name)
		// Kill and start again at once, as Kubernetes does: after a spec
		// change whatever the policy, after a failed liveness or startup
		// probe unless the policy is Never.
		restart := isRestartable(c) || pod.Spec.RestartPolicy != corev1.RestartPolicyNever
		var why string
		var grace time.Duration
		if img := latest.Labels[labelImage]; img != "" && img != c.Image {
			why, grace, restart = fmt.Sprintf("Container %s definition changed", c.Name), containerGrace(pod, nil), true
		} else if w.resizeRestartNeeded(c, latest) {
			why, grace, restart = fmt.Sprintf("Container %s resize requires restart", c.Name), containerGrace(pod, nil), true
		} else if kind, probe := w.probeFailure(latest.ID); kind != "" {
			why, grace = fmt.Sprintf("Container %s failed %s probe", c.Name, kind), containerGrace(pod, probe)
		} else {
			w.ensureProbes(pod, c, latest, w.podIP)
			return false
		}
		if restart {
			why += ", will be restarted"
		}
		w.killContainer(ctx, pod, c, latest.ID, grace, why)
		if restart && ctx.Err() == nil {
			w.startContainer(ctx, pod, c, isInit, w.nextAttempt(c.Name, insts), sb)
		}
		return true
	}
	w.stopProbes(latest.ID)
	policy := pod.Spec.RestartPolicy
	if isRestartable(c) {
		policy = corev1.RestartPolicyAlways
	}
	restart := shouldRestart(policy, code) || (w.killed[latest.ID] && policy != corev1.RestartPolicyNever)
	if img := latest.Labels[labelImage]; img != "" && img != c.Image && policy != corev1.RestartPolicyNever {
		restart = true
	}
	if !restart {
		w.clearWaiting(c.Name)
		return false
	}
	if w.inCrashBackOff(pod, c, latest) {
		return false
	}
	return w.startContainer(ctx, pod, c, isInit, w.nextAttempt(c.Name, insts), sb)
}

// shouldRestart is the restart policy's verdict on a container that
// exited with code.
func shouldRestart(policy corev1.RestartPolicy, code int) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	default:
		return true
	}
}

func isRestartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// nextAttempt is the attempt number of a container's next instance.
func (w *podWorker) nextAttempt(name string, insts []runtime.ContainerStatus) int {
	n := w.restartBase[name]
	if len(insts) > 0 {
		n = max(n, restartCountOf(insts[0])+1)
	}
	return n
}

// replaceCreated removes a container that was created but never started
// (the kubelet stopped in between) and starts a new one in its place.
func (w *podWorker) replaceCreated(ctx context.Context, pod *corev1.Pod, c *corev1.Container, isInit bool, stale runtime.ContainerStatus, sb *runtime.ContainerStatus) bool {
	if err := w.p.rt.RemoveContainer(ctx, stale.ID); err != nil {
		w.log.Warn("remove unstarted container", "container", c.Name, "err", err)
		return false
	}
	w.startContainer(ctx, pod, c, isInit, restartCountOf(stale), sb)
	return true
}

// inCrashBackOff applies the crash loop back-off to a container that
// exited: true (and the container waits in CrashLoopBackOff) while it
// lasts; otherwise the back-off grows for the next time.
func (w *podWorker) inCrashBackOff(pod *corev1.Pod, c *corev1.Container, latest runtime.ContainerStatus) bool {
	key := string(pod.UID) + "/" + c.Name
	finished := latest.FinishedAt
	if finished.IsZero() {
		finished = w.p.clock.Now()
	}
	b := w.p.crashBackOff
	if b.IsInBackOffSince(key, finished) {
		w.setWaiting(c.Name, "CrashLoopBackOff",
			fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", b.Get(key), c.Name, formatPod(pod)))
		if !w.backOffSeen[latest.ID] {
			w.backOffSeen[latest.ID] = true
			w.p.event(pod, c.Name, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, formatPod(pod))
		}
		return true
	}
	b.Next(key, finished)
	return false
}

// formatPod names a pod in messages as Kubernetes does.
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// startContainer pulls the image as its policy says, builds the
// container's configuration, creates and starts it as attempt. Failures
// become the container's waiting state.
func (w *podWorker) startContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, isInit bool, attempt int, sb *runtime.ContainerStatus) bool {
	return w.runContainer(ctx, pod, c, sb, func() (runtime.ContainerConfig, error) {
		return w.p.containerConfig(ctx, pod, c, isInit, attempt, w.podIP)
	})
}

// runContainer pulls c's image, creates the container configure says
// and starts it, recording failures as its waiting state and in events.
func (w *podWorker) runContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sb *runtime.ContainerStatus, configure func() (runtime.ContainerConfig, error)) bool {
	if !w.pullImage(ctx, pod, c) || !w.imageVolumes(ctx, pod, c) {
		return false
	}
	cfg, err := configure()
	if err != nil {
		w.setWaiting(c.Name, "CreateContainerConfigError", err.Error())
		w.p.event(pod, c.Name, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return false
	}
	id, err := w.p.rt.CreateContainer(ctx, &runtime.Sandbox{ID: sb.ID, NetNSPath: sb.NetNSPath, CgroupParent: sb.CgroupParent}, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		w.setWaiting(c.Name, "CreateContainerError", err.Error())
		w.p.event(pod, c.Name, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return false
	}
	w.p.event(pod, c.Name, corev1.EventTypeNormal, "Created", "Created container: %s", c.Name)
	w.clearWaiting(c.Name)
	if err := w.p.rt.StartContainer(ctx, id); err != nil {
		w.startErrs[id] = err.Error()
		w.p.event(pod, c.Name, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return true
	}
	w.p.event(pod, c.Name, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
	w.postStart(ctx, pod, c, id)
	return true
}

// pullImage makes the container's image present; false (and the
// container waits) when it is not.
func (w *podWorker) pullImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container) bool {
	return w.pull(ctx, pod, c.Name, c.Name, c.Image, pullPolicy(c))
}

// pull makes image present as policy says, with the kubelet's events
// (about container event, "" for the pod), its back-off per image, and
// the waiting reason of the container waiting (ErrImagePull,
// ImagePullBackOff, ErrImageNeverPull, InvalidImageName) when it fails.
func (w *podWorker) pull(ctx context.Context, pod *corev1.Pod, waiting, event, image string, policy corev1.PullPolicy) bool {
	key := string(pod.UID) + "/" + image
	b := w.p.pullBackOff
	if b.IsInBackOffSinceUpdate(key, w.p.clock.Now()) {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		if prev, ok := w.waiting[waiting]; ok && prev.reason == "ErrImagePull" {
			msg += ": ErrImagePull: " + prev.message
		} else if ok && prev.reason == "ImagePullBackOff" {
			msg = prev.message
		}
		w.setWaiting(waiting, "ImagePullBackOff", msg)
		return false
	}
	start := w.p.clock.Now()
	pulled, err := w.p.rt.EnsureImage(ctx, image, policy)
	switch {
	case err == nil && pulled:
		b.DeleteEntry(key)
		w.p.event(pod, event, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v", image, w.p.clock.Since(start).Round(time.Millisecond))
		return true
	case err == nil:
		b.DeleteEntry(key)
		w.p.event(pod, event, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
		return true
	case ctx.Err() != nil:
		return false
	case errors.Is(err, runtime.ErrImageNeverPull):
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		w.setWaiting(waiting, "ErrImageNeverPull", msg)
		w.p.event(pod, event, corev1.EventTypeWarning, "ErrImageNeverPull", "%s", msg)
	case errors.Is(err, runtime.ErrInvalidImageName):
		w.setWaiting(waiting, "InvalidImageName", err.Error())
		w.p.event(pod, event, corev1.EventTypeWarning, "InspectFailed", "%v", err)
	default:
		w.setWaiting(waiting, "ErrImagePull", err.Error())
		w.p.event(pod, event, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", image, err)
		b.Next(key, w.p.clock.Now())
	}
	return false
}

// pullPolicy is the container's policy, defaulted as the API does.
func pullPolicy(c *corev1.Container) corev1.PullPolicy {
	return defaultPullPolicy(c.Image, c.ImagePullPolicy)
}

// defaultPullPolicy is policy, or when it is empty the API's default for
// image: Always for :latest or no tag, IfNotPresent otherwise (a
// container's imagePullPolicy and an image volume's pullPolicy alike).
func defaultPullPolicy(image string, policy corev1.PullPolicy) corev1.PullPolicy {
	if policy != "" {
		return policy
	}
	ref, err := runtime.NormalizeImage(image)
	if err != nil || strings.HasSuffix(ref, ":latest") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// killContainer stops a running container so it restarts (a failed
// probe, a changed image, a failed postStart hook), its preStop hook
// first.
func (w *podWorker) killContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, grace time.Duration, why string) {
	w.p.event(pod, c.Name, corev1.EventTypeNormal, "Killing", "%s", why)
	w.log.Info("killing container", "container", c.Name, "reason", why)
	w.stopProbes(id)
	w.killed[id] = true
	inst := []runtime.ContainerStatus{{ID: id, Name: c.Name}}
	if err := w.p.stopContainers(ctx, pod, w.podIP, inst, grace); err != nil && ctx.Err() == nil {
		w.log.Warn("stop container", "container", c.Name, "err", err)
	}
}

// containerGrace is how long a container gets to stop when it is
// restarted: the probe's terminationGracePeriodSeconds, else the pod's.
func containerGrace(pod *corev1.Pod, probe *corev1.Probe) time.Duration {
	if probe != nil && probe.TerminationGracePeriodSeconds != nil {
		return time.Duration(max(*probe.TerminationGracePeriodSeconds, 0)) * time.Second
	}
	return gracePeriod(&corev1.Pod{}, pod)
}

// gc removes attempts older than the last keepAttempts of each container
// of the running sandbox, with their log and termination files, and
// rotates the logs of running containers that grew too big.
func (w *podWorker) gc(ctx context.Context, pod *corev1.Pod, sb *runtime.ContainerStatus) bool {
	acted := false
	seen := map[string]int{}
	for _, c := range w.obs.containers {
		if c.SandboxID != sb.ID {
			continue
		}
		if c.State == runtime.StateRunning && c.LogPath != "" {
			if err := rotateLog(c.LogPath, maxLogSize, maxLogFiles-1, w.p.clock.Now()); err != nil {
				w.log.Warn("rotate container log", "container", c.Name, "err", err)
			}
		}
		seen[c.Name]++
		if seen[c.Name] <= keepAttempts || c.State == runtime.StateRunning {
			continue
		}
		if err := w.p.rt.RemoveContainer(ctx, c.ID); err != nil {
			w.log.Warn("remove old container", "container", c.Name, "err", err)
			continue
		}
		acted = true
		n := restartCountOf(c)
		removeLogs(w.p.logPath(pod, c.Name, n))
		_ = os.Remove(w.p.terminationFile(pod.UID, c.Name, n))
		delete(w.startErrs, c.ID)
		delete(w.killed, c.ID)
		delete(w.termMsgs, c.ID)
		delete(w.backOffSeen, c.ID)
	}
	return acted
}

// hostPorts are the pod's hostPort mappings, for CNI's portmap.
func hostPorts(pod *corev1.Pod) []network.PortMapping {
	var out []network.PortMapping
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					out = append(out, network.PortMapping{
						HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: string(p.Protocol), HostIP: p.HostIP,
					})
				}
			}
		}
	}
	return out
}
