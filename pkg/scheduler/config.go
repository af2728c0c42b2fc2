package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"
)

// Defaults for the zero fields of Config.
const (
	DefaultSchedulerName  = v1.DefaultSchedulerName
	DefaultLeaseName      = "minik8s-scheduler"
	DefaultLeaseNamespace = metav1.NamespaceSystem
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 10 * time.Second
)

// ScoringStrategy is how node resources are scored.
type ScoringStrategy string

// The scoring strategies, named as in Kubernetes.
const (
	// LeastAllocated favours the nodes with the most free cpu and memory
	// (spreading).
	LeastAllocated ScoringStrategy = "LeastAllocated"
	// MostAllocated favours the fullest nodes that still fit (packing).
	MostAllocated ScoringStrategy = "MostAllocated"
	// BalancedAllocation favours nodes whose cpu and memory would be used
	// in the same proportion.
	BalancedAllocation ScoringStrategy = "BalancedAllocation"
)

// ResourceWeight is one resource the strategy scores, and its weight (1-100).
type ResourceWeight struct {
	Name   v1.ResourceName `json:"name"`
	Weight int64           `json:"weight"`
}

// ScoreConfig is the scoring policy of the scheduler's one profile.
type ScoreConfig struct {
	// Strategy defaults to LeastAllocated.
	Strategy ScoringStrategy `json:"strategy,omitempty"`
	// Resources default to cpu and memory, weight 1 each.
	Resources []ResourceWeight `json:"resources,omitempty"`
}

// LeaderElectionConfig makes schedulers share one Lease: only its holder
// schedules.
type LeaderElectionConfig struct {
	Enabled bool
	// LeaseName defaults to "minik8s-scheduler", LeaseNamespace to "kube-system".
	LeaseName      string
	LeaseNamespace string
	// Identity defaults to the host name and a random suffix.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to 15s, 10s and 2s.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// BackoffConfig bounds the exponential back-off of pods that did not fit.
type BackoffConfig struct {
	// Initial defaults to 1s, Max to 10s.
	Initial time.Duration
	Max     time.Duration
}

// Config is what New needs. Client is required; the rest has defaults.
type Config struct {
	// Client reaches the apiserver. Each scheduled pod costs a binding and
	// an event; give it a rate limit to match (QPS < 0 turns it off).
	Client kubernetes.Interface
	// SchedulerName is the spec.schedulerName of the pods this scheduler
	// places; it defaults to "default-scheduler".
	SchedulerName string
	Score         ScoreConfig
	// Clock times back-off and the expiry of assumed pods; default real.
	Clock          clock.WithTicker
	Logger         *slog.Logger
	LeaderElection LeaderElectionConfig
	Backoff        BackoffConfig
}

// complete fills the defaults and validates.
func (c *Config) complete() error {
	if c.Client == nil {
		return errors.New("scheduler: Client is required")
	}
	if c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerName
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if err := c.Score.complete(); err != nil {
		return err
	}
	b := &c.Backoff
	if b.Initial == 0 {
		b.Initial = DefaultBackoffInitial
	}
	if b.Max == 0 {
		b.Max = DefaultBackoffMax
	}
	if b.Initial < 0 || b.Max < b.Initial {
		return fmt.Errorf("scheduler: backoff must satisfy 0 < initial <= max, got initial %s, max %s", b.Initial, b.Max)
	}
	le := &c.LeaderElection
	if le.LeaseName == "" {
		le.LeaseName = DefaultLeaseName
	}
	if le.LeaseNamespace == "" {
		le.LeaseNamespace = DefaultLeaseNamespace
	}
	if le.Identity == "" {
		host, _ := os.Hostname()
		le.Identity = host + "_" + string(uuid.NewUUID())
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = DefaultLeaseDuration
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = DefaultRenewDeadline
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = DefaultRetryPeriod
	}
	if le.Enabled && (le.LeaseDuration <= le.RenewDeadline || le.RenewDeadline <= le.RetryPeriod || le.RetryPeriod <= 0) {
		return fmt.Errorf("scheduler: leader election needs leaseDuration > renewDeadline > retryPeriod > 0, got %s, %s, %s",
			le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
	}
	return nil
}

func (s *ScoreConfig) complete() error {
	switch s.Strategy {
	case "":
		s.Strategy = LeastAllocated
	case LeastAllocated, MostAllocated, BalancedAllocation:
	default:
		return fmt.Errorf("scheduler: unknown scoring strategy %q (want %s, %s or %s)", s.Strategy, LeastAllocated, MostAllocated, BalancedAllocation)
	}
	if len(s.Resources) == 0 {
		s.Resources = []ResourceWeight{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}
	}
	seen := map[v1.ResourceName]bool{}
	for _, r := range s.Resources {
		if r.Name == "" {
			return errors.New("scheduler: a scored resource has no name")
		}
		if seen[r.Name] {
			return fmt.Errorf("scheduler: resource %s scored twice", r.Name)
		}
		seen[r.Name] = true
		if r.Weight < 1 || r.Weight > 100 {
			return fmt.Errorf("scheduler: weight of %s must be 1-100, got %d", r.Name, r.Weight)
		}
	}
	return nil
}

// fileConfig is the configuration file's shape.
type fileConfig struct {
	SchedulerName  string      `json:"schedulerName,omitempty"`
	Score          ScoreConfig `json:"score,omitempty"`
	LeaderElection struct {
		Enabled        bool            `json:"enabled,omitempty"`
		LeaseName      string          `json:"leaseName,omitempty"`
		LeaseNamespace string          `json:"leaseNamespace,omitempty"`
		Identity       string          `json:"identity,omitempty"`
		LeaseDuration  metav1.Duration `json:"leaseDuration,omitempty"`
		RenewDeadline  metav1.Duration `json:"renewDeadline,omitempty"`
		RetryPeriod    metav1.Duration `json:"retryPeriod,omitempty"`
	} `json:"leaderElection,omitempty"`
	Backoff struct {
		Initial metav1.Duration `json:"initial,omitempty"`
		Max     metav1.Duration `json:"max,omitempty"`
	} `json:"backoff,omitempty"`
}

// LoadConfig reads a configuration file (YAML or JSON; see the package
// documentation) into a Config. The caller sets Client, Logger and Clock;
// New fills the defaults and validates.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read scheduler config: %w", err)
	}
	return ParseConfig(data)
}

// ParseConfig is LoadConfig on the file's content.
func ParseConfig(data []byte) (Config, error) {
	var f fileConfig
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return Config{}, fmt.Errorf("parse scheduler config: %w", err)
	}
	cfg := Config{
		SchedulerName: f.SchedulerName,
		Score:         f.Score,
		LeaderElection: LeaderElectionConfig{
			Enabled: f.LeaderElection.Enabled, LeaseName: f.LeaderElection.LeaseName,
			LeaseNamespace: f.LeaderElection.LeaseNamespace, Identity: f.LeaderElection.Identity,
			LeaseDuration: f.LeaderElection.LeaseDuration.Duration, RenewDeadline: f.LeaderElection.RenewDeadline.Duration,
			RetryPeriod: f.LeaderElection.RetryPeriod.Duration,
		},
		Backoff: BackoffConfig{Initial: f.Backoff.Initial.Duration, Max: f.Backoff.Max.Duration},
	}
	if err := cfg.Score.complete(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
