package v1

import (
	"bytes"
	"encoding/json"
	"errors"
)

// +k8s:deepcopy-gen=false

// JSON is any JSON value (object, array, string, number, boolean or
// null), written inline in a manifest as YAML or JSON: a workflow's
// definition, a run's input and output, a trigger's payload. Raw holds
// its compact encoding.
type JSON struct {
	Raw []byte `json:"-"`
}

// MarshalJSON writes Raw as it is; an empty JSON is null.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) == 0 {
		return []byte("null"), nil
	}
	return j.Raw, nil
}

// UnmarshalJSON keeps the value's bytes, compacted.
func (j *JSON) UnmarshalJSON(data []byte) error {
	if j == nil {
		return errors.New("JSON: UnmarshalJSON on a nil pointer")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return err
	}
	if buf.String() == "null" {
		j.Raw = nil
		return nil
	}
	j.Raw = buf.Bytes()
	return nil
}

// NewJSON is a JSON holding raw (which must be valid JSON).
func NewJSON(raw []byte) *JSON {
	if len(raw) == 0 {
		return nil
	}
	return &JSON{Raw: append([]byte(nil), raw...)}
}

// Bytes is the value's encoding, "null" when unset (j may be nil).
func (j *JSON) Bytes() []byte {
	if j == nil || len(j.Raw) == 0 {
		return []byte("null")
	}
	return j.Raw
}

// DeepCopyInto copies j into out.
func (j *JSON) DeepCopyInto(out *JSON) {
	*out = *j
	if j.Raw != nil {
		out.Raw = append([]byte(nil), j.Raw...)
	}
}

// DeepCopy copies j.
func (j *JSON) DeepCopy() *JSON {
	if j == nil {
		return nil
	}
	out := new(JSON)
	j.DeepCopyInto(out)
	return out
}
