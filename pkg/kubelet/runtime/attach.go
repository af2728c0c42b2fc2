package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/containerd/containerd"
)

// Attach connects streams to a running container's main process.
func (r *Containerd) Attach(ctx context.Context, id string, streams ExecStreams) error {
	ctx = r.nsCtx(ctx)
	container, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	labels, err := container.Labels(ctx)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	task, err := container.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("attach to %s: container is not running: %w", id, err)
	}
	r.mu.Lock()
	tio := r.ios[id]
	r.mu.Unlock()
	if tio == nil {
		return fmt.Errorf("attach to %s: container is not running or has no log path", id)
	}
	if streams.Stdin != nil && labels[labelStdin] != "true" {
		return fmt.Errorf("attach to %s: the container was not created with stdin", id)
	}

	s := &session{stdout: streams.Stdout, stderr: streams.Stderr}
	tio.mu.Lock()
	tio.sessions[s] = struct{}{}
	tio.mu.Unlock()
	defer func() {
		tio.mu.Lock()
		delete(tio.sessions, s)
		tio.mu.Unlock()
	}()

	var closeOnce sync.Once
	closeStdin := func() {
		closeOnce.Do(func() {
			tio.closeStdin()
			_ = task.CloseIO(context.WithoutCancel(ctx), containerd.WithStdinCloser)
		})
	}
	if labels[labelStdinOnce] == "true" {
		defer closeStdin()
	}
	if streams.Stdin != nil {
		go func() {
			_, _ = io.Copy(writerFunc(tio.writeStdin), streams.Stdin)
			if labels[labelStdinOnce] == "true" {
				closeStdin()
			}
		}()
	}
	if streams.Resize != nil {
		go func() {
			for {
				select {
				case size, ok := <-streams.Resize:
					if !ok {
						return
					}
					_ = task.Resize(ctx, uint32(size.Width), uint32(size.Height))
				case <-tio.copied:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	select {
	case <-tio.copied:
	case <-ctx.Done():
	}
	return nil
}

// closeStdin closes this process's end of the container's stdin.
func (t *taskIO) closeStdin() {
	t.stdinMu.Lock()
	w := t.Stdin
	t.Stdin = nil
	t.stdinMu.Unlock()
	if w != nil {
		_ = w.Close()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var errNoStdin = errors.New("the container has no stdin")
