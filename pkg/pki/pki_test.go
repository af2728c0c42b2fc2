package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

var allFiles = []string{CACertFile, CAKeyFile, ServingCertFile, ServingKeyFile, AdminCertFile, AdminKeyFile, TokensFile, ServiceAccountKeyFile, FrontProxyDir}

func mustEnsure(t *testing.T, cfg Config) *Bundle {
	t.Helper()
	b, err := Ensure(cfg)
	if err != nil {
		t.Fatalf("Ensure(%+v): %v", cfg, err)
	}
	return b
}

func setNow(t *testing.T, f func() time.Time) {
	t.Helper()
	old := now
	now = f
	t.Cleanup(func() { now = old })
}

func verifies(t *testing.T, b *Bundle, c *x509.Certificate, usage x509.ExtKeyUsage) {
	t.Helper()
	if _, err := c.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Fatalf("certificate %q does not verify against the CA: %v", c.Subject, err)
	}
}

func TestEnsureCreatesAndReloads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first := mustEnsure(t, Config{Dir: dir, Hosts: []string{"api.example.test"}})
	second := mustEnsure(t, Config{Dir: dir, Hosts: []string{"api.example.test"}})

	same := []struct {
		name string
		a, b []byte
	}{
		{"CA", first.CAPEM, second.CAPEM},
		{"admin key", first.AdminKeyPEM, second.AdminKeyPEM},
		{"admin cert", first.AdminCertPEM, second.AdminCertPEM},
		{"admin token", []byte(first.AdminToken), []byte(second.AdminToken)},
		{"serving cert", first.Serving.Certificate[0], second.Serving.Certificate[0]},
		{"service account key", publicDER(t, first.ServiceAccountKey), publicDER(t, second.ServiceAccountKey)},
	}
	for _, tc := range same {
		t.Run("same "+tc.name, func(t *testing.T) {
			if len(tc.a) == 0 || !bytes.Equal(tc.a, tc.b) {
				t.Errorf("%s changed between Ensure calls (or is empty)", tc.name)
			}
		})
	}

	for _, name := range allFiles {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := os.FileMode(0o600); fi.Mode().Perm() != want && !(fi.IsDir() && fi.Mode().Perm() == 0o700) {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(allFiles) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("dir holds %v, want exactly %v (no temporary files)", names, allFiles)
	}

	b := second
	verifies(t, b, b.Serving.Leaf, x509.ExtKeyUsageServerAuth)
	verifies(t, b, b.AdminCert.Leaf, x509.ExtKeyUsageClientAuth)
	if got := b.AdminCert.Leaf.Subject; got.CommonName != AdminUser || !slices.Equal(got.Organization, []string{MastersGroup}) {
		t.Errorf("admin subject = %v", got)
	}
	if !strings.Contains(string(b.AdminKeyPEM), "EC PRIVATE KEY") {
		t.Errorf("admin key is not an EC key")
	}
	if b.TokenFile != filepath.Join(dir, TokensFile) {
		t.Errorf("TokenFile = %q", b.TokenFile)
	}
	data, _ := os.ReadFile(b.TokenFile)
	if want := b.AdminToken + "," + AdminUser + "," + AdminUser + "," + MastersGroup + "\n"; string(data) != want {
		t.Errorf("tokens.csv = %q, want %q", data, want)
	}

	// Default hosts are always present.
	leaf := b.Serving.Leaf
	for _, d := range []string{"localhost", "api.example.test"} {
		if !slices.Contains(leaf.DNSNames, d) {
			t.Errorf("serving cert lacks DNS name %q: %v", d, leaf.DNSNames)
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" && !slices.Contains(leaf.DNSNames, strings.ToLower(h)) && net.ParseIP(h) == nil {
		t.Errorf("serving cert lacks hostname %q: %v", h, leaf.DNSNames)
	}
	for _, ip := range []string{"127.0.0.1", "::1"} {
		if !slices.ContainsFunc(leaf.IPAddresses, net.ParseIP(ip).Equal) {
			t.Errorf("serving cert lacks IP %s: %v", ip, leaf.IPAddresses)
		}
	}
}

func TestEnsureReissuesServingCert(t *testing.T) {
	tests := []struct {
		name    string
		first   []string
		then    []string
		reissue bool
	}{
		{"same hosts", []string{"a.test", "10.0.0.1"}, []string{"a.test", "10.0.0.1"}, false},
		{"fewer hosts", []string{"a.test", "10.0.0.1"}, []string{"a.test"}, false},
		{"default host only", nil, []string{"localhost", "127.0.0.1"}, false},
		{"case and trailing dot", []string{"a.test"}, []string{"A.Test."}, false},
		{"new DNS name", []string{"a.test"}, []string{"a.test", "b.test"}, true},
		{"new IP", []string{"a.test"}, []string{"a.test", "10.96.0.1"}, true},
		{"new IPv6", nil, []string{"fd00::1"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b1 := mustEnsure(t, Config{Dir: dir, Hosts: tc.first})
			b2 := mustEnsure(t, Config{Dir: dir, Hosts: tc.then})
			if !bytes.Equal(b1.CAPEM, b2.CAPEM) {
				t.Fatalf("CA changed")
			}
			reissued := b1.Serving.Leaf.SerialNumber.Cmp(b2.Serving.Leaf.SerialNumber) != 0
			if reissued != tc.reissue {
				t.Fatalf("re-issued = %v, want %v", reissued, tc.reissue)
			}
			verifies(t, b1, b2.Serving.Leaf, x509.ExtKeyUsageServerAuth)
			for _, h := range tc.then {
				if err := b2.Serving.Leaf.VerifyHostname(strings.TrimSuffix(h, ".")); err != nil {
					t.Errorf("serving cert does not cover %q: %v", h, err)
				}
			}
			// And the result sticks.
			b3 := mustEnsure(t, Config{Dir: dir, Hosts: tc.then})
			if b3.Serving.Leaf.SerialNumber.Cmp(b2.Serving.Leaf.SerialNumber) != 0 {
				t.Errorf("serving cert re-issued again without a reason")
			}
			if !bytes.Equal(b1.AdminKeyPEM, b3.AdminKeyPEM) || b1.AdminToken != b3.AdminToken {
				t.Errorf("admin credentials changed")
			}
		})
	}
}

func TestEnsureRenewsNearExpiry(t *testing.T) {
	dir := t.TempDir()
	b1 := mustEnsure(t, Config{Dir: dir})

	tests := []struct {
		name  string
		after time.Duration
		renew bool
	}{
		{"half a year later", 180 * 24 * time.Hour, false},
		{"40 days before expiry", leafValidity - 40*24*time.Hour, false},
		{"20 days before expiry", leafValidity - 20*24*time.Hour, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			setNow(t, func() time.Time { return start.Add(tc.after) })
			// Work on a copy so each case starts from the original files.
			d := t.TempDir()
			for _, name := range allFiles {
				if name == FrontProxyDir { // a directory; made afresh
					continue
				}
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			b2 := mustEnsure(t, Config{Dir: d})
			if !bytes.Equal(b1.CAPEM, b2.CAPEM) {
				t.Fatalf("CA changed")
			}
			servingRenewed := b1.Serving.Leaf.SerialNumber.Cmp(b2.Serving.Leaf.SerialNumber) != 0
			adminRenewed := !bytes.Equal(b1.AdminCertPEM, b2.AdminCertPEM)
			if servingRenewed != tc.renew || adminRenewed != tc.renew {
				t.Errorf("serving renewed %v, admin renewed %v; want %v", servingRenewed, adminRenewed, tc.renew)
			}
			if !bytes.Equal(b1.AdminKeyPEM, b2.AdminKeyPEM) {
				t.Errorf("admin key changed; only the certificate should be re-signed")
			}
			if tc.renew && !b2.Serving.Leaf.NotAfter.After(b1.Serving.Leaf.NotAfter) {
				t.Errorf("renewed serving cert does not last longer")
			}
		})
	}
}

func TestEnsureRecoversAndRefuses(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(dir string) error
		wantErr bool
		check   func(t *testing.T, before, after *Bundle)
	}{
		{
			name:    "CA key lost",
			damage:  func(dir string) error { return os.Remove(filepath.Join(dir, CAKeyFile)) },
			wantErr: true,
		},
		{
			name: "CA key replaced",
			damage: func(dir string) error {
				_, keyPEM, err := newKey()
				if err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(dir, CAKeyFile), keyPEM, 0o600)
			},
			wantErr: true,
		},
		{
			name: "serving key from a crash between key and cert",
			damage: func(dir string) error {
				_, keyPEM, err := newKey()
				if err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(dir, ServingKeyFile), keyPEM, 0o600)
			},
			check: func(t *testing.T, before, after *Bundle) {
				if bytes.Equal(before.Serving.Certificate[0], after.Serving.Certificate[0]) {
					t.Errorf("mismatched serving pair was not re-issued")
				}
				verifies(t, after, after.Serving.Leaf, x509.ExtKeyUsageServerAuth)
			},
		},
		{
			name:   "admin cert missing",
			damage: func(dir string) error { return os.Remove(filepath.Join(dir, AdminCertFile)) },
			check: func(t *testing.T, before, after *Bundle) {
				if !bytes.Equal(before.AdminKeyPEM, after.AdminKeyPEM) {
					t.Errorf("admin key changed")
				}
				verifies(t, after, after.AdminCert.Leaf, x509.ExtKeyUsageClientAuth)
			},
		},
		{
			name: "service account key corrupt",
			damage: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, ServiceAccountKeyFile), []byte("garbage"), 0o600)
			},
			wantErr: true,
		},
		{
			name:    "service account key on another curve",
			damage:  func(dir string) error { return writeP384Key(filepath.Join(dir, ServiceAccountKeyFile)) },
			wantErr: true,
		},
		{
			name:   "service account key missing",
			damage: func(dir string) error { return os.Remove(filepath.Join(dir, ServiceAccountKeyFile)) },
			check: func(t *testing.T, before, after *Bundle) {
				if after.ServiceAccountKey == nil || bytes.Equal(publicDER(t, before.ServiceAccountKey), publicDER(t, after.ServiceAccountKey)) {
					t.Errorf("service account key not re-created")
				}
			},
		},
		{
			name:   "token file missing",
			damage: func(dir string) error { return os.Remove(filepath.Join(dir, TokensFile)) },
			check: func(t *testing.T, before, after *Bundle) {
				if after.AdminToken == "" || after.AdminToken == before.AdminToken {
					t.Errorf("admin token not re-created: %q", after.AdminToken)
				}
			},
		},
		{
			name: "token file without admin row",
			damage: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, TokensFile), []byte("tok,bob,uid-bob"), 0o644)
			},
			check: func(t *testing.T, before, after *Bundle) {
				data, _ := os.ReadFile(after.TokenFile)
				want := "tok,bob,uid-bob\n" + after.AdminToken + "," + AdminUser + "," + AdminUser + "," + MastersGroup + "\n"
				if string(data) != want {
					t.Errorf("tokens.csv = %q, want %q", data, want)
				}
				if fi, _ := os.Stat(after.TokenFile); fi.Mode().Perm() != 0o600 {
					t.Errorf("tokens.csv mode %v", fi.Mode().Perm())
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			before := mustEnsure(t, Config{Dir: dir})
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			after, err := Ensure(Config{Dir: dir})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Ensure succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if !bytes.Equal(before.CAPEM, after.CAPEM) {
				t.Errorf("CA changed")
			}
			tc.check(t, before, after)
		})
	}
}

func TestIssueClientCert(t *testing.T) {
	b := mustEnsure(t, Config{Dir: t.TempDir()})
	tests := []struct {
		name     string
		user     string
		groups   []string
		validity time.Duration
		wantErr  bool
		wantLife time.Duration
	}{
		{"node", "system:node:n1", []string{"system:nodes"}, 24 * time.Hour, false, 24 * time.Hour},
		{"several groups", "alice", []string{"dev", "ops"}, time.Hour, false, time.Hour},
		{"default validity", "bob", nil, 0, false, leafValidity},
		{"clamped to CA", "carol", nil, 2 * caValidity, false, caValidity},
		{"no user", "", nil, time.Hour, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM, err := b.IssueClientCert(tc.user, tc.groups, tc.validity)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := parseCertPEM(certPEM)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := parseKeyPEM(keyPEM); err != nil {
				t.Fatal(err)
			}
			verifies(t, b, c, x509.ExtKeyUsageClientAuth)
			if _, err := c.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
				t.Errorf("client certificate is also good for serving")
			}
			if c.Subject.CommonName != tc.user || !slices.Equal(c.Subject.Organization, tc.groups) {
				t.Errorf("subject = %v", c.Subject)
			}
			life := c.NotAfter.Sub(c.NotBefore) - backdate
			if d := life - tc.wantLife; d < -2*time.Hour || d > time.Minute {
				t.Errorf("lifetime %v, want about %v", life, tc.wantLife)
			}
		})
	}
}

func TestAddToken(t *testing.T) {
	b := mustEnsure(t, Config{Dir: t.TempDir()})
	tests := []struct {
		name    string
		user    string
		groups  []string
		wantErr bool
		col4    string
	}{
		{"one group", "system:node:n1", []string{"system:nodes"}, false, "system:nodes"},
		{"two groups", "alice", []string{"dev", "ops"}, false, "dev,ops"},
		{"no groups", "bob", nil, false, ""},
		{"no user", "", nil, true, ""},
		{"comma in group", "eve", []string{"a,b"}, true, ""},
	}
	seen := map[string]bool{b.AdminToken: true}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := b.AddToken(tc.user, tc.groups)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tok) < 40 || seen[tok] || strings.ContainsAny(tok, ", \"\n") {
				t.Fatalf("bad token %q", tok)
			}
			seen[tok] = true
			data, _ := os.ReadFile(b.TokenFile)
			recs, err := parseTokenCSV(data)
			if err != nil {
				t.Fatal(err)
			}
			last := recs[len(recs)-1]
			if last[0] != tok || last[1] != tc.user || last[2] == "" {
				t.Errorf("last row %q", last)
			}
			if tc.col4 != "" && (len(last) != 4 || last[3] != tc.col4) {
				t.Errorf("groups column of %q, want %q", last, tc.col4)
			}
		})
	}
	// The admin row survives, and Ensure still finds the same admin token.
	b2 := mustEnsure(t, Config{Dir: filepath.Dir(b.TokenFile)})
	if b2.AdminToken != b.AdminToken {
		t.Errorf("admin token changed after AddToken")
	}
	if fi, _ := os.Stat(b.TokenFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("tokens.csv mode %v", fi.Mode().Perm())
	}
}

func TestWriteKubeconfig(t *testing.T) {
	b := mustEnsure(t, Config{Dir: t.TempDir()})
	path := filepath.Join(t.TempDir(), "nested", "kubeconfig")
	const server = "https://127.0.0.1:6443"
	if err := WriteKubeconfig(path, server, b); err != nil {
		t.Fatal(err)
	}
	// Overwriting works too (and stays atomic).
	if err := WriteKubeconfig(path, server, b); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v", fi.Mode().Perm())
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "minik8s" || len(cfg.Contexts) != 1 || len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 {
		t.Fatalf("unexpected shape: %+v", cfg)
	}
	ctx := cfg.Contexts["minik8s"]
	if ctx == nil || ctx.Cluster != "minik8s" || ctx.AuthInfo != "admin" {
		t.Fatalf("context = %+v", ctx)
	}
	cl := cfg.Clusters["minik8s"]
	if cl.Server != server || !bytes.Equal(cl.CertificateAuthorityData, b.CAPEM) || cl.CertificateAuthority != "" || cl.InsecureSkipTLSVerify {
		t.Errorf("cluster = %+v", cl)
	}
	u := cfg.AuthInfos["admin"]
	if !bytes.Equal(u.ClientCertificateData, b.AdminCertPEM) || !bytes.Equal(u.ClientKeyData, b.AdminKeyPEM) {
		t.Errorf("admin credentials not embedded")
	}
	if u.Token != "" || u.TokenFile != "" || u.ClientCertificate != "" || u.ClientKey != "" || u.Username != "" || u.Exec != nil || u.AuthProvider != nil {
		t.Errorf("kubeconfig user carries more than the client cert: %+v", u)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != server || rc.BearerToken != "" || len(rc.TLSClientConfig.CAData) == 0 {
		t.Errorf("rest config = %+v", rc)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left next to the kubeconfig: %d entries", len(entries))
	}

	if err := WriteKubeconfig(path, "", b); err == nil {
		t.Errorf("empty server URL accepted")
	}
	if err := WriteKubeconfig(path, server, &Bundle{}); err == nil {
		t.Errorf("empty bundle accepted")
	}
}

func TestEnsureNeedsDir(t *testing.T) {
	if _, err := Ensure(Config{}); err == nil {
		t.Fatal("Ensure with no Dir succeeded")
	}
}
