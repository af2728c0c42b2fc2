package scheduler

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	yaml := `schedulerName: packer
score:
  strategy: MostAllocated
  resources:
  - {name: cpu, weight: 3}
  - {name: nvidia.com/gpu, weight: 5}
leaderElection:
  enabled: true
  leaseName: packer
  leaseDuration: 8s
  renewDeadline: 6s
  retryPeriod: 1s
backoff: {initial: 500ms, max: 5s}
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		SchedulerName: "packer",
		Score: ScoreConfig{Strategy: MostAllocated, Resources: []ResourceWeight{
			{Name: v1.ResourceCPU, Weight: 3}, {Name: "nvidia.com/gpu", Weight: 5},
		}},
		LeaderElection: LeaderElectionConfig{Enabled: true, LeaseName: "packer",
			LeaseDuration: 8 * time.Second, RenewDeadline: 6 * time.Second, RetryPeriod: time.Second},
		Backoff: BackoffConfig{Initial: 500 * time.Millisecond, Max: 5 * time.Second},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadConfig =\n%+v\nwant\n%+v", cfg, want)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := map[string]string{
		"unknown field":    "schedulerName: x\nprofiles: []\n",
		"unknown strategy": "score: {strategy: Random}\n",
		"weight zero":      "score: {resources: [{name: cpu, weight: 0}]}\n",
		"duplicate":        "score: {resources: [{name: cpu, weight: 1}, {name: cpu, weight: 2}]}\n",
		"bad duration":     "backoff: {initial: soon}\n",
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseConfig([]byte(data)); err == nil {
				t.Errorf("ParseConfig(%q) succeeded", data)
			}
		})
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("LoadConfig of a missing file succeeded")
	}
}

func TestNewDefaultsAndValidation(t *testing.T) {
	s, err := New(Config{Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	c := s.cfg
	if c.SchedulerName != "default-scheduler" || c.Score.Strategy != LeastAllocated || len(c.Score.Resources) != 2 ||
		c.Backoff.Initial != time.Second || c.Backoff.Max != 10*time.Second ||
		c.LeaderElection.LeaseName != "minik8s-scheduler" || c.LeaderElection.LeaseNamespace != "kube-system" ||
		c.LeaderElection.Identity == "" {
		t.Errorf("defaults not filled: %+v", c)
	}
	bad := map[string]Config{
		"no client":      {},
		"backoff":        {Client: fake.NewClientset(), Backoff: BackoffConfig{Initial: 10 * time.Second, Max: time.Second}},
		"lease timing":   {Client: fake.NewClientset(), LeaderElection: LeaderElectionConfig{Enabled: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}},
		"strategy":       {Client: fake.NewClientset(), Score: ScoreConfig{Strategy: "Spread"}},
		"resource names": {Client: fake.NewClientset(), Score: ScoreConfig{Resources: []ResourceWeight{{Weight: 1}}}},
	}
	for name, cfg := range bad {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "scheduler") {
			t.Errorf("%s: New = %v, want an error", name, err)
		}
	}
}
