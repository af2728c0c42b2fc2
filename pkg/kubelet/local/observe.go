package local

import (
	"cmp"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// Labels this package puts on sandboxes and containers, next to the
// runtime's own pod identity labels; a restarted kubelet reads them back.
const (
	labelPrefix = "local.minik8s.io/"
	// labelRestartCount is a container's attempt number (restartCount).
	labelRestartCount = labelPrefix + "restart-count"
	// labelInit marks init containers.
	labelInit = labelPrefix + "init"
	// labelEphemeral marks ephemeral containers.
	labelEphemeral = labelPrefix + "ephemeral"
	// labelImage is the image the container's spec named; a spec naming
	// another one restarts the container.
	labelImage = labelPrefix + "image"
	// labelResources are the requests and limits the container runs with
	// (JSON), changed by an in-place resize.
	labelResources = labelPrefix + "resources"
	// labelHostNetwork marks the sandbox of a hostNetwork pod.
	labelHostNetwork = labelPrefix + "host-network"
)

// podObservation is what the runtime holds for one pod.
type podObservation struct {
	sandboxes  []runtime.ContainerStatus // newest first
	containers []runtime.ContainerStatus // latest attempt first
}

// observe picks pod uid's sandboxes and containers out of a relist.
func observe(all []runtime.ContainerStatus, uid types.UID) podObservation {
	var o podObservation
	for _, c := range all {
		if c.PodUID != string(uid) || uid == "" {
			continue
		}
		if c.IsSandbox {
			o.sandboxes = append(o.sandboxes, c)
		} else {
			o.containers = append(o.containers, c)
		}
	}
	slices.SortStableFunc(o.sandboxes, func(a, b runtime.ContainerStatus) int {
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	slices.SortStableFunc(o.containers, newestFirst)
	return o
}

func newestFirst(a, b runtime.ContainerStatus) int {
	if c := cmp.Compare(restartCountOf(b), restartCountOf(a)); c != 0 {
		return c
	}
	return b.CreatedAt.Compare(a.CreatedAt)
}

// anyRunning says whether a container or sandbox of the pod runs.
func (o podObservation) anyRunning() bool {
	for _, list := range [][]runtime.ContainerStatus{o.containers, o.sandboxes} {
		for _, c := range list {
			if c.State == runtime.StateRunning {
				return true
			}
		}
	}
	return false
}

// runningSandbox is the newest running sandbox, or nil.
func (o podObservation) runningSandbox() *runtime.ContainerStatus {
	for i := range o.sandboxes {
		if o.sandboxes[i].State == runtime.StateRunning {
			return &o.sandboxes[i]
		}
	}
	return nil
}

// instances are the attempts of container name, latest first; only those
// in sandboxID unless it is empty.
func (o podObservation) instances(sandboxID, name string) []runtime.ContainerStatus {
	var out []runtime.ContainerStatus
	for _, c := range o.containers {
		if c.Name == name && (sandboxID == "" || c.SandboxID == sandboxID) {
			out = append(out, c)
		}
	}
	return out
}

// restartCountOf reads a container's attempt number.
func restartCountOf(c runtime.ContainerStatus) int {
	n, _ := strconv.Atoi(c.Labels[labelRestartCount])
	return n
}
