package kubelet

import (
	"context"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The interfaces below are optional extras a Provider may implement, as in
// virtual-kubelet: the kubelet's HTTPS server (server.go) serves container
// logs, exec and attach through them and answers 501 Not Implemented for a
// provider that lacks one. Before calling them the kubelet has checked that
// the pod is bound to this node and that the container is in its spec (and,
// for logs, that the container has started), so a provider only runs the
// request.

// LogOptions are the query parameters of /containerLogs, as in
// corev1.PodLogOptions. Pointers are nil when not given.
type LogOptions struct {
	// Follow keeps the stream open, sending new lines as they come, until
	// the container stops or ctx ends.
	Follow bool
	// Previous asks for the logs of the container's previous instance
	// (before its last restart).
	Previous bool
	// Timestamps prefixes every line with its RFC 3339 time
	// (2006-01-02T15:04:05.000000000Z07:00) and a space.
	Timestamps bool
	// TailLines: only the last N lines.
	TailLines *int64
	// LimitBytes: stop after N bytes. The kubelet enforces it too, so a
	// provider may ignore it.
	LimitBytes *int64
	// SinceSeconds / SinceTime: only lines logged after then (at most one is set).
	SinceSeconds *int64
	SinceTime    *metav1.Time
}

// ContainerLogger serves `kubectl logs`.
type ContainerLogger interface {
	// GetContainerLogs returns the container's log; the kubelet closes it.
	// With opts.Follow the reader blocks for new lines and ends (io.EOF)
	// when the container stops or ctx ends. An error is reported to the
	// client as 400 Bad Request with its text.
	GetContainerLogs(ctx context.Context, namespace, pod, container string, opts LogOptions) (io.ReadCloser, error)
}

// TermSize is a terminal's size, as remotecommand clients send it on the
// resize channel.
type TermSize struct {
	Width  uint16
	Height uint16
}

// AttachIO is one exec or attach session's streams.
type AttachIO interface {
	// Stdin is nil unless the client asked for stdin; it reaches io.EOF
	// when the client closes its stdin.
	Stdin() io.Reader
	// Stdout and Stderr are nil unless the client asked for them (with a
	// TTY there is no separate stderr).
	Stdout() io.WriteCloser
	Stderr() io.WriteCloser
	// TTY says whether the client wants a terminal.
	TTY() bool
	// Resize delivers terminal size changes (only with a TTY). Reading it
	// is optional: sizes a provider does not read are dropped. It is closed
	// when the session ends.
	Resize() <-chan TermSize
}

// ContainerExecer serves `kubectl exec`.
type ContainerExecer interface {
	// RunInContainer runs cmd in the container with the session's streams
	// and returns once it has exited. A non-zero exitCode is reported to
	// the client as such ("command terminated with exit code N"); err is
	// for failures to run the command at all. ctx ends when the client
	// goes away.
	RunInContainer(ctx context.Context, namespace, pod, container string, cmd []string, attach AttachIO) (exitCode int, err error)
}

// ContainerAttacher serves `kubectl attach`.
type ContainerAttacher interface {
	// AttachToContainer connects the session to the container's main
	// process until the process ends, the client goes away (ctx) or the
	// provider decides the session is over.
	AttachToContainer(ctx context.Context, namespace, pod, container string, attach AttachIO) error
}

// PortForwarder serves `kubectl port-forward`.
type PortForwarder interface {
	// PortForward connects stream to the pod's port (in the pod's network)
	// and returns when either side is done; it need not close stream. An
	// error is shown to the client.
	PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error
}
