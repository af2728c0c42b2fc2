package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/kubelet"
)

// GetContainerLogs reads the job's output file on the login host. The
// containers of a pod share that file, so every container's log is the
// whole job's. With Follow it reads the new bytes (tail -c +N) every
// LogPollInterval until the job has ended. Timestamps, SinceSeconds and
// SinceTime are not supported: Slurm keeps no time per line.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, pod, container string, opts kubelet.LogOptions) (io.ReadCloser, error) {
	if opts.Previous {
		return nil, fmt.Errorf("pod %s/%s: a Slurm job has no previous instance", namespace, pod)
	}
	job, ok := p.JobInfo(namespace, pod)
	if !ok {
		return nil, fmt.Errorf("pod %s/%s has no Slurm job", namespace, pod)
	}
	path := outputPath(job)
	data, err := p.readFrom(ctx, path, 0)
	if err != nil {
		return nil, err
	}
	offset := int64(len(data))
	if opts.TailLines != nil {
		data = tailLines(data, *opts.TailLines)
	}
	if !opts.Follow {
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	r, w := io.Pipe()
	go func() {
		w.CloseWithError(p.follow(ctx, namespace, pod, path, data, offset, w))
	}()
	return r, nil
}

// follow writes first, then what the file gains, until the job ends.
func (p *Provider) follow(ctx context.Context, namespace, pod, path string, first []byte, offset int64, w io.Writer) error {
	if _, err := w.Write(first); err != nil {
		return nil // the reader went away
	}
	for {
		job, ok := p.JobInfo(namespace, pod)
		done := !ok || job.Terminal() || p.lost(namespace, pod)
		data, err := p.readFrom(ctx, path, offset)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		offset += int64(len(data))
		if len(data) > 0 {
			if _, err := w.Write(data); err != nil {
				return nil
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.cfg.Clock.After(p.cfg.LogPollInterval):
		}
	}
}

func (p *Provider) lost(namespace, pod string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[key(namespace, pod)]
	return ok && e.lost
}

// readFrom reads path from byte offset on; a file not there yet is empty.
func (p *Provider) readFrom(ctx context.Context, path string, offset int64) ([]byte, error) {
	out, err := p.cfg.Runner.Run(ctx, "tail", []string{"-c", "+" + strconv.FormatInt(offset+1, 10), path}, nil)
	var ce *CommandError
	if errors.As(err, &ce) && strings.Contains(ce.Stderr, "No such file") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// outputPath is the job's output file (Slurm prints StdOut with %j expanded).
func outputPath(j JobInfo) string {
	if j.StdOut != "" && !strings.Contains(j.StdOut, "%") {
		return j.StdOut
	}
	return strings.TrimSuffix(j.WorkDir, "/") + "/" + j.ID + ".out"
}

// tailLines keeps the last n lines of data.
func tailLines(data []byte, n int64) []byte {
	if n <= 0 {
		return nil
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			n--
			if n == 0 {
				return data[i+1:]
			}
		}
	}
	return data
}
