package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// The remotecommand protocol of /exec and /attach, as Kubernetes' kubelet
// speaks it (kubectl and client-go are the clients):
//
//   - WebSocket, subprotocols v5.channel.k8s.io (what kubectl asks for
//     first), v4.channel.k8s.io, their base64 variants, and the legacy
//     channel.k8s.io ones. Every message starts with its channel: 0 stdin,
//     1 stdout, 2 stderr, 3 error (a metav1.Status in JSON once the command
//     ends; plain text before v4), 4 resize (JSON TermSize). v5 adds the
//     close message (255, channel) with which a client ends its stdin.
//   - SPDY/3.1 (kubectl's fallback), protocols v5 and v4: one stream per
//     channel, named by its streamType header.
//
// The command's end is reported on the error channel: Success, or Failure
// with reason NonZeroExitCode and a cause ExitCode holding the code; then
// the connection closes.

// Subprotocol names.
const (
	streamProtocolV5 = "v5.channel.k8s.io"
	streamProtocolV4 = "v4.channel.k8s.io"
)

// Channels of the WebSocket protocol.
const (
	stdinChannel = iota
	stdoutChannel
	stderrChannel
	errorChannel
	resizeChannel
)

// streamCreationTimeout bounds how long a SPDY client may take to open
// its streams.
const streamCreationTimeout = 30 * time.Second

func (k *Kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	pod, container, ok := k.containerOf(w, r)
	if !ok {
		return
	}
	execer, ok := k.cfg.Provider.(ContainerExecer)
	if !ok {
		notImplemented(w, "exec")
		return
	}
	opts, err := streamOptionsFrom(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		http.Error(w, "a command is required", http.StatusBadRequest)
		return
	}
	s, ok := k.openSession(w, r, opts)
	if !ok {
		return
	}
	defer s.close()
	code, err := execer.RunInContainer(s.ctx, pod.Namespace, pod.Name, container, cmd, s)
	switch {
	case err != nil:
		k.log.Warn("exec in container", "pod", pod.Namespace+"/"+pod.Name, "container", container, "err", err)
		st := apierrors.NewInternalError(fmt.Errorf("error executing command in container: %w", err)).Status()
		s.writeStatus(&st)
	case code != 0:
		if code < 0 || code > 255 {
			code = 255
		}
		s.writeStatus(&metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  "NonZeroExitCode",
			Message: fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(code)}}},
		})
	default:
		s.writeStatus(&metav1.Status{Status: metav1.StatusSuccess})
	}
}

func (k *Kubelet) serveAttach(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	pod, container, ok := k.containerOf(w, r)
	if !ok {
		return
	}
	attacher, ok := k.cfg.Provider.(ContainerAttacher)
	if !ok {
		notImplemented(w, "attach")
		return
	}
	opts, err := streamOptionsFrom(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s, ok := k.openSession(w, r, opts)
	if !ok {
		return
	}
	defer s.close()
	if err := attacher.AttachToContainer(s.ctx, pod.Namespace, pod.Name, container, s); err != nil {
		st := apierrors.NewInternalError(fmt.Errorf("error attaching to container: %w", err)).Status()
		s.writeStatus(&st)
		return
	}
	s.writeStatus(&metav1.Status{Status: metav1.StatusSuccess})
}

// streamOptions are the streams a client asks for.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// streamOptionsFrom reads the query: Kubernetes' kubelet names the streams
// input, output and error (value 1); stdin, stdout, stderr and the value
// true, as the apiserver's PodExecOptions has them, work too.
func streamOptionsFrom(q url.Values) (streamOptions, error) {
	set := func(names ...string) bool {
		for _, n := range names {
			if v := q.Get(n); v == "1" || v == "true" {
				return true
			}
		}
		return false
	}
	o := streamOptions{
		stdin: set("input", "stdin"), stdout: set("output", "stdout"), stderr: set("error", "stderr"), tty: set("tty"),
	}
	if o.tty {
		o.stderr = false // a terminal has one output
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, fmt.Errorf("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// session is one exec or attach connection; it is the AttachIO providers get.
type session struct {
	ctx         context.Context
	stdin       io.Reader
	stdout      io.WriteCloser
	stderr      io.WriteCloser
	tty         bool
	resize      chan TermSize
	errorStream io.WriteCloser
	// jsonStatus: v4 and later send a Status, older protocols its message.
	jsonStatus bool
	close      func()
}

var _ AttachIO = (*session)(nil)

func (s *session) Stdin() io.Reader        { return s.stdin }
func (s *session) Stdout() io.WriteCloser  { return s.stdout }
func (s *session) Stderr() io.WriteCloser  { return s.stderr }
func (s *session) TTY() bool               { return s.tty }
func (s *session) Resize() <-chan TermSize { return s.resize }

func (s *session) writeStatus(st *metav1.Status) {
	if !s.jsonStatus {
		if st.Status != metav1.StatusSuccess {
			_, _ = io.WriteString(s.errorStream, st.Message)
		}
		return
	}
	data, err := json.Marshal(st)
	if err == nil {
		_, _ = s.errorStream.Write(data)
	}
}

// openSession upgrades the request to a WebSocket or SPDY connection with
// the streams opts name. When it fails it has answered the client.
func (k *Kubelet) openSession(w http.ResponseWriter, r *http.Request, opts streamOptions) (*session, bool) {
	if !httpstream.IsUpgradeRequest(r) {
		http.Error(w, "Upgrade request required", http.StatusBadRequest)
		return nil, false
	}
	if wsstream.IsWebSocketRequest(r) {
		return k.openWebSocket(w, r, opts)
	}
	return k.openSPDY(w, r, opts)
}

func (k *Kubelet) openWebSocket(w http.ResponseWriter, r *http.Request, opts streamOptions) (*session, bool) {
	read := func(on bool) wsstream.ChannelType {
		if on {
			return wsstream.ReadChannel
		}
		return wsstream.IgnoreChannel
	}
	write := func(on bool) wsstream.ChannelType {
		if on {
			return wsstream.WriteChannel
		}
		return wsstream.IgnoreChannel
	}
	// The resize channel is always read: its end is how a session learns
	// that the client went away.
	channels := []wsstream.ChannelType{read(opts.stdin), write(opts.stdout), write(opts.stderr), wsstream.WriteChannel, wsstream.ReadChannel}
	protocols := map[string]wsstream.ChannelProtocolConfig{}
	for _, version := range []string{"", "v4.", "v5."} {
		protocols[version+wsstream.ChannelWebSocketProtocol] = wsstream.ChannelProtocolConfig{Binary: true, Channels: channels}
		protocols[version+wsstream.Base64ChannelWebSocketProtocol] = wsstream.ChannelProtocolConfig{Binary: false, Channels: channels}
	}
	protocols[""] = wsstream.ChannelProtocolConfig{Binary: true, Channels: channels}
	conn := wsstream.NewConn(protocols)
	conn.SetIdleTimeout(streamIdleTimeout)
	// wsstream logs a connection's end as an error; ours end that way
	// every time (we close after the status), so it says nothing here.
	quiet := r.WithContext(klog.NewContext(r.Context(), logr.Discard()))
	protocol, streams, err := conn.Open(w, quiet)
	if err != nil {
		k.log.Debug("websocket upgrade", "path", r.URL.Path, "err", err)
		return nil, false
	}
	k.log.Debug("stream session", "path", r.URL.Path, "protocol", "websocket "+protocol)
	// An empty message on the first output channel tells the client the
	// connection is up (as Kubernetes' kubelet does).
	switch {
	case opts.stdout:
		_, _ = streams[stdoutChannel].Write(nil)
	case opts.stderr:
		_, _ = streams[stderrChannel].Write(nil)
	default:
		_, _ = streams[errorChannel].Write(nil)
	}
	ctx, cancel := context.WithCancel(r.Context())
	s := &session{
		ctx: ctx, tty: opts.tty, errorStream: streams[errorChannel],
		jsonStatus: protocol == streamProtocolV4 || protocol == streamProtocolV5 ||
			protocol == "v4."+wsstream.Base64ChannelWebSocketProtocol || protocol == "v5."+wsstream.Base64ChannelWebSocketProtocol,
		close: func() {
			cancel()
			_ = conn.Close()
		},
	}
	if opts.stdin {
		s.stdin = streams[stdinChannel]
	}
	if opts.stdout {
		s.stdout = streams[stdoutChannel]
	}
	if opts.stderr {
		s.stderr = streams[stderrChannel]
	}
	s.resize = readResizes(streams[resizeChannel], cancel)
	return s, true
}

// readResizes decodes the resize stream into a channel that keeps only the
// latest size nobody has read yet (a provider need not read it, and an
// unread channel must not stall the connection). The channel closes, and
// gone is called, when the stream ends.
func readResizes(stream io.Reader, gone func()) chan TermSize {
	ch := make(chan TermSize, 1)
	go func() {
		defer close(ch)
		if gone != nil {
			defer gone()
		}
		dec := json.NewDecoder(stream)
		for {
			var size TermSize
			if err := dec.Decode(&size); err != nil {
				// Garbage ends the sizes, not the session.
				_, _ = io.Copy(io.Discard, stream)
				return
			}
			select {
			case ch <- size:
			default:
				select {
				case <-ch:
				default:
				}
				ch <- size
			}
		}
	}()
	return ch
}

// spdyStream is a stream a SPDY client opened, with word of its reply.
type spdyStream struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

func (k *Kubelet) openSPDY(w http.ResponseWriter, r *http.Request, opts streamOptions) (*session, bool) {
	// Both versions report the end as a JSON Status.
	protocol, err := httpstream.Handshake(r, w, []string{streamProtocolV5, streamProtocolV4})
	if err != nil {
		return nil, false // answered by Handshake
	}
	k.log.Debug("stream session", "path", r.URL.Path, "protocol", "spdy "+protocol)
	created := make(chan spdyStream)
	stop := make(chan struct{})
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		select {
		case created <- spdyStream{st, replySent}:
			return nil
		case <-stop:
			return fmt.Errorf("unexpected stream %q", st.Headers().Get(corev1.StreamType))
		}
	})
	if conn == nil {
		close(stop)
		return nil, false // answered by the upgrader
	}
	conn.SetIdleTimeout(streamIdleTimeout)
	expected := 1 // error
	for _, on := range []bool{opts.stdin, opts.stdout, opts.stderr, opts.tty} {
		if on {
			expected++
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	s := &session{ctx: ctx, tty: opts.tty, jsonStatus: true}
	var resize io.Reader
	replied := make(chan struct{})
	timeout := time.NewTimer(streamCreationTimeout)
	defer timeout.Stop()
	for received := 0; received < expected; {
		select {
		case st := <-created:
			switch t := st.stream.Headers().Get(corev1.StreamType); t {
			case corev1.StreamTypeError:
				s.errorStream = st.stream
			case corev1.StreamTypeStdin:
				s.stdin = st.stream
			case corev1.StreamTypeStdout:
				s.stdout = st.stream
			case corev1.StreamTypeStderr:
				s.stderr = st.stream
			case corev1.StreamTypeResize:
				resize = st.stream
			default:
				k.log.Debug("spdy: unexpected stream type", "type", t)
				continue
			}
			go func() {
				select {
				case <-st.replySent:
					replied <- struct{}{}
				case <-stop:
				}
			}()
		case <-replied:
			received++
		case <-timeout.C:
			close(stop)
			cancel()
			_ = conn.Close()
			k.log.Debug("spdy: timed out waiting for the client's streams", "path", r.URL.Path)
			return nil, false
		}
	}
	close(stop)
	if s.errorStream == nil {
		cancel()
		_ = conn.Close()
		return nil, false
	}
	if resize != nil {
		s.resize = readResizes(resize, nil)
	} else {
		s.resize = make(chan TermSize)
		close(s.resize)
	}
	go func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	}()
	s.close = func() {
		cancel()
		// Half-close what we wrote so the client reads to the end, then
		// tear the connection down.
		for _, st := range []io.Closer{s.stdout, s.stderr, s.errorStream} {
			if st != nil {
				_ = st.Close()
			}
		}
		_ = conn.Close()
	}
	return s, true
}
