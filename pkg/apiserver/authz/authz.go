package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// User is who makes the request, as authentication found.
type User struct {
	Name   string
	UID    string
	Groups []string
}

// Attributes describe one request.
type Attributes struct {
	User User
	// Verb is the API verb (get list watch create update patch delete
	// deletecollection, or a special one such as approve, bind, escalate,
	// impersonate) for resource requests, the lower-cased HTTP method for
	// others.
	Verb string
	// IsResource tells resource requests from non-resource ones (Path).
	IsResource  bool
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

// Decision is an authorizer's answer.
type Decision int

// Decisions, as Kubernetes' authorizer has them.
const (
	NoOpinion Decision = iota
	Allow
	Deny
)

// Authorizer decides on requests.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// Func is an Authorizer in a function.
type Func func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f Func) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// Union asks each authorizer in turn; the first Allow or Deny decides.
// Errors do not: the next one is asked, and the errors come back with a
// NoOpinion when none decides.
func Union(as ...Authorizer) Authorizer {
	return Func(func(ctx context.Context, a Attributes) (Decision, string, error) {
		var reasons []string
		var errs []string
		for _, z := range as {
			d, reason, err := z.Authorize(ctx, a)
			if err != nil {
				errs = append(errs, err.Error())
			}
			if d != NoOpinion {
				return d, reason, nil
			}
			if reason != "" {
				reasons = append(reasons, reason)
			}
		}
		if len(errs) > 0 {
			return NoOpinion, strings.Join(reasons, ", "), fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return NoOpinion, strings.Join(reasons, ", "), nil
	})
}

// MastersGroup is Kubernetes' group of unrestricted users.
const MastersGroup = "system:masters"

// Masters allows every request of the group system:masters.
var Masters = Func(func(_ context.Context, a Attributes) (Decision, string, error) {
	if slices.Contains(a.User.Groups, MastersGroup) {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
})

// ForbiddenMessage is kube-apiserver's wording of a denial, e.g.
// `User "alice" cannot list resource "secrets" in API group "" in the
// namespace "default"`.
func ForbiddenMessage(a Attributes) string {
	who := fmt.Sprintf("User %q", a.User.Name)
	if a.User.Name == "" {
		who = "User \"system:anonymous\""
	}
	if !a.IsResource {
		return fmt.Sprintf("%s cannot %s path %q", who, a.Verb, a.Path)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	msg := fmt.Sprintf("%s cannot %s resource %q in API group %q", who, a.Verb, res, a.APIGroup)
	if a.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	return msg
}
