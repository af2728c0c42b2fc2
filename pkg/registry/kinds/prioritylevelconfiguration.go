package kinds

import (
	"fmt"
	"math"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// maxShuffleShardBits bounds the entropy a priority level's shuffle
// sharding may need, as Kubernetes does.
const maxShuffleShardBits = 60

// MandatoryPriorityLevelConfigurations are the priority levels
// kube-apiserver keeps at every start: "exempt" and "catch-all".
func MandatoryPriorityLevelConfigurations() []*flowcontrolv1.PriorityLevelConfiguration {
	level := func(name string, spec flowcontrolv1.PriorityLevelConfigurationSpec) *flowcontrolv1.PriorityLevelConfiguration {
		return &flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
			Spec:       spec,
		}
	}
	return []*flowcontrolv1.PriorityLevelConfiguration{
		level(flowcontrolv1.PriorityLevelConfigurationNameExempt, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:   flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0)},
		}),
		level(flowcontrolv1.PriorityLevelConfigurationNameCatchAll, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](5), LendablePercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}},
		}),
	}
}

// PriorityLevelConfigurations: concurrency shares and queuing of a
// priority level (flowcontrol.apiserver.k8s.io/v1), stored only.
func priorityLevelConfigurations() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations"), Kind: "PriorityLevelConfiguration",
		Status:   true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Default:  defaulter(defaultPriorityLevelConfiguration),
		Validate: validator(validatePriorityLevelConfiguration),
		Printer:  priorityLevelPrinter,
	}
}

// defaultPriorityLevelConfiguration fills in what Kubernetes' v1 defaults do.
func defaultPriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr.To[int32](30)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr.To[int32](0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.Queues == 0 {
				q.Queues = 64
			}
			if q.HandSize == 0 {
				q.HandSize = 8
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = 50
			}
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To[int32](0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To[int32](0)
		}
	}
}

var (
	supportedPriorityLevelTypes = []flowcontrolv1.PriorityLevelEnablement{flowcontrolv1.PriorityLevelEnablementExempt, flowcontrolv1.PriorityLevelEnablementLimited}
	supportedLimitResponseTypes = []flowcontrolv1.LimitResponseType{flowcontrolv1.LimitResponseTypeQueue, flowcontrolv1.LimitResponseTypeReject}
)

func validatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	spec := field.NewPath("spec")
	allErrs := validation.Enum(pl.Spec.Type, supportedPriorityLevelTypes, spec.Child("type"))
	if (pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		allErrs = append(allErrs, field.Invalid(spec.Child("type"), pl.Spec.Type, "type must be 'Exempt' if and only if name is 'exempt'"))
	}
	switch pl.Spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if pl.Spec.Limited != nil {
			allErrs = append(allErrs, field.Forbidden(spec.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := pl.Spec.Exempt; e != nil {
			allErrs = append(allErrs, shares(e.NominalConcurrencyShares, e.LendablePercent, spec.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if pl.Spec.Exempt != nil {
			allErrs = append(allErrs, field.Forbidden(spec.Child("exempt"), "must be nil if the type is Limited"))
		}
		l := pl.Spec.Limited
		if l == nil {
			allErrs = append(allErrs, field.Required(spec.Child("limited"), "must not be empty when type is Limited"))
			break
		}
		lp := spec.Child("limited")
		allErrs = append(allErrs, shares(l.NominalConcurrencyShares, l.LendablePercent, lp)...)
		if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
			allErrs = append(allErrs, field.Invalid(lp.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
		}
		allErrs = append(allErrs, validateLimitResponse(&l.LimitResponse, lp.Child("limitResponse"))...)
	}
	return allErrs
}

func shares(nominal, lendable *int32, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if nominal != nil && *nominal < 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("nominalConcurrencyShares"), *nominal, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		allErrs = append(allErrs, field.Invalid(p.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	return allErrs
}

func validateLimitResponse(r *flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	allErrs := validation.Enum(r.Type, supportedLimitResponseTypes, p.Child("type"))
	q := r.Queuing
	switch r.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if q != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if q == nil {
			allErrs = append(allErrs, field.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
			break
		}
		qp := p.Child("queuing")
		for name, v := range map[string]int32{"queueLengthLimit": q.QueueLengthLimit, "queues": q.Queues, "handSize": q.HandSize} {
			if v <= 0 {
				allErrs = append(allErrs, field.Invalid(qp.Child(name), v, "must be positive"))
			}
		}
		if q.HandSize > q.Queues {
			allErrs = append(allErrs, field.Invalid(qp.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
		} else if q.Queues > 0 && q.HandSize > 0 {
			if bits := int(math.Ceil(math.Log2(float64(q.Queues)) * float64(q.HandSize))); bits > maxShuffleShardBits {
				allErrs = append(allErrs, field.Invalid(qp.Child("handSize"), q.HandSize,
					fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, maxShuffleShardBits)))
			}
		}
	}
	return allErrs
}

var priorityLevelPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Type", "string", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
		printers.Column("NominalConcurrencyShares", "string", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
		printers.Column("Queues", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]),
		printers.Column("HandSize", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]),
		printers.Column("QueueLengthLimit", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]),
		printers.AgeColumn(),
	},
	func(pl *flowcontrolv1.PriorityLevelConfiguration, now time.Time) []interface{} {
		var ncs, queues, handSize, queueLength interface{} = "<none>", "<none>", "<none>", "<none>"
		if l := pl.Spec.Limited; l != nil {
			if l.NominalConcurrencyShares != nil {
				ncs = int64(*l.NominalConcurrencyShares)
			}
			if q := l.LimitResponse.Queuing; q != nil {
				queues, handSize, queueLength = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
			}
		}
		return []interface{}{pl.Name, string(pl.Spec.Type), ncs, queues, handSize, queueLength, printers.Age(pl.CreationTimestamp, now)}
	},
)
