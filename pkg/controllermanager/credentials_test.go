package controllermanager

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/apiserver/authz"
)

// Every controller runs as a service account that the default policy
// gives a role, and every controller role belongs to a controller.
func TestEveryControllerHasARole(t *testing.T) {
	roles := authz.ControllerRoles()
	used := map[string]bool{}
	for _, c := range controllers {
		if c.account == "" {
			t.Errorf("controller %s has no service account", c.name)
		}
		if _, ok := roles[c.account]; !ok {
			t.Errorf("controller %s runs as %s, which the default policy gives no role %s", c.name, c.account, authz.ControllerRolePrefix+c.account)
		}
		used[c.account] = true
	}
	for account := range roles {
		if !used[account] {
			t.Errorf("role %s%s belongs to no controller", authz.ControllerRolePrefix, account)
		}
	}
}
