package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/minik8s/minik8s/pkg/pki"
)

func TestPromDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{time.Second, "1s"},
		{15 * time.Second, "15s"},
		{90 * time.Second, "90s"},
		{2 * time.Minute, "2m"},
		{7 * 24 * time.Hour, "7d"},
		{36 * time.Hour, "36h"},
		{1500 * time.Millisecond, "1500ms"},
	} {
		if got := promDuration(tc.in); got != tc.want {
			t.Errorf("promDuration(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestComplete(t *testing.T) {
	bundle := &pki.Bundle{}
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr bool
		check   func(*testing.T, Config)
	}{
		{name: "defaults", cfg: Config{Dir: "d", APIServer: "https://127.0.0.1:6443", Bundle: bundle, Binary: "/bin/true"},
			check: func(t *testing.T, c Config) {
				if c.Listen != ":9090" || c.ScrapeInterval != 15*time.Second || c.Retention != 7*24*time.Hour || c.NodeExporterPort != 9100 {
					t.Errorf("defaults: %+v", c)
				}
				if !filepath.IsAbs(c.Dir) {
					t.Errorf("Dir %q is relative; Prometheus runs in it", c.Dir)
				}
			}},
		{name: "no dir", cfg: Config{APIServer: "https://127.0.0.1:6443", Bundle: bundle, Binary: "/bin/true"}, wantErr: true},
		{name: "no CA", cfg: Config{Dir: "d", APIServer: "https://127.0.0.1:6443", Binary: "/bin/true"}, wantErr: true},
		{name: "bad URL", cfg: Config{Dir: "d", APIServer: "127.0.0.1:6443", Bundle: bundle, Binary: "/bin/true"}, wantErr: true},
		{name: "bad listen", cfg: Config{Dir: "d", APIServer: "https://a", Bundle: bundle, Binary: "/bin/true", Listen: "9090"}, wantErr: true},
		{name: "interval under 1ms", cfg: Config{Dir: "d", APIServer: "https://a", Bundle: bundle, Binary: "/bin/true",
			ScrapeInterval: time.Microsecond}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.complete()
			if (err != nil) != tc.wantErr {
				t.Fatalf("complete() = %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, tc.cfg)
			}
		})
	}
}

// TestDiscoversKubernetes passes over Debian's prometheus, built without
// Kubernetes service discovery, and what is no Go program.
func TestDiscoversKubernetes(t *testing.T) {
	if discoversKubernetes("/nonexistent/prometheus") || discoversKubernetes("/bin/sh") {
		t.Error("a missing file or a C program discovers Kubernetes")
	}
	const debian = "/usr/bin/prometheus"
	out, err := exec.Command(debian, "--version").Output()
	if err != nil || !strings.Contains(string(out), "+ds") {
		t.Skipf("no Debian prometheus at %s", debian)
	}
	if discoversKubernetes(debian) {
		t.Errorf("Debian's %s taken for one with Kubernetes service discovery", debian)
	}
}

func TestApiserverAddress(t *testing.T) {
	for in, want := range map[string]string{
		"https://127.0.0.1:6443": "127.0.0.1:6443",
		"https://[::1]:6443":     "[::1]:6443",
		"https://cp.example":     "cp.example:443",
	} {
		got, err := apiserverAddress(in)
		if err != nil || got != want {
			t.Errorf("apiserverAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// testConfig writes a completed Config's prometheus.yml and identity
// into a temporary directory and returns the file's path.
func testConfig(t *testing.T) (Config, string) {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: t.TempDir(), APIServer: "https://127.0.0.1:6443", Bundle: bundle, Binary: "/bin/true",
		Listen: ":9090", ScrapeInterval: time.Second}
	if err := cfg.complete(); err != nil {
		t.Fatal(err)
	}
	tls, err := writeIdentity(filepath.Join(cfg.Dir, tlsDir), bundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{tls.CA, tls.Cert, tls.Key} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, st.Mode())
		}
	}
	data, err := configFile(cfg, tls)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfg.Dir, ConfigFile)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, path
}

// TestConfigFileChecks has Prometheus' own promtool check the file: the
// one make deps builds beside prometheus (Debian's knows no Kubernetes
// service discovery).
func TestConfigFileChecks(t *testing.T) {
	prom, err := FindBinary()
	if err != nil {
		t.Skipf("no prometheus (hack/install-deps.sh builds it, CI has it): %v", err)
	}
	promtool := filepath.Join(filepath.Dir(prom), "promtool")
	if !discoversKubernetes(promtool) {
		t.Skipf("no promtool with Kubernetes service discovery beside %s (hack/install-deps.sh builds it)", prom)
	}
	_, path := testConfig(t)
	if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
		data, _ := os.ReadFile(path)
		t.Fatalf("promtool check config: %v\n%s\n%s", err, out, data)
	}
}

func TestConfigFileJobs(t *testing.T) {
	_, path := testConfig(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c promConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatal(err)
	}
	if c.Global.ScrapeInterval != "1s" || c.Global.ScrapeTimeout != "1s" {
		t.Errorf("global = %+v, want interval and timeout 1s", c.Global)
	}
	jobs := map[string]scrapeConfig{}
	for _, j := range c.ScrapeConfigs {
		jobs[j.JobName] = j
	}
	// rule finds the relabeling of job that sets target.
	rule := func(job, target string) relabelConfig {
		t.Helper()
		rules := jobs[job].RelabelConfigs
		i := slices.IndexFunc(rules, func(r relabelConfig) bool { return r.TargetLabel == target })
		if i < 0 {
			t.Fatalf("job %s sets no %s: %+v", job, target, rules)
		}
		return rules[i]
	}
	for _, tc := range []struct {
		job, target, want string
	}{
		{JobKubelet, "__address__", "127.0.0.1:6443"},
		{JobKubelet, "__metrics_path__", "/api/v1/nodes/${1}/proxy/metrics"},
		{JobKubeletCadvisor, "__address__", "127.0.0.1:6443"},
		{JobKubeletCadvisor, "__metrics_path__", "/api/v1/nodes/${1}/proxy/metrics/cadvisor"},
		{JobNodeExporter, "__address__", "${1}:9100"},
		{JobPods, "container", ""},
		{JobServiceEndpoints, "service", ""},
	} {
		if got := rule(tc.job, tc.target); got.Replacement != tc.want {
			t.Errorf("job %s: %s = %q, want %q", tc.job, tc.target, got.Replacement, tc.want)
		}
	}
	for job, role := range map[string]string{JobKubelet: "node", JobKubeletCadvisor: "node", JobNodeExporter: "node",
		JobPods: "pod", JobServiceEndpoints: "endpointslice"} {
		sd := jobs[job].KubernetesSDConfigs
		if len(sd) != 1 || sd[0].Role != role || sd[0].APIServer != "https://127.0.0.1:6443" || sd[0].TLSConfig == nil || sd[0].TLSConfig.CertFile == "" {
			t.Errorf("job %s discovers with %+v, want role %s on the apiserver with our certificate", job, sd, role)
		}
	}
	// Only the apiserver gets our certificate.
	for _, job := range []string{JobNodeExporter, JobPods, JobServiceEndpoints, JobPrometheus} {
		if jobs[job].TLSConfig != nil {
			t.Errorf("job %s scrapes with %+v; our certificate is for the apiserver", job, jobs[job].TLSConfig)
		}
	}
	for _, job := range []string{JobAPIServer, JobKubelet, JobKubeletCadvisor} {
		if tls := jobs[job].TLSConfig; jobs[job].Scheme != "https" || tls == nil || tls.CertFile == "" || tls.CAFile == "" {
			t.Errorf("job %s scrapes the apiserver with scheme %q, TLS %+v", job, jobs[job].Scheme, tls)
		}
	}
	if got := jobs[JobPrometheus].StaticConfigs; len(got) != 1 || !slices.Equal(got[0].Targets, []string{"127.0.0.1:9090"}) {
		t.Errorf("prometheus scrapes itself at %+v", got)
	}
}
