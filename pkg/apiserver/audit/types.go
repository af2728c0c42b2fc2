package audit

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Level is how much of a request is logged.
type Level string

// Levels, as audit.k8s.io/v1 has them.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

func (l Level) atLeast(o Level) bool { return rank[l] >= rank[o] }

var rank = map[Level]int{LevelNone: 0, LevelMetadata: 1, LevelRequest: 2, LevelRequestResponse: 3}

// Stage is when in a request's life the event was written.
type Stage string

// Stages written here: complete responses, and handler panics.
const (
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

// Event is an audit.k8s.io/v1 Event.
type Event struct {
	metav1.TypeMeta          `json:",inline"`
	Level                    Level                     `json:"level"`
	AuditID                  types.UID                 `json:"auditID"`
	Stage                    Stage                     `json:"stage"`
	RequestURI               string                    `json:"requestURI"`
	Verb                     string                    `json:"verb"`
	User                     authenticationv1.UserInfo `json:"user"`
	SourceIPs                []string                  `json:"sourceIPs,omitempty"`
	UserAgent                string                    `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference          `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status            `json:"responseStatus,omitempty"`
	RequestObject            *runtime.Unknown          `json:"requestObject,omitempty"`
	ResponseObject           *runtime.Unknown          `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime          `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime          `json:"stageTimestamp"`
	Annotations              map[string]string         `json:"annotations,omitempty"`
}

// ObjectReference names the object a request was about.
type ObjectReference struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Policy is an audit.k8s.io/v1 Policy: the first rule that matches a
// request decides its level; none matching means None.
type Policy struct {
	metav1.TypeMeta `json:",inline"`
	Rules           []PolicyRule `json:"rules"`
	// OmitStages is accepted for compatibility; only ResponseComplete
	// (and Panic) are ever written.
	OmitStages []Stage `json:"omitStages,omitempty"`
}

// PolicyRule matches requests; empty lists match everything.
type PolicyRule struct {
	Level           Level            `json:"level"`
	Users           []string         `json:"users,omitempty"`
	UserGroups      []string         `json:"userGroups,omitempty"`
	Verbs           []string         `json:"verbs,omitempty"`
	Resources       []GroupResources `json:"resources,omitempty"`
	Namespaces      []string         `json:"namespaces,omitempty"`
	NonResourceURLs []string         `json:"nonResourceURLs,omitempty"`
	OmitStages      []Stage          `json:"omitStages,omitempty"`
}

// GroupResources names resources of one API group ("" is core);
// "pods/log" names a subresource, "*/status" any one's.
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}
