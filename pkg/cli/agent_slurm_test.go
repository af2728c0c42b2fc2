package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/minik8s/minik8s/pkg/kubelet/slurm"
)

// The --slurm-* flags give a local runner, or an SSH runner with a key and
// the login node's host key.
func TestSlurmRunner(t *testing.T) {
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key.pub")
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(hostKey, ssh.MarshalAuthorizedKey(sshPub), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knownHosts, []byte("login.hpc "+string(ssh.MarshalAuthorizedKey(sshPub))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		flags   slurmFlags
		ssh     bool
		wantErr string
	}{
		{name: "local", flags: slurmFlags{conf: "/etc/slurm/x.conf"}},
		{name: "ssh with a host key file", flags: slurmFlags{ssh: "alice@login.hpc:2222", sshKey: keyFile, sshKnownHost: hostKey}, ssh: true},
		{name: "ssh with a known_hosts line", flags: slurmFlags{ssh: "alice@login.hpc", sshKey: keyFile, sshKnownHost: knownHosts}, ssh: true},
		{name: "ssh insecure", flags: slurmFlags{ssh: "alice@login.hpc", sshKey: keyFile, sshInsecure: true}, ssh: true},
		{name: "ssh without a user", flags: slurmFlags{ssh: "login.hpc", sshKey: keyFile, sshInsecure: true}, wantErr: "want user@host"},
		{name: "ssh without a key", flags: slurmFlags{ssh: "alice@login.hpc", sshInsecure: true}, wantErr: "needs --slurm-ssh-key"},
		{name: "ssh without a host key", flags: slurmFlags{ssh: "alice@login.hpc", sshKey: keyFile}, wantErr: "needs --slurm-ssh-known-host"},
		{name: "a bad host key file", flags: slurmFlags{ssh: "alice@login.hpc", sshKey: keyFile, sshKnownHost: keyFile}, wantErr: "no public key"},
		{name: "ssh flags without ssh", flags: slurmFlags{sshKey: keyFile}, wantErr: "need --slurm-ssh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, closeRunner, err := slurmRunner(&tc.flags)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = closeRunner() }()
			switch r := r.(type) {
			case slurm.LocalRunner:
				if tc.ssh || !slices.Contains(r.Env, "SLURM_CONF="+tc.flags.conf) {
					t.Errorf("local runner %+v", r)
				}
			case *slurm.SSHRunner:
				if !tc.ssh {
					t.Errorf("ssh runner for %+v", tc.flags)
				}
			default:
				t.Errorf("runner %T", r)
			}
		})
	}
}

func TestKubeletServerAddress(t *testing.T) {
	for _, tc := range []struct{ at, nodeIP, want string }{
		{":10250", "", ":10250"},
		{":10250", "10.0.0.5", "10.0.0.5:10250"},
		{"127.0.0.1:10250", "10.0.0.5", "127.0.0.1:10250"},
	} {
		if got := kubeletServerAddress(&agentFlags{kubeletAt: tc.at, nodeIP: tc.nodeIP}); got != tc.want {
			t.Errorf("--kubelet-address %s --node-ip %q: %s, want %s", tc.at, tc.nodeIP, got, tc.want)
		}
	}
}
