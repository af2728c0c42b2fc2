package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/slurm"
)

// slurmFlags configure --provider slurm: where Slurm's commands run and
// how the virtual node uses the cluster.
type slurmFlags struct {
	partition    string
	workRoot     string
	ssh          string // user@host[:port]; empty: local commands
	sshKey       string
	sshKnownHost string
	sshInsecure  bool
	conf         string
	poll         time.Duration
}

// slurmEventsComponent is the source of the provider's Events.
const slurmEventsComponent = "slurm-provider"

func addSlurmFlags(fl *pflag.FlagSet, f *slurmFlags) {
	fl.StringVar(&f.partition, "slurm-partition", "", "Slurm partition that receives the pods' jobs and gives the node its capacity (default: the cluster's default partition)")
	fl.StringVar(&f.workRoot, "slurm-work-root", "/var/lib/minik8s/slurm", "directory for the jobs' work dirs, shared by the login host and the compute nodes")
	fl.StringVar(&f.ssh, "slurm-ssh", "", "run the Slurm commands over SSH on this login node, user@host[:port] (default: run them here)")
	fl.StringVar(&f.sshKey, "slurm-ssh-key", "", "private key file (unencrypted PEM) for --slurm-ssh")
	fl.StringVar(&f.sshKnownHost, "slurm-ssh-known-host", "", "the login node's public host key file (authorized_keys or known_hosts line) for --slurm-ssh")
	fl.BoolVar(&f.sshInsecure, "slurm-ssh-insecure", false, "accept any host key from the --slurm-ssh login node (tests only)")
	fl.StringVar(&f.conf, "slurm-conf", "", "slurm.conf path, set as SLURM_CONF for the Slurm commands (default: Slurm's own)")
	fl.DurationVar(&f.poll, "slurm-poll", 5*time.Second, "how often the provider lists the Slurm jobs")
}

// slurmRunner is where the Slurm commands run: this machine, or the
// --slurm-ssh login node. close releases its connection.
func slurmRunner(f *slurmFlags) (runner slurm.Runner, close func() error, err error) {
	var env []string
	if f.conf != "" {
		env = append(env, "SLURM_CONF="+f.conf)
	}
	if f.ssh == "" {
		if f.sshKey != "" || f.sshKnownHost != "" || f.sshInsecure {
			return nil, nil, errors.New("--slurm-ssh-key, --slurm-ssh-known-host and --slurm-ssh-insecure need --slurm-ssh")
		}
		return slurm.LocalRunner{Env: env}, func() error { return nil }, nil
	}
	user, addr, ok := strings.Cut(f.ssh, "@")
	if !ok || user == "" || addr == "" {
		return nil, nil, fmt.Errorf("--slurm-ssh %q: want user@host[:port]", f.ssh)
	}
	if f.sshKey == "" {
		return nil, nil, errors.New("--slurm-ssh needs --slurm-ssh-key")
	}
	key, err := os.ReadFile(f.sshKey)
	if err != nil {
		return nil, nil, fmt.Errorf("--slurm-ssh-key: %w", err)
	}
	cfg := slurm.SSHConfig{Addr: addr, User: user, PrivateKey: key, InsecureIgnoreHostKey: f.sshInsecure, Env: env}
	switch {
	case f.sshKnownHost != "":
		if cfg.HostKey, err = readHostKey(f.sshKnownHost); err != nil {
			return nil, nil, fmt.Errorf("--slurm-ssh-known-host: %w", err)
		}
	case !f.sshInsecure:
		return nil, nil, errors.New("--slurm-ssh needs --slurm-ssh-known-host (or --slurm-ssh-insecure)")
	}
	r, err := slurm.NewSSHRunner(cfg)
	if err != nil {
		return nil, nil, err
	}
	return r, r.Close, nil
}

// readHostKey reads a public host key: an authorized_keys-style line (as in
// /etc/ssh/ssh_host_ed25519_key.pub) or a known_hosts line.
func readHostKey(path string) (ssh.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if key, _, _, _, err := ssh.ParseAuthorizedKey(data); err == nil {
		return key, nil
	}
	_, _, key, _, _, err := ssh.ParseKnownHosts(data)
	if err != nil {
		return nil, fmt.Errorf("%s: no public key (authorized_keys or known_hosts format): %w", path, err)
	}
	return key, nil
}

// runSlurmNode runs a virtual node whose pods are Slurm batch jobs: the
// provider's poll loop and a kubelet (no containerd, CNI or proxy), whose
// server serves the jobs' output as the pods' logs.
func runSlurmNode(ctx context.Context, f *agentFlags, log *slog.Logger) error {
	if f.nodes > 1 {
		return errors.New("--nodes > 1 is for the simulated provider; run one agent per Slurm partition")
	}
	runner, closeRunner, err := slurmRunner(&f.slurm)
	if err != nil {
		return err
	}
	defer func() { _ = closeRunner() }()
	rc, err := nodeRESTConfig(ctx, f, f.nodeName, log)
	if err != nil {
		return err
	}
	pool, err := clusterCAPool(rc)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: slurmEventsComponent, Host: f.nodeName})

	p, err := slurm.New(slurm.Config{
		NodeName: f.nodeName, Runner: runner, Partition: f.slurm.partition, WorkRoot: f.slurm.workRoot,
		PollInterval: f.slurm.poll, Client: client, Recorder: recorder, Logger: log,
	})
	if err != nil {
		return err
	}
	k, err := kubelet.New(kubelet.Config{
		Client: client, NodeName: f.nodeName, Provider: p, Labels: f.labels, Logger: log,
		ServerAddress: kubeletServerAddress(f), ClientCA: pool,
	})
	if err != nil {
		return err
	}
	log.Info("slurm virtual node", "node", f.nodeName, "partition", orDefaultString(f.slurm.partition, "(default)"),
		"workRoot", f.slurm.workRoot, "ssh", orDefaultString(f.slurm.ssh, "(local commands)"))

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	providerDone := make(chan error, 1)
	go func() { providerDone <- p.Start(runCtx) }()
	err = k.Start(runCtx)
	cancel()
	if perr := <-providerDone; err == nil && perr != nil {
		err = fmt.Errorf("slurm provider: %w", perr)
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // asked to stop
	}
	return err
}

// kubeletServerAddress is where the kubelet serves logs: --kubelet-address,
// on --node-ip when that gives no host (the IP goes into the Node, so the
// apiserver can reach it).
func kubeletServerAddress(f *agentFlags) string {
	host, port, err := net.SplitHostPort(f.kubeletAt)
	if err != nil || host != "" || f.nodeIP == "" {
		return f.kubeletAt
	}
	return net.JoinHostPort(f.nodeIP, port)
}

// clusterCAPool is the cluster CA of rc, which verifies the apiserver's
// calls to the kubelet.
func clusterCAPool(rc *rest.Config) (*x509.CertPool, error) {
	caPEM := rc.TLSClientConfig.CAData
	if len(caPEM) == 0 && rc.TLSClientConfig.CAFile != "" {
		var err error
		if caPEM, err = os.ReadFile(rc.TLSClientConfig.CAFile); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the kubeconfig carries no cluster CA: the kubelet needs it to verify the apiserver's calls")
	}
	return pool, nil
}

func orDefaultString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
