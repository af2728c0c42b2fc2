package podsecurity

import (
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Level is a profile of the Pod Security Standards.
type Level string

// The three profiles, from the most permissive.
const (
	LevelPrivileged Level = "privileged"
	LevelBaseline   Level = "baseline"
	LevelRestricted Level = "restricted"
)

// strictness orders the levels: privileged 0, baseline 1, restricted 2.
func (l Level) strictness() int {
	switch l {
	case LevelBaseline:
		return 1
	case LevelRestricted:
		return 2
	}
	return 0
}

// VersionLatest is the policy version that follows the newest rules.
const VersionLatest = "latest"

// The namespace labels that set the policy, and the prefix of the audit
// annotations, as Kubernetes spells them.
const (
	Prefix = "pod-security.kubernetes.io/"

	EnforceLevelLabel   = Prefix + "enforce"
	EnforceVersionLabel = Prefix + "enforce-version"
	AuditLevelLabel     = Prefix + "audit"
	AuditVersionLabel   = Prefix + "audit-version"
	WarnLevelLabel      = Prefix + "warn"
	WarnVersionLabel    = Prefix + "warn-version"

	// AuditViolationsAnnotation holds what the audit level would refuse.
	AuditViolationsAnnotation = Prefix + "audit-violations"
	// EnforcePolicyAnnotation names the enforce level a pod was checked at.
	EnforcePolicyAnnotation = Prefix + "enforce-policy"
	// ErrorAnnotation says why the namespace's policy could not be read.
	ErrorAnnotation = Prefix + "error"
)

// LevelVersion is the level and policy version of one mode.
type LevelVersion struct {
	Level Level
	// Version is "latest" or "v1.<minor>". Every version is checked with
	// the latest rules; the version shows in messages as labelled.
	Version string
}

// String is "<level>:<version>", as messages quote it.
func (lv LevelVersion) String() string { return string(lv.Level) + ":" + lv.Version }

// Policy is a namespace's level in each of the three modes.
type Policy struct {
	Enforce, Audit, Warn LevelVersion
}

// DefaultPolicy is the policy of an unlabelled namespace: Kubernetes'
// default, privileged:latest in every mode.
var DefaultPolicy = Policy{
	Enforce: LevelVersion{LevelPrivileged, VersionLatest},
	Audit:   LevelVersion{LevelPrivileged, VersionLatest},
	Warn:    LevelVersion{LevelPrivileged, VersionLatest},
}

func (p Policy) fullyPrivileged() bool {
	return p.Enforce.Level == LevelPrivileged && p.Audit.Level == LevelPrivileged && p.Warn.Level == LevelPrivileged
}

const (
	invalidLevelMsg   = "must be one of privileged, baseline, restricted"
	invalidVersionMsg = `must be "latest" or "v1.x"`
)

var minorVersion = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)

func parseLevel(s string) (Level, bool) {
	switch l := Level(s); l {
	case LevelPrivileged, LevelBaseline, LevelRestricted:
		return l, true
	}
	return "", false
}

func parseVersion(s string) (string, bool) {
	if s == VersionLatest {
		return s, true
	}
	m := minorVersion.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	if _, err := strconv.Atoi(m[1]); err != nil {
		return "", false
	}
	return s, true
}

// PolicyFor is the policy that namespace labels set, and what is wrong
// with them. It always returns a policy to check with, as Kubernetes: an
// unreadable enforce level enforces restricted, an unreadable audit or
// warn level is privileged, an unreadable version is latest. A warn level
// left unset follows an enforce level that is set and stricter.
func PolicyFor(labels map[string]string) (Policy, field.ErrorList) {
	p := DefaultPolicy
	var errs field.ErrorList
	invalid := func(key, value, msg string) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "labels").Key(key), value, msg))
	}
	level := func(key string, onError Level) (Level, bool, bool) {
		v, set := labels[key]
		if !set {
			return "", false, false
		}
		l, ok := parseLevel(v)
		if !ok {
			invalid(key, v, invalidLevelMsg)
			return onError, true, false
		}
		return l, true, true
	}
	version := func(key string, into *string) bool {
		v, set := labels[key]
		if !set {
			return false
		}
		if parsed, ok := parseVersion(v); ok {
			*into = parsed
		} else {
			invalid(key, v, invalidVersionMsg)
			*into = VersionLatest
		}
		return true
	}

	enforceLevel, enforceSet, enforceValid := level(EnforceLevelLabel, LevelRestricted)
	if enforceSet {
		p.Enforce.Level = enforceLevel
	}
	version(EnforceVersionLabel, &p.Enforce.Version)
	if l, set, _ := level(AuditLevelLabel, LevelPrivileged); set {
		p.Audit.Level = l
	}
	version(AuditVersionLabel, &p.Audit.Version)
	warnLevel, warnSet, _ := level(WarnLevelLabel, LevelPrivileged)
	if warnSet {
		p.Warn.Level = warnLevel
	}
	warnVersionSet := version(WarnVersionLabel, &p.Warn.Version)

	if !warnSet && enforceValid && p.Enforce.Level.strictness() > p.Warn.Level.strictness() {
		p.Warn.Level = p.Enforce.Level
		if !warnVersionSet {
			p.Warn.Version = p.Enforce.Version
		}
	}
	return p, errs
}
