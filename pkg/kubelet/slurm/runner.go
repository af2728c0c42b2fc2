package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Runner runs one Slurm command (sbatch, scontrol, scancel, cat, ...) on
// the Slurm login host and returns its standard output. A command that
// exits non-zero returns a *CommandError holding its standard error.
type Runner interface {
	Run(ctx context.Context, name string, args []string, stdin []byte) (stdout []byte, err error)
}

// CommandError is a command that ran and failed.
type CommandError struct {
	Name   string
	Args   []string
	Stderr string
	Err    error
}

func (e *CommandError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("%s: %v", shellJoin(e.Name, e.Args), e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", shellJoin(e.Name, e.Args), e.Err, msg)
}

func (e *CommandError) Unwrap() error { return e.Err }

// LocalRunner runs the commands on this machine, a Slurm login host.
type LocalRunner struct {
	// Env is added to this process's environment (e.g. SLURM_CONF=/etc/x/slurm.conf).
	Env []string
	// Dir is the commands' working directory; empty means this process's.
	Dir string
}

var _ Runner = LocalRunner{}

func (r LocalRunner) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if len(r.Env) > 0 {
		cmd.Env = append(cmd.Environ(), r.Env...)
	}
	cmd.Dir = r.Dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &CommandError{Name: name, Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// SSHConfig says how to reach a remote Slurm login node.
type SSHConfig struct {
	// Addr is host:port; the port defaults to 22.
	Addr string
	User string
	// PrivateKey is the PEM-encoded private key (unencrypted).
	PrivateKey []byte
	// HostKey is the login node's public host key. It is required unless
	// InsecureIgnoreHostKey is set.
	HostKey ssh.PublicKey
	// InsecureIgnoreHostKey accepts any host key (tests only).
	InsecureIgnoreHostKey bool
	// Env is set for each command (as `env K=V ...`, since sshd usually
	// refuses SetEnv requests).
	Env []string
	// Dir is the commands' working directory on the login node.
	Dir string
	// DialTimeout defaults to 10s.
	DialTimeout time.Duration
}

// SSHRunner runs the commands on a remote login node, each in a new
// session of one shared connection, redialled when it breaks.
type SSHRunner struct {
	cfg    SSHConfig
	client *ssh.ClientConfig

	mu   sync.Mutex
	conn *ssh.Client
}

var _ Runner = (*SSHRunner)(nil)

// NewSSHRunner checks cfg; it connects on the first Run.
func NewSSHRunner(cfg SSHConfig) (*SSHRunner, error) {
	if cfg.Addr == "" || cfg.User == "" {
		return nil, errors.New("slurm ssh: address and user required")
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		cfg.Addr = net.JoinHostPort(cfg.Addr, "22")
	}
	signer, err := ssh.ParsePrivateKey(cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("slurm ssh: private key: %w", err)
	}
	var hostKey ssh.HostKeyCallback
	switch {
	case cfg.HostKey != nil:
		hostKey = ssh.FixedHostKey(cfg.HostKey)
	case cfg.InsecureIgnoreHostKey:
		hostKey = ssh.InsecureIgnoreHostKey() //nolint:gosec // explicitly asked for
	default:
		return nil, errors.New("slurm ssh: host key required (or InsecureIgnoreHostKey)")
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	return &SSHRunner{cfg: cfg, client: &ssh.ClientConfig{
		User: cfg.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hostKey, Timeout: cfg.DialTimeout,
	}}, nil
}

// Close closes the connection, if any.
func (r *SSHRunner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return nil
	}
	err := r.conn.Close()
	r.conn = nil
	return err
}

func (r *SSHRunner) session() (*ssh.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if r.conn == nil {
			c, err := ssh.Dial("tcp", r.cfg.Addr, r.client)
			if err != nil {
				return nil, fmt.Errorf("slurm ssh: dial %s: %w", r.cfg.Addr, err)
			}
			r.conn = c
		}
		s, err := r.conn.NewSession()
		if err == nil {
			return s, nil
		}
		// A broken connection: drop it and dial again once.
		_ = r.conn.Close()
		r.conn = nil
		if attempt == 1 {
			return nil, fmt.Errorf("slurm ssh: new session: %w", err)
		}
	}
	return nil, errors.New("unreachable")
}

// Command is the remote command line for name and args.
func (r *SSHRunner) Command(name string, args []string) string {
	line := shellJoin(name, args)
	if len(r.cfg.Env) > 0 {
		env := make([]string, len(r.cfg.Env))
		for i, kv := range r.cfg.Env {
			env[i] = shellQuote(kv)
		}
		line = "env " + strings.Join(env, " ") + " " + line
	}
	if r.cfg.Dir != "" {
		line = "cd " + shellQuote(r.cfg.Dir) + " && " + line
	}
	return line
}

func (r *SSHRunner) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	s, err := r.session()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	if stdin != nil {
		s.Stdin = bytes.NewReader(stdin)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(r.Command(name, args)) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		_ = s.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		return stdout.Bytes(), &CommandError{Name: name, Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// shellQuote quotes s for a POSIX shell, leaving plain words bare.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	plain := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=,+@%", c)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(name string, args []string) string {
	parts := []string{shellQuote(name)}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// splitShell splits s into words as a POSIX shell would, with single and
// double quotes and backslashes, but no expansions.
func splitShell(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("trailing \\ in %q", s)
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
