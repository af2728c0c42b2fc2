package local

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// Files every container of a pod mounts.
const (
	hostsFile    = "etc-hosts"
	resolvFile   = "resolv.conf"
	hostnameFile = "hostname"

	// maxTerminationMessage is the most a termination message file gives.
	maxTerminationMessage = 4096
	// fallbackLogLines and fallbackLogBytes bound the log tail that
	// FallbackToLogsOnError uses.
	fallbackLogLines = 80
	fallbackLogBytes = 2048
)

// writePodFiles writes the pod's /etc/hosts, /etc/resolv.conf and
// /etc/hostname.
func (p *Provider) writePodFiles(pod *corev1.Pod, podIP string) error {
	dir := p.podDir(pod.UID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hosts, err := p.hostsContent(pod, podIP)
	if err != nil {
		return err
	}
	resolv, err := p.resolvContent(pod)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{hostsFile: hosts, resolvFile: resolv, hostnameFile: []byte(podHostname(pod) + "\n")} {
		if err := writeFileAtomic(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic replaces a file by renaming a complete new one over it,
// unless it already holds data: containers bind-mount the file itself, so
// a needless new inode would leave them on the old one.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// podHostname is the pod's host name: spec.hostname or its name, cut to
// 63 characters.
func podHostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// hostsContent is the pod's managed /etc/hosts, as Kubernetes writes it;
// a hostNetwork pod gets the node's.
func (p *Provider) hostsContent(pod *corev1.Pod, podIP string) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		host, err := os.ReadFile("/etc/hosts")
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		b.Write(host)
		if len(host) > 0 && host[len(host)-1] != '\n' {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		if podIP != "" {
			host := podHostname(pod)
			if sub := pod.Spec.Subdomain; sub != "" {
				fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", podIP, host, sub, pod.Namespace, p.cfg.ClusterDomain, host)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", podIP, host)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes(), nil
}

// resolvConf is a parsed resolv.conf.
type resolvConf struct {
	nameservers, searches, options []string
}

// resolvContent is the pod's /etc/resolv.conf for its dnsPolicy:
// ClusterFirst points at ClusterDNS with the cluster's search path
// (the host's when there is no cluster DNS or the pod uses the host
// network), Default is the host's, None only the pod's dnsConfig.
func (p *Provider) resolvContent(pod *corev1.Pod) ([]byte, error) {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	if policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = corev1.DNSDefault
	}
	if (policy == corev1.DNSClusterFirst || policy == corev1.DNSClusterFirstWithHostNet) && len(p.cfg.ClusterDNS) == 0 {
		policy = corev1.DNSDefault
	}
	var rc resolvConf
	if policy != corev1.DNSNone {
		host, err := p.hostResolvConf()
		if err != nil {
			return nil, err
		}
		rc = host
		if policy != corev1.DNSDefault {
			d := p.cfg.ClusterDomain
			rc = resolvConf{
				nameservers: slices.Clone(p.cfg.ClusterDNS),
				searches:    append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, host.searches...),
				options:     []string{"ndots:5"},
			}
		}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		rc.nameservers = append(rc.nameservers, c.Nameservers...)
		rc.searches = append(rc.searches, c.Searches...)
		for _, o := range c.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			rc.options = mergeOption(rc.options, o.Name, opt)
		}
	}
	rc.nameservers = dedupe(rc.nameservers)
	if len(rc.nameservers) > 3 {
		rc.nameservers = rc.nameservers[:3]
	}
	rc.searches = dedupe(rc.searches)
	if len(rc.searches) > 32 {
		rc.searches = rc.searches[:32]
	}
	var b bytes.Buffer
	if len(rc.searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.searches, " "))
	}
	for _, ns := range rc.nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(rc.options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.options, " "))
	}
	return b.Bytes(), nil
}

func mergeOption(opts []string, name, opt string) []string {
	for i, o := range opts {
		if n, _, _ := strings.Cut(o, ":"); n == name {
			opts[i] = opt
			return opts
		}
	}
	return append(opts, opt)
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// hostResolvConf reads the node's resolver configuration. A file naming
// only loopback servers (systemd-resolved's stub), which a pod cannot
// reach, gives way to systemd-resolved's upstream list when there is one.
func (p *Provider) hostResolvConf() (resolvConf, error) {
	path := p.cfg.ResolvConf
	explicit := path != ""
	if !explicit {
		path = "/etc/resolv.conf"
	}
	rc, err := readResolvConf(path)
	if err != nil {
		if os.IsNotExist(err) && !explicit {
			return resolvConf{}, nil
		}
		return resolvConf{}, fmt.Errorf("read host resolv.conf: %w", err)
	}
	if !explicit && onlyLoopback(rc.nameservers) {
		if up, err := readResolvConf("/run/systemd/resolve/resolv.conf"); err == nil && len(up.nameservers) > 0 {
			return up, nil
		}
	}
	return rc, nil
}

func onlyLoopback(servers []string) bool {
	for _, s := range servers {
		if a, err := netip.ParseAddr(s); err != nil || !a.IsLoopback() {
			return false
		}
	}
	return len(servers) > 0
}

func readResolvConf(path string) (resolvConf, error) {
	f, err := os.Open(path)
	if err != nil {
		return resolvConf{}, err
	}
	defer f.Close()
	return parseResolvConf(f)
}

func parseResolvConf(r io.Reader) (resolvConf, error) {
	var rc resolvConf
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			rc.nameservers = append(rc.nameservers, f[1])
		case "search", "domain":
			rc.searches = append([]string(nil), f[1:]...)
		case "options":
			for _, o := range f[1:] {
				name, _, _ := strings.Cut(o, ":")
				rc.options = mergeOption(rc.options, name, o)
			}
		}
	}
	return rc, s.Err()
}

// terminationFile is the host file a container attempt writes its
// termination message to.
func (p *Provider) terminationFile(uid types.UID, container string, attempt int) string {
	return filepath.Join(p.podDir(uid), "containers", container, fmt.Sprint(attempt))
}

// readTerminationMessages reads, once, the termination message of each
// exited container: its terminationMessagePath file, or with
// FallbackToLogsOnError the end of its log when that is empty and it
// failed.
func (w *podWorker) readTerminationMessages(pod *corev1.Pod) {
	for _, c := range w.obs.containers {
		if c.State != runtime.StateExited {
			continue
		}
		if _, done := w.termMsgs[c.ID]; done {
			continue
		}
		attempt := restartCountOf(c)
		msg := readLimited(w.p.terminationFile(pod.UID, c.Name, attempt), maxTerminationMessage)
		if spec := podenv.FindContainer(pod, c.Name); msg == "" && c.ExitCode != 0 && spec != nil &&
			spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			path := c.LogPath
			if path == "" {
				path = w.p.logPath(pod, c.Name, attempt)
			}
			msg = logTail(path, fallbackLogLines, fallbackLogBytes)
		}
		w.termMsgs[c.ID] = msg
	}
}

func readLimited(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}
