package integration

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

func parseMetrics(t *testing.T, body []byte) []sample {
	t.Helper()
	var out []sample
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				t.Fatalf("bad metrics line %q", line)
			}
			s.name, rest = line[:i], strings.TrimSpace(line[j+1:])
			for _, pair := range splitLabels(line[i+1 : j]) {
				k, v, ok := strings.Cut(pair, "=")
				if !ok {
					t.Fatalf("bad label %q in %q", pair, line)
				}
				uq, err := strconv.Unquote(v)
				if err != nil {
					t.Fatalf("bad label value %q in %q", v, line)
				}
				s.labels[k] = uq
			}
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			t.Fatalf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			t.Fatalf("bad value in %q", line)
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// splitLabels splits a="x",b="y, z" on the commas between pairs.
func splitLabels(s string) []string {
	var out []string
	inQuote, escaped, start := false, false, 0
	for i, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '\\':
			escaped = true
		case r == '"':
			inQuote = !inQuote
		case r == ',' && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// metricValue sums the samples of name whose labels include want.
func metricValue(samples []sample, name string, want map[string]string) (float64, bool) {
	total, found := 0.0, false
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
				break
			}
		}
		if match {
			total += s.value
			found = true
		}
	}
	return total, found
}

func TestMetrics(t *testing.T) {
	// The garbage collector opens a ConfigMap watch of its own whenever its
	// discovery comes round, and the root-ca-cert-publisher's informer
	// watches ConfigMaps from whenever its term starts: either would move
	// the watcher count under the test.
	c := startClusterWith(t, withoutControllers("garbagecollector", "root-ca-cert-publisher"))
	ctx := ctxT(t)
	rc := newRawClient(t, c)
	scrape := func() []sample {
		t.Helper()
		resp := rc.do(ctx, "GET", "/metrics", nil, nil)
		if resp.code != 200 {
			t.Fatalf("/metrics: %d %s", resp.code, resp.body)
		}
		return parseMetrics(t, resp.body)
	}

	cms := c.client.CoreV1().ConfigMaps("default")
	for i := 0; i < 3; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m" + strconv.Itoa(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Get(ctx, "m0", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("get of a missing ConfigMap succeeded")
	}
	if _, err := cms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	samples := scrape()
	for _, tc := range []struct {
		labels map[string]string
		min    float64
	}{
		{map[string]string{"verb": "create", "resource": "configmaps", "group": "", "code": "201"}, 3},
		{map[string]string{"verb": "get", "resource": "configmaps", "code": "200"}, 1},
		{map[string]string{"verb": "get", "resource": "configmaps", "code": "404"}, 1},
		{map[string]string{"verb": "list", "resource": "configmaps", "code": "200"}, 1},
		{map[string]string{"verb": "list", "resource": "deployments", "group": "apps", "code": "200"}, 1},
	} {
		if v, ok := metricValue(samples, "apiserver_request_total", tc.labels); !ok || v < tc.min {
			t.Errorf("apiserver_request_total%v = %v (found %v), want >= %v", tc.labels, v, ok, tc.min)
		}
	}
	if v, ok := metricValue(samples, "apiserver_request_duration_seconds_count", map[string]string{"verb": "create", "resource": "configmaps"}); !ok || v < 3 {
		t.Errorf("apiserver_request_duration_seconds_count for configmap creates = %v (found %v), want >= 3", v, ok)
	}
	if _, ok := metricValue(samples, "apiserver_request_duration_seconds_bucket", map[string]string{"verb": "create", "resource": "configmaps", "le": "+Inf"}); !ok {
		t.Error("no apiserver_request_duration_seconds histogram buckets for configmap creates")
	}
	if _, ok := metricValue(samples, "apiserver_request_duration_seconds_sum", map[string]string{"verb": "list", "resource": "deployments"}); !ok {
		t.Error("no apiserver_request_duration_seconds_sum for deployment lists")
	}

	watchers := func() float64 {
		v, _ := metricValue(scrape(), "apiserver_registered_watchers", map[string]string{"group": "", "resource": "configmaps"})
		return v
	}
	waitFor := func(want float64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		got := watchers()
		for got != want && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			got = watchers()
		}
		if got != want {
			t.Fatalf("apiserver_registered_watchers{resource=configmaps} = %v, want %v", got, want)
		}
	}
	base := watchers()
	wctx, cancel := context.WithCancel(ctx)
	w, err := cms.Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(base + 1)
	w2, err := c.client.CoreV1().ConfigMaps("").Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(base + 2)
	w.Stop()
	w2.Stop()
	cancel()
	waitFor(base)
	// A watch is counted when it ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, ok := metricValue(scrape(), "apiserver_request_total", map[string]string{"verb": "watch", "resource": "configmaps"})
		if ok && v >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("apiserver_request_total for configmap watches = %v (found %v), want >= 2", v, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
