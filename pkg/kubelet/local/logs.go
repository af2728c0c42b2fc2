package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// timestampFormat is how `kubectl logs --timestamps` prints a line's time.
const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

// followPoll is how often a followed log is checked for new lines.
const followPoll = 100 * time.Millisecond

// Log rotation, as Kubernetes' containerLogMaxSize and containerLogMaxFiles.
const (
	maxLogSize  = 10 << 20
	maxLogFiles = 5
)

// rotateLog moves a running container's log aside once it passes max
// bytes, keeping the newest keep rotated files. The runtime holds the
// file open for appending, so the content is copied and the file
// truncated (lines written between the two steps are lost); kubectl logs
// then shows what came after, as with Kubernetes' rotation.
func rotateLog(path string, max int64, keep int, now time.Time) error {
	info, err := os.Stat(path)
	if err != nil || info.Size() <= max {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	rotated := path + "." + now.UTC().Format("20060102-150405")
	dst, err := os.OpenFile(rotated, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if err := os.Truncate(path, 0); err != nil {
		return err
	}
	old, _ := filepath.Glob(path + ".*")
	sort.Strings(old)
	for len(old) > keep {
		_ = os.Remove(old[0])
		old = old[1:]
	}
	return nil
}

// removeLogs removes a log file and its rotated predecessors.
func removeLogs(path string) {
	_ = os.Remove(path)
	old, _ := filepath.Glob(path + ".*")
	for _, f := range old {
		_ = os.Remove(f)
	}
}

// GetContainerLogs reads a container's log file (the CRI format the
// runtime writes): the current attempt's, or with opts.Previous the one
// its status names as last terminated.
func (p *Provider) GetContainerLogs(ctx context.Context, ns, name, container string, opts kubelet.LogOptions) (io.ReadCloser, error) {
	w := p.worker(ns, name)
	if w == nil {
		return nil, fmt.Errorf("pod %s/%s is not running on node %s", ns, name, p.cfg.NodeName)
	}
	pod := w.snapshot()
	cs := findStatus(pod.Status.ContainerStatuses, container)
	if cs == nil {
		cs = findStatus(pod.Status.InitContainerStatuses, container)
	}
	if cs == nil {
		cs = findStatus(pod.Status.EphemeralContainerStatuses, container)
	}
	if cs == nil {
		return nil, fmt.Errorf("container %q in pod %q is not available", container, name)
	}
	id := cs.ContainerID
	if opts.Previous {
		id = ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			id = t.ContainerID
		}
		if id == "" {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, name)
		}
	}
	id = strings.TrimPrefix(id, "containerd://")
	if id == "" {
		return nil, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, name)
	}
	inst, err := p.containerByID(ctx, id)
	if err != nil {
		return nil, err
	}
	path := inst.LogPath
	if path == "" {
		path = p.logPath(pod, container, restartCountOf(inst))
	}
	running := func() bool {
		c, err := p.containerByID(ctx, id)
		return err == nil && c.State == runtime.StateRunning
	}
	if opts.Previous || inst.State != runtime.StateRunning {
		running = func() bool { return false }
	}
	return openLog(ctx, path, opts, p.clock.Now(), running)
}

// containerByID finds a container in a recent relist.
func (p *Provider) containerByID(ctx context.Context, id string) (runtime.ContainerStatus, error) {
	all, err := p.list.get(ctx, p.rt, time.Second)
	if err != nil {
		return runtime.ContainerStatus{}, err
	}
	for _, c := range all {
		if c.ID == id {
			return c, nil
		}
	}
	return runtime.ContainerStatus{}, fmt.Errorf("container %s is gone", id)
}

// openLog streams a CRI log file as opts ask; with Follow it goes on
// until running says the container stopped (and the rest is read) or ctx
// ends.
func openLog(ctx context.Context, path string, opts kubelet.LogOptions, now time.Time, running func() bool) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		defer f.Close()
		pw.CloseWithError(copyLog(ctx, f, pw, opts, now, running))
	}()
	return &logReader{PipeReader: pr, cancel: cancel}, nil
}

type logReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r *logReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

// logMessage is one entry of a CRI log file.
type logMessage struct {
	ts      time.Time
	stream  string
	partial bool
	content []byte
}

// parseCRILine parses "<RFC3339Nano> <stream> <P|F> <content>".
func parseCRILine(line []byte) (logMessage, error) {
	var m logMessage
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) < 3 {
		return m, fmt.Errorf("malformed log line %q", line)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return m, fmt.Errorf("malformed log time %q: %w", fields[0], err)
	}
	m.ts, m.stream = ts, string(fields[1])
	tag, _, _ := bytes.Cut(fields[2], []byte{':'})
	m.partial = string(tag) == "P"
	if len(fields) == 4 {
		m.content = fields[3]
	}
	return m, nil
}

// copyLog writes the log's content to w: from the tail's start, lines
// since the since time, with timestamps if asked.
func copyLog(ctx context.Context, f *os.File, w io.Writer, opts kubelet.LogOptions, now time.Time, running func() bool) error {
	var since time.Time
	switch {
	case opts.SinceTime != nil:
		since = opts.SinceTime.Time
	case opts.SinceSeconds != nil:
		since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	if opts.TailLines != nil {
		off, err := tailOffset(f, *opts.TailLines)
		if err != nil {
			return err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return err
		}
	}
	offset, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	r := bufio.NewReader(f)
	var pending []byte // a line read before its end was written
	newLine, stopped := true, false
	for {
		chunk, err := r.ReadBytes('\n')
		offset += int64(len(chunk))
		pending = append(pending, chunk...)
		if err == nil {
			line := bytes.TrimSuffix(pending, []byte{'\n'})
			pending = pending[:0]
			m, perr := parseCRILine(line)
			if perr != nil || (!since.IsZero() && m.ts.Before(since)) {
				continue
			}
			var out []byte
			if newLine && opts.Timestamps {
				out = append(out, m.ts.Format(timestampFormat)...)
				out = append(out, ' ')
			}
			out = append(out, m.content...)
			if !m.partial {
				out = append(out, '\n')
			}
			newLine = !m.partial
			if _, werr := w.Write(out); werr != nil {
				return werr
			}
			continue
		}
		if err != io.EOF {
			return err
		}
		if !opts.Follow || stopped {
			return nil
		}
		if !running() {
			// Read what the container wrote last, then end.
			stopped = true
			continue
		}
		if info, err := f.Stat(); err == nil && info.Size() < offset {
			// Rotated: the file starts over.
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			r.Reset(f)
			offset, pending = 0, pending[:0]
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

// tailOffset is where the last n lines of a CRI log start (a line may
// span several partial entries).
func tailOffset(f *os.File, n int64) (int64, error) {
	if n <= 0 {
		return f.Seek(0, io.SeekEnd)
	}
	starts := make([]int64, 0, n)
	r := bufio.NewReader(f)
	var off int64
	lineStart := true
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if lineStart {
				if int64(len(starts)) == n {
					starts = starts[1:]
				}
				starts = append(starts, off)
			}
			m, perr := parseCRILine(line[:len(line)-1])
			lineStart = perr != nil || !m.partial
		}
		off += int64(len(line))
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if len(starts) == 0 {
		return off, nil
	}
	return starts[0], nil
}

// logTail is the end of a log, for a termination message taken from the
// logs: its last lines, exactly as logged (no newline after a line the
// container did not end), and of those the last limit bytes, as the
// kubelet's ring buffer keeps them.
func logTail(path string, lines, limit int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := &tailBuffer{max: limit}
	n := int64(lines)
	_ = copyLog(context.Background(), f, buf, kubelet.LogOptions{TailLines: &n}, time.Time{}, func() bool { return false })
	return string(buf.buf)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if extra := len(b.buf) - b.max; extra > 0 {
		b.buf = append(b.buf[:0], b.buf[extra:]...)
	}
	return len(p), nil
}

// RunInContainer runs cmd in the container's running attempt, through
// the runtime's exec.
func (p *Provider) RunInContainer(ctx context.Context, ns, name, container string, cmd []string, attach kubelet.AttachIO) (int, error) {
	id, err := p.runningContainer(ctx, ns, name, container)
	if err != nil {
		return -1, err
	}
	return p.rt.Exec(ctx, id, cmd, execStreams(ctx, attach))
}

// AttachToContainer connects the session to the main process of the
// container's running attempt (kubectl attach, kubectl debug -it,
// kubectl run -i), through the runtime's attach: its output from now
// on, its stdin when it was created with one, terminal resizes.
func (p *Provider) AttachToContainer(ctx context.Context, ns, name, container string, attach kubelet.AttachIO) error {
	a, ok := p.rt.(runtime.Attacher)
	if !ok {
		return fmt.Errorf("the container runtime cannot attach to containers")
	}
	id, err := p.runningContainer(ctx, ns, name, container)
	if err != nil {
		return err
	}
	return a.Attach(ctx, id, execStreams(ctx, attach))
}

// execStreams are an exec or attach session's streams as the runtime
// takes them.
func execStreams(ctx context.Context, attach kubelet.AttachIO) runtime.ExecStreams {
	streams := runtime.ExecStreams{TTY: attach.TTY()}
	if in := attach.Stdin(); in != nil {
		streams.Stdin = in
	}
	if out := attach.Stdout(); out != nil {
		streams.Stdout = out
	}
	if e := attach.Stderr(); e != nil && !streams.TTY {
		streams.Stderr = e
	}
	if resize := attach.Resize(); streams.TTY && resize != nil {
		ch := make(chan runtime.TerminalSize)
		streams.Resize = ch
		go func() {
			defer close(ch)
			for size := range resize {
				select {
				case ch <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return streams
}

// runningContainer is the ID of the running attempt of a pod's container.
func (p *Provider) runningContainer(ctx context.Context, ns, name, container string) (string, error) {
	w := p.worker(ns, name)
	if w == nil {
		return "", fmt.Errorf("pod %s/%s is not running on node %s", ns, name, p.cfg.NodeName)
	}
	all, err := p.list.get(ctx, p.rt, time.Second)
	if err != nil {
		return "", err
	}
	for _, c := range observe(all, w.uid).instances("", container) {
		if c.State == runtime.StateRunning {
			return c.ID, nil
		}
	}
	return "", fmt.Errorf("container %q in pod %q is not running", container, name)
}

// eventFieldPath names a container in an event, as Kubernetes does.
func eventFieldPath(pod *corev1.Pod, container string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			return "spec.initContainers{" + container + "}"
		}
	}
	if isEphemeral(pod, container) {
		return "spec.ephemeralContainers{" + container + "}"
	}
	return "spec.containers{" + container + "}"
}
