package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/containerd/cio"
)

// maxLogLine is the longest line written as one log entry; longer lines are
// split into partial ("P") entries, as the CRI does.
const maxLogLine = 16 * 1024

// taskIO is a container's stdio as this process holds it: the fifos to the
// shim, the copiers that turn stdout and stderr into CRI log lines, and the
// attach sessions that get the raw output too.
type taskIO struct {
	*cio.DirectIO
	log      *os.File
	mu       sync.Mutex // log lines and sessions, one at a time
	sessions map[*session]struct{}
	stdinMu  sync.Mutex // the Stdin field: closeStdin sets it to nil
	copied   chan struct{}
	once     sync.Once
}

// session is an attach session's output streams.
type session struct {
	stdout, stderr io.Writer
}

// openTaskIO opens a task's fifos and starts copying its output to logPath.
// With stdin the stdin fifo is opened and held (for attach), so the
// container reads no EOF; otherwise the container gets no stdin.
func (r *Containerd) openTaskIO(fifos *cio.FIFOSet, logPath string, stdin bool) (*taskIO, error) {
	if !stdin {
		fifos.Stdin = ""
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	// The fifos are opened in the background until the shim opens its ends,
	// so this context must outlive the call.
	dio, err := cio.NewDirectIO(context.Background(), fifos)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open stdio fifos: %w", err)
	}
	t := &taskIO{DirectIO: dio, log: f, sessions: map[*session]struct{}{}, copied: make(chan struct{})}
	var wg sync.WaitGroup
	for _, s := range []struct {
		name string
		r    io.ReadCloser
	}{{"stdout", dio.Stdout}, {"stderr", dio.Stderr}} {
		if s.r == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.copy(s.name, s.r)
		}()
	}
	go func() {
		wg.Wait()
		close(t.copied)
	}()
	return t, nil
}

// copy reads one output stream until it ends, writing CRI log lines and
// passing the raw bytes to attach sessions.
func (t *taskIO) copy(stream string, r io.Reader) {
	lines := &lineSplitter{emit: func(partial bool, line []byte) { t.writeLine(time.Now(), stream, partial, line) }}
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.mu.Lock()
			lines.write(buf[:n])
			for s := range t.sessions {
				w := s.stdout
				if stream == "stderr" {
					w = s.stderr
				}
				if w != nil {
					if _, err := w.Write(buf[:n]); err != nil {
						delete(t.sessions, s)
					}
				}
			}
			t.mu.Unlock()
		}
		if err != nil {
			t.mu.Lock()
			// Output that ends without a newline ends with a partial
			// line, as containerd's CRI writes it: readers add no
			// newline the container did not write (`echo -n`). When this
			// process lets go (a kubelet restart) the next one continues
			// the line.
			lines.flush()
			t.mu.Unlock()
			return
		}
	}
}

// lineSplitter cuts output into log lines: at each newline (dropping a
// "\r" before it), and into partial lines of maxLogLine bytes.
type lineSplitter struct {
	buf  []byte
	emit func(partial bool, line []byte)
}

func (l *lineSplitter) write(p []byte) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(l.buf[:i], []byte("\r"))
		for len(line) > maxLogLine {
			l.emit(true, line[:maxLogLine])
			line = line[maxLogLine:]
		}
		l.emit(false, line)
		l.buf = l.buf[i+1:]
	}
	for len(l.buf) >= maxLogLine {
		l.emit(true, l.buf[:maxLogLine])
		l.buf = l.buf[maxLogLine:]
	}
	l.buf = append([]byte(nil), l.buf...)
}

// flush writes what is left of a line, as a partial one.
func (l *lineSplitter) flush() {
	if len(l.buf) > 0 {
		l.emit(true, l.buf)
		l.buf = nil
	}
}

// writeLine writes one CRI log line; the caller holds t.mu.
func (t *taskIO) writeLine(ts time.Time, stream string, partial bool, line []byte) {
	tag := "F"
	if partial {
		tag = "P"
	}
	b := make([]byte, 0, len(line)+64)
	b = ts.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ' ')
	b = append(b, tag...)
	b = append(b, ' ')
	b = append(b, line...)
	b = append(b, '\n')
	// A failed write (disk full) drops the line: the copier must keep
	// draining the fifo or the container blocks on its output.
	_, _ = t.log.Write(b)
}

// writeStdin writes to the container's stdin, if it has one.
func (t *taskIO) writeStdin(p []byte) (int, error) {
	t.stdinMu.Lock()
	w := t.Stdin
	t.stdinMu.Unlock()
	if w == nil {
		return 0, errNoStdin
	}
	return w.Write(p)
}

// waitCopied waits until the copiers reached the end of the output.
func (t *taskIO) waitCopied(timeout time.Duration) {
	select {
	case <-t.copied:
	case <-time.After(timeout):
	}
}

// detach stops copying without removing the fifos: a later process can
// attach to them again (a kubelet restart).
func (t *taskIO) detach() {
	t.once.Do(func() {
		t.closeStdin()
		for _, c := range []io.Closer{t.Stdout, t.Stderr} {
			if c != nil {
				_ = c.Close()
			}
		}
		t.waitCopied(5 * time.Second)
		t.mu.Lock()
		_ = t.log.Close()
		t.mu.Unlock()
	})
}

// close stops copying and removes the fifos (the task is gone).
func (t *taskIO) close() {
	t.waitCopied(5 * time.Second)
	t.detach()
	_ = t.DirectIO.Close()
}
