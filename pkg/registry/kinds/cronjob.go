package kinds

import (
	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// CronJobs: Jobs on a schedule. Validation parses the schedule and time
// zone with pkg/cronschedule, as the CronJob controller does.
func cronJobs() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: batchv1.SchemeGroupVersion.WithResource("cronjobs"), Kind: "CronJob",
		Namespaced: true, ShortNames: []string{"cj"}, Categories: []string{"all"}, Status: true,
		Default:  defaulter(defaults.CronJob),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validation.CronJob),
		Printer:  printers.CronJob,
	}
}
