package runtime

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
)

// Exec runs cmd in a running container, in all its namespaces and its
// cgroup, with the container's environment, user and working directory.
func (r *Containerd) Exec(ctx context.Context, id string, cmd []string, streams ExecStreams) (int, error) {
	ctx = r.nsCtx(ctx)
	if len(cmd) == 0 {
		return -1, fmt.Errorf("exec in %s: no command", id)
	}
	container, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	spec, err := container.Spec(ctx)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	task, err := container.Task(ctx, nil)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: container is not running: %w", id, err)
	}
	pspec := *spec.Process
	pspec.Args = cmd
	pspec.Terminal = streams.TTY
	pspec.ConsoleSize = nil

	stdout, stderr := streams.Stdout, streams.Stderr
	// containerd 1.6's shim fails an exec without a stdout or stderr fifo.
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// The two streams are copied concurrently and may share a writer: they
	// take turns.
	var mu sync.Mutex
	stdout, stderr = &lockedWriter{mu: &mu, w: stdout}, &lockedWriter{mu: &mu, w: stderr}
	// The shim holds the stdin fifo open until told to close it, so the end
	// of the caller's stdin must be passed on (CloseIO) for the process to
	// read EOF.
	var stdin io.Reader
	stdinEOF := make(chan struct{})
	if streams.Stdin != nil {
		stdin = &eofReader{r: streams.Stdin, eof: stdinEOF}
	}
	opts := []cio.Opt{cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(r.cfg.FIFODir)}
	if streams.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	execID := "exec-" + newID()[:16]
	process, err := task.Exec(ctx, execID, &pspec, cio.NewCreator(opts...))
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	defer func() {
		_, _ = process.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
	}()
	// Wait outlives ctx so that a cancelled exec is still reaped.
	exitC, err := process.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	if err := process.Start(ctx); err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	exited := make(chan struct{})
	defer close(exited)
	if stdin != nil {
		go func() {
			select {
			case <-stdinEOF:
				_ = process.CloseIO(ctx, containerd.WithStdinCloser)
			case <-exited:
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
					_ = process.Resize(ctx, uint32(size.Width), uint32(size.Height))
				case <-exited:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var status containerd.ExitStatus
	select {
	case status = <-exitC:
	case <-ctx.Done():
		_ = process.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		status = <-exitC
	}
	// All output is copied once the process and whatever shares its stdio
	// are gone.
	process.IO().Wait()
	code, _, err := status.Result()
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	if ctx.Err() != nil {
		return int(code), fmt.Errorf("exec in %s: %w", id, ctx.Err())
	}
	return int(code), nil
}

// lockedWriter serialises writes (and hides ReadFrom, which bytes.Buffer
// would run concurrently).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// eofReader closes eof when r is exhausted.
type eofReader struct {
	r    io.Reader
	eof  chan struct{}
	once sync.Once
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}
