package simulated

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet"
)

// AnnotationLogs holds lines (separated by "\n") that every container of a
// simulated pod logs after it starts, so tests have logs to read.
const AnnotationLogs = "minik8s.io/simulate-logs"

// What a simulated container logs. Nothing runs, so these lines (its
// start, the pod's AnnotationLogs, what attach sessions send it, its exit)
// are its whole output.

// scriptedLogs are the lines the pod's AnnotationLogs asks for.
func scriptedLogs(pod *corev1.Pod) []string {
	v, ok := pod.Annotations[AnnotationLogs]
	if !ok || v == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(v, "\n"), "\n")
}

// logLine is one line of a container's output.
type logLine struct {
	at   time.Time
	text string
}

// instance is the output of one run of a container; a restart starts a
// new instance.
type instance struct {
	lines []logLine
	ended bool
	// wake is closed (and replaced) whenever lines are added or the
	// instance ends.
	wake chan struct{}
}

type containerOutput struct {
	current, previous *instance
}

// logBook keeps every simulated container's output. Its zero value is ready.
type logBook struct {
	mu   sync.Mutex
	byID map[string]*containerOutput // ns/pod/container
}

func containerKey(ns, pod, container string) string { return ns + "/" + pod + "/" + container }

func newInstance() *instance { return &instance{wake: make(chan struct{})} }

// add appends lines to inst; the caller holds the lock.
func (inst *instance) add(at time.Time, lines ...string) {
	for _, l := range lines {
		inst.lines = append(inst.lines, logLine{at: at, text: l})
	}
	close(inst.wake)
	inst.wake = make(chan struct{})
}

func (inst *instance) end() {
	if !inst.ended {
		inst.ended = true
		close(inst.wake)
		inst.wake = make(chan struct{})
	}
}

// start begins a fresh container (a new pod): no previous instance.
func (b *logBook) start(ns, pod, container string, at time.Time, lines ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byID == nil {
		b.byID = map[string]*containerOutput{}
	}
	id := containerKey(ns, pod, container)
	if old, ok := b.byID[id]; ok {
		old.current.end()
	}
	inst := newInstance()
	inst.add(at, append([]string{"simulated container " + container + " started"}, lines...)...)
	b.byID[id] = &containerOutput{current: inst}
}

// exit ends the container's current instance with its exit line; restart
// then begins the next one.
func (b *logBook) exit(ns, pod, container string, at time.Time, code int32, restart bool, lines ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out, ok := b.byID[containerKey(ns, pod, container)]
	if !ok {
		return
	}
	out.current.add(at, "simulated container "+container+" exited with code "+strconv.Itoa(int(code)))
	out.current.end()
	if restart {
		out.previous = out.current
		out.current = newInstance()
		out.current.add(at, append([]string{"simulated container " + container + " started"}, lines...)...)
	}
}

// append adds a line to a running container's output.
func (b *logBook) append(ns, pod, container string, at time.Time, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if out, ok := b.byID[containerKey(ns, pod, container)]; ok && !out.current.ended {
		out.current.add(at, text)
	}
}

// remove forgets a pod's containers, ending their followers.
func (b *logBook) remove(ns, pod string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prefix := ns + "/" + pod + "/"
	for id, out := range b.byID {
		if strings.HasPrefix(id, prefix) {
			out.current.end()
			delete(b.byID, id)
		}
	}
}

// instanceOf returns the container's current or previous instance.
func (b *logBook) instanceOf(ns, pod, container string, previous bool) *instance {
	b.mu.Lock()
	defer b.mu.Unlock()
	out, ok := b.byID[containerKey(ns, pod, container)]
	if !ok {
		return nil
	}
	if previous {
		return out.previous
	}
	return out.current
}

// since returns inst's lines from index i on, whether it has ended, and a
// channel closed on the next change.
func (b *logBook) since(inst *instance, i int) (lines []logLine, ended bool, wake <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i < len(inst.lines) {
		lines = append(lines, inst.lines[i:]...)
	}
	return lines, inst.ended, inst.wake
}

const timestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

func formatLines(lines []logLine, timestamps bool) []byte {
	var buf bytes.Buffer
	for _, l := range lines {
		if timestamps {
			buf.WriteString(l.at.UTC().Format(timestampFormat))
			buf.WriteByte(' ')
		}
		buf.WriteString(l.text)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// GetContainerLogs serves the container's recorded output with opts.
func (p *Provider) GetContainerLogs(ctx context.Context, ns, pod, container string, opts kubelet.LogOptions) (io.ReadCloser, error) {
	inst := p.logs.instanceOf(ns, pod, container, opts.Previous)
	if inst == nil {
		if opts.Previous {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod)
		}
		return nil, fmt.Errorf("container %q in pod %q is not running on this node", container, pod)
	}
	lines, _, _ := p.logs.since(inst, 0)
	next := len(lines)
	var after time.Time
	switch {
	case opts.SinceTime != nil:
		after = opts.SinceTime.Time
	case opts.SinceSeconds != nil:
		after = p.cfg.Clock.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	if !after.IsZero() {
		kept := lines[:0:0]
		for _, l := range lines {
			if !l.at.Before(after) {
				kept = append(kept, l)
			}
		}
		lines = kept
	}
	if opts.TailLines != nil && int64(len(lines)) > *opts.TailLines {
		lines = lines[int64(len(lines))-*opts.TailLines:]
	}
	r := &logReader{book: &p.logs, inst: inst, next: next, pending: formatLines(lines, opts.Timestamps), timestamps: opts.Timestamps, follow: opts.Follow}
	r.ctx, r.cancel = context.WithCancel(ctx)
	return r, nil
}

// logReader reads an instance's output, following new lines when asked
// to until the instance ends or ctx does.
type logReader struct {
	book       *logBook
	inst       *instance
	next       int
	pending    []byte
	timestamps bool
	follow     bool
	ctx        context.Context
	cancel     context.CancelFunc
}

func (r *logReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if !r.follow {
			return 0, io.EOF
		}
		lines, ended, wake := r.book.since(r.inst, r.next)
		if len(lines) > 0 {
			r.next += len(lines)
			r.pending = formatLines(lines, r.timestamps)
			break
		}
		if ended {
			return 0, io.EOF
		}
		select {
		case <-wake:
		case <-r.ctx.Done():
			return 0, io.EOF
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (r *logReader) Close() error {
	r.cancel()
	return nil
}
