package slurm

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sshServer is an sshd that runs each exec request with bash -c.
func sshServer(t *testing.T, clientKey ssh.PublicKey) (addr string, hostKey ssh.PublicKey) {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(k.Marshal(), clientKey.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_, chans, reqs, err := ssh.NewServerConn(c, cfg)
				if err != nil {
					return
				}
				go ssh.DiscardRequests(reqs)
				for nc := range chans {
					ch, reqs, err := nc.Accept()
					if err != nil {
						continue
					}
					go func() {
						defer ch.Close()
						for req := range reqs {
							if req.Type != "exec" {
								_ = req.Reply(false, nil)
								continue
							}
							n := binary.BigEndian.Uint32(req.Payload)
							cmd := exec.Command("bash", "-c", string(req.Payload[4:4+n]))
							cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
							_ = req.Reply(true, nil)
							code := uint32(0)
							if err := cmd.Run(); err != nil {
								code = 1
								var ee *exec.ExitError
								if errors.As(err, &ee) {
									code = uint32(ee.ExitCode())
								}
							}
							_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, code))
							return
						}
					}()
				}
			}()
		}
	}()
	return l.Addr().String(), signer.PublicKey()
}

func TestSSHRunner(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	clientPub, _ := ssh.NewPublicKey(pub)
	addr, hostKey := sshServer(t, clientPub)

	r, err := NewSSHRunner(SSHConfig{Addr: addr, User: "slurm", PrivateKey: pem.EncodeToMemory(block), HostKey: hostKey,
		Env: []string{"GREETING=hello world"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	out, err := r.Run(ctx, "sh", []string{"-c", `echo "$GREETING: $1"; cat`, "sh", "it's"}, []byte("from stdin\n"))
	if err != nil || string(out) != "hello world: it's\nfrom stdin\n" {
		t.Errorf("Run = %q, %v", out, err)
	}
	_, err = r.Run(ctx, "sh", []string{"-c", "echo oops >&2; exit 3"}, nil)
	var ce *CommandError
	if !errors.As(err, &ce) || strings.TrimSpace(ce.Stderr) != "oops" {
		t.Errorf("failing command: %v", err)
	}
	// A second session on the same connection, and one after it broke.
	r.conn.Close()
	if out, err := r.Run(ctx, "echo", []string{"again"}, nil); err != nil || string(out) != "again\n" {
		t.Errorf("after a broken connection: %q, %v", out, err)
	}

	other, _, _ := ed25519.GenerateKey(rand.Reader)
	wrongHost, _ := ssh.NewPublicKey(other)
	bad, _ := NewSSHRunner(SSHConfig{Addr: addr, User: "slurm", PrivateKey: pem.EncodeToMemory(block), HostKey: wrongHost})
	if _, err := bad.Run(ctx, "true", nil, nil); err == nil {
		t.Error("a wrong host key was accepted")
	}
}
