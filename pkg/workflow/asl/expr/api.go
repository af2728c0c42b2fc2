// Package expr is the data language of the Amazon States Language
// (https://states-language.net/spec.html): JSONPath Paths and Reference
// Paths over JSON values, the payload templates of Parameters,
// ResultSelector and ItemSelector (keys ending in ".$"), the context object
// ("$$"), and the intrinsic functions (States.Format, States.Array, ...).
// Values are what encoding/json decodes into `any` with UseNumber:
// map[string]any, []any, string, json.Number, bool and nil.
// It owns no state machine: package asl does.
package expr
