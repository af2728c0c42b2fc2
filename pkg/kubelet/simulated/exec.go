package simulated

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/kubelet"
)

var (
	_ kubelet.ContainerLogger   = (*Provider)(nil)
	_ kubelet.ContainerExecer   = (*Provider)(nil)
	_ kubelet.ContainerAttacher = (*Provider)(nil)
	_ kubelet.PortForwarder     = (*Provider)(nil)
)

// Exec in a simulated container runs a tiny built-in shell, enough to
// exercise the exec path end to end without containers:
//
//	echo [-n] ARGS...   prints ARGS
//	cat                 copies stdin to stdout
//	hostname            prints the pod's name
//	true, false         exit 0, 1
//	sleep SECONDS       waits
//	sh -c 'SCRIPT'      runs SCRIPT: the commands above and exit [N],
//	                    joined by ; && || or newlines, words quoted with
//	                    '...' or "..."; `sh` alone reads SCRIPT from stdin
//
// Anything else prints "sh: NAME: not found" and exits 127.
//
// Attach and port forwarding are simulated too (AttachToContainer,
// PortForward), as are logs (logs.go).

// RunInContainer runs cmd in the built-in shell.
func (p *Provider) RunInContainer(ctx context.Context, ns, pod, container string, cmd []string, attach kubelet.AttachIO) (int, error) {
	if err := p.checkRunning(ns, pod, container); err != nil {
		return 0, err
	}
	sh := &shell{hostname: pod, stdin: attach.Stdin(), stdout: orDiscard(attach.Stdout()), stderr: orDiscard(attach.Stderr())}
	if attach.TTY() {
		sh.stderr = sh.stdout // a terminal has one output
	}
	return sh.run(ctx, cmd), nil
}

// AttachToContainer connects to the container's "main process", which
// behaves like `cat`: what the session sends on stdin becomes the
// container's output (and so its log), and the session sees the
// container's output from now on. It ends when the client goes away, the
// container stops, or — when it has stdin — stdin ends and its lines have
// been shown.
func (p *Provider) AttachToContainer(ctx context.Context, ns, pod, container string, attach kubelet.AttachIO) error {
	if err := p.checkRunning(ns, pod, container); err != nil {
		return err
	}
	inst := p.logs.instanceOf(ns, pod, container, false)
	if inst == nil {
		return fmt.Errorf("container %q in pod %q is not running", container, pod)
	}
	out := orDiscard(attach.Stdout())
	lines, _, _ := p.logs.since(inst, 0)
	next := len(lines)

	stdinDone := make(chan struct{})
	last := -1 // the index stdin's last line will have, once stdinDone is closed
	if in := attach.Stdin(); in != nil {
		go func() {
			defer close(stdinDone)
			sc := bufio.NewScanner(in)
			for sc.Scan() {
				p.logs.append(ns, pod, container, p.cfg.Clock.Now(), sc.Text())
			}
			l, _, _ := p.logs.since(inst, 0)
			last = len(l)
		}()
	} else {
		stdinDone = nil // never: only the client or the container ends it
	}
	for {
		lines, ended, wake := p.logs.since(inst, next)
		if len(lines) > 0 {
			next += len(lines)
			if _, err := out.Write(formatLines(lines, false)); err != nil {
				return nil // the client is gone
			}
			continue
		}
		if ended {
			return nil
		}
		select {
		case <-stdinDone:
			if next >= last {
				return nil
			}
		case <-wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// PortForward answers like an echo server on every port a container of
// the pod declares (spec.containers[].ports[].containerPort): what is sent
// comes back, until the client stops sending.
func (p *Provider) PortForward(ctx context.Context, ns, name string, port int32, stream io.ReadWriteCloser) error {
	p.mu.Lock()
	pod, ok := p.pods[key(ns, name)]
	declared := false
	if ok {
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				declared = declared || cp.ContainerPort == port
			}
		}
	}
	p.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("pod %q is not running on this node", name)
	case !declared:
		return fmt.Errorf("simulated pod %q does not listen on port %d (no container declares it)", name, port)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(stream, stream)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// checkRunning fails unless the pod runs here and the container is running.
func (p *Provider) checkRunning(ns, name, container string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pod, ok := p.pods[key(ns, name)]
	if !ok {
		return fmt.Errorf("pod %q is not running on this node", name)
	}
	for _, cs := range append(slices.Clip(pod.Status.ContainerStatuses), pod.Status.EphemeralContainerStatuses...) {
		if cs.Name == container && cs.State.Running != nil {
			return nil
		}
	}
	return fmt.Errorf("container %q in pod %q is not running", container, name)
}

func orDiscard(w io.WriteCloser) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// shell is the built-in shell of simulated containers.
type shell struct {
	hostname       string
	stdin          io.Reader // nil without stdin
	stdout, stderr io.Writer
}

// run runs one command and returns its exit code.
func (sh *shell) run(ctx context.Context, argv []string) int {
	if len(argv) == 0 {
		return 0
	}
	name, args := path.Base(argv[0]), argv[1:]
	switch name {
	case "echo":
		newline := true
		if len(args) > 0 && args[0] == "-n" {
			newline, args = false, args[1:]
		}
		text := strings.Join(args, " ")
		if newline {
			text += "\n"
		}
		_, _ = io.WriteString(sh.stdout, text)
		return 0
	case "cat":
		if len(args) > 0 && args[0] != "-" {
			fmt.Fprintf(sh.stderr, "cat: can't open '%s': No such file or directory\n", args[0])
			return 1
		}
		if sh.stdin != nil {
			_, _ = io.Copy(sh.stdout, sh.stdin)
		}
		return 0
	case "hostname":
		fmt.Fprintln(sh.stdout, sh.hostname)
		return 0
	case "true":
		return 0
	case "false":
		return 1
	case "sleep":
		if len(args) != 1 {
			fmt.Fprintln(sh.stderr, "usage: sleep SECONDS")
			return 1
		}
		secs, err := strconv.ParseFloat(args[0], 64)
		if err != nil || secs < 0 {
			fmt.Fprintf(sh.stderr, "sleep: invalid number '%s'\n", args[0])
			return 1
		}
		t := time.NewTimer(time.Duration(secs * float64(time.Second)))
		defer t.Stop()
		select {
		case <-t.C:
			return 0
		case <-ctx.Done():
			return 130
		}
	case "sh", "bash", "ash":
		switch {
		case len(args) >= 2 && args[0] == "-c":
			code, _ := sh.script(ctx, args[1])
			return code
		case len(args) == 0:
			return sh.interactive(ctx)
		}
		fmt.Fprintf(sh.stderr, "%s: only -c 'SCRIPT' or a script on stdin are supported\n", name)
		return 2
	}
	fmt.Fprintf(sh.stderr, "sh: %s: not found\n", name)
	return 127
}

// interactive runs the script on stdin line by line.
func (sh *shell) interactive(ctx context.Context) int {
	if sh.stdin == nil {
		return 0
	}
	in := bufio.NewReader(sh.stdin)
	inner := *sh
	inner.stdin = in // commands like cat read the rest of stdin
	code := 0
	for {
		line, err := in.ReadString('\n')
		if strings.TrimSpace(line) != "" {
			var exited bool
			if code, exited = inner.script(ctx, line); exited {
				return code
			}
		}
		if err != nil || ctx.Err() != nil {
			return code
		}
	}
}

// script runs src; exited says it ran `exit`.
func (sh *shell) script(ctx context.Context, src string) (code int, exited bool) {
	cmds, err := parseScript(src)
	if err != nil {
		fmt.Fprintf(sh.stderr, "sh: syntax error: %v\n", err)
		return 2, true
	}
	for _, c := range cmds {
		if (c.op == "&&" && code != 0) || (c.op == "||" && code == 0) {
			continue
		}
		if c.argv[0] == "exit" {
			if len(c.argv) > 1 {
				n, err := strconv.Atoi(c.argv[1])
				if err != nil {
					fmt.Fprintf(sh.stderr, "sh: exit: Illegal number: %s\n", c.argv[1])
					return 2, true
				}
				code = n & 0xff
			}
			return code, true
		}
		code = sh.run(ctx, c.argv)
		if ctx.Err() != nil {
			return code, true
		}
	}
	return code, false
}

// command is one simple command and the operator that joins it to the
// previous one ("", ";", "&&" or "||").
type command struct {
	op   string
	argv []string
}

// parseScript splits src into commands: words separated by blanks, quoted
// with '...' (literal) or "..." (\" and \\ escaped), or escaped with \;
// commands separated by ; && || or newlines.
func parseScript(src string) ([]command, error) {
	var cmds []command
	var word strings.Builder
	var argv []string
	inWord := false
	op := ""
	endWord := func() {
		if inWord {
			argv = append(argv, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func(next string) error {
		endWord()
		if len(argv) == 0 {
			if next == ";" && op != "&&" && op != "||" {
				return nil // empty statements between ; and newlines
			}
			return fmt.Errorf("unexpected %q", next)
		}
		cmds = append(cmds, command{op: op, argv: argv})
		argv, op = nil, next
		return nil
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(src[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated quoted string")
			}
			word.WriteString(src[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			inWord = true
			i++
			for ; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' && i+1 < len(src) && (src[i+1] == '"' || src[i+1] == '\\') {
					i++
				}
				word.WriteByte(src[i])
			}
			if i >= len(src) {
				return nil, fmt.Errorf("unterminated quoted string")
			}
		case c == '\\' && i+1 < len(src):
			i++
			word.WriteByte(src[i])
			inWord = true
		case c == ' ' || c == '\t':
			endWord()
		case c == ';' || c == '\n':
			if err := endCommand(";"); err != nil {
				return nil, err
			}
		case (c == '&' || c == '|') && i+1 < len(src) && src[i+1] == c:
			if err := endCommand(src[i : i+2]); err != nil {
				return nil, err
			}
			i++
		case c == '&' || c == '|' || c == '<' || c == '>' || c == '$' || c == '`':
			return nil, fmt.Errorf("%q is not supported by the simulated shell", string(c))
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if len(argv) > 0 {
		cmds = append(cmds, command{op: op, argv: argv})
	} else if op == "&&" || op == "||" {
		return nil, fmt.Errorf("unexpected end after %q", op)
	}
	return cmds, nil
}
