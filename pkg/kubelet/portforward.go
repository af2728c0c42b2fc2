package kubelet

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// portForwardProtocol is the SPDY subprotocol of port forwarding.
const portForwardProtocol = "portforward.k8s.io"

// servePortForward serves /portForward/{namespace}/{pod} over SPDY, as
// Kubernetes' kubelet: for every forwarded connection the client opens a
// pair of streams with the same requestID header and the pod's port in the
// port header — "error" (where a failure is reported) and "data" (the
// connection's bytes). WebSocket requests (kubectl tries those first, as
// SPDY tunnelled in WebSocket) get 400, on which clients fall back to SPDY.
func (k *Kubelet) servePortForward(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	pod, err := k.pods.Pods(ns).Get(name)
	if err != nil {
		code := http.StatusInternalServerError
		if apierrors.IsNotFound(err) {
			code, err = http.StatusNotFound, fmt.Errorf("pod %q does not exist", name)
		}
		http.Error(w, err.Error(), code)
		return
	}
	forwarder, ok := k.cfg.Provider.(PortForwarder)
	if !ok {
		notImplemented(w, "port forwarding")
		return
	}
	if !httpstream.IsUpgradeRequest(r) {
		http.Error(w, "Upgrade request required", http.StatusBadRequest)
		return
	}
	if wsstream.IsWebSocketRequest(r) {
		http.Error(w, "port forwarding over WebSocket is not supported by this kubelet; use SPDY", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{portForwardProtocol}); err != nil {
		return // answered by Handshake
	}
	streams := make(chan httpstream.Stream)
	done := make(chan struct{})
	defer close(done)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, _ <-chan struct{}) error {
		h := st.Headers()
		if port, err := strconv.ParseUint(h.Get(corev1.PortHeader), 10, 16); err != nil || port == 0 {
			return fmt.Errorf("invalid %s header %q", corev1.PortHeader, h.Get(corev1.PortHeader))
		}
		if t := h.Get(corev1.StreamType); t != corev1.StreamTypeError && t != corev1.StreamTypeData {
			return fmt.Errorf("invalid stream type %q", t)
		}
		if h.Get(corev1.PortForwardRequestIDHeader) == "" {
			return fmt.Errorf("%s header is required", corev1.PortForwardRequestIDHeader)
		}
		select {
		case streams <- st:
			return nil
		case <-done:
			return fmt.Errorf("connection closed")
		}
	})
	if conn == nil {
		return // answered by the upgrader
	}
	defer conn.Close()
	conn.SetIdleTimeout(streamIdleTimeout)
	k.log.Debug("stream session", "path", r.URL.Path, "protocol", "spdy "+portForwardProtocol)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var mu sync.Mutex
	pairs := map[string]*streamPair{}
	for {
		select {
		case <-conn.CloseChan():
			return
		case <-ctx.Done():
			return
		case st := <-streams:
			id := st.Headers().Get(corev1.PortForwardRequestIDHeader)
			mu.Lock()
			p, ok := pairs[id]
			if !ok {
				p = &streamPair{}
				pairs[id] = p
				// A pair left half-made is dropped.
				time.AfterFunc(streamCreationTimeout, func() {
					mu.Lock()
					defer mu.Unlock()
					if pairs[id] == p && (p.data == nil || p.errs == nil) {
						delete(pairs, id)
						p.reset()
					}
				})
			}
			if st.Headers().Get(corev1.StreamType) == corev1.StreamTypeData {
				p.data = st
			} else {
				p.errs = st
			}
			complete := p.data != nil && p.errs != nil
			if complete {
				delete(pairs, id)
			}
			mu.Unlock()
			if complete {
				go k.forward(ctx, forwarder, pod, p)
			}
		}
	}
}

// streamPair is one forwarded connection's streams.
type streamPair struct {
	data, errs httpstream.Stream
}

func (p *streamPair) reset() {
	for _, st := range []httpstream.Stream{p.data, p.errs} {
		if st != nil {
			_ = st.Reset()
		}
	}
}

func (k *Kubelet) forward(ctx context.Context, forwarder PortForwarder, pod *corev1.Pod, p *streamPair) {
	defer p.errs.Close()
	defer p.data.Close()
	port, _ := strconv.ParseInt(p.data.Headers().Get(corev1.PortHeader), 10, 32)
	if err := forwarder.PortForward(ctx, pod.Namespace, pod.Name, int32(port), p.data); err != nil {
		k.log.Debug("port forward", "pod", pod.Namespace+"/"+pod.Name, "port", port, "err", err)
		fmt.Fprintf(p.errs, "error forwarding port %d to pod %s, uid %v: %v", port, pod.Name, pod.UID, err)
	}
}
