package asl

// Error names predefined by the States Language. A name starting with
// "States." that is not one of these is rejected by Parse in ErrorEquals.
const (
	// ErrorAll is the wildcard: it matches every error name except
	// ErrorRuntime. It must stand alone in the last Retrier or Catcher.
	ErrorAll              = "States.ALL"
	ErrorHeartbeatTimeout = "States.HeartbeatTimeout"
	ErrorTimeout          = "States.Timeout"
	// ErrorTaskFailed, in a Retrier or Catcher, matches every error
	// except ErrorTimeout and ErrorRuntime (AWS' rule).
	ErrorTaskFailed                      = "States.TaskFailed"
	ErrorPermissions                     = "States.Permissions"
	ErrorResultPathMatchFailure          = "States.ResultPathMatchFailure"
	ErrorParameterPathFailure            = "States.ParameterPathFailure"
	ErrorBranchFailed                    = "States.BranchFailed"
	ErrorNoChoiceMatched                 = "States.NoChoiceMatched"
	ErrorIntrinsicFailure                = "States.IntrinsicFailure"
	ErrorExceedToleratedFailureThreshold = "States.ExceedToleratedFailureThreshold"
	ErrorItemReaderFailed                = "States.ItemReaderFailed"
	ErrorResultWriterFailed              = "States.ResultWriterFailed"
	ErrorQueryEvaluationError            = "States.QueryEvaluationError"
	// ErrorRuntime is an error no Retrier or Catcher matches, not even by
	// its own name: the
	// execution fails (an InputPath, OutputPath or other *Path field that
	// does not match the input, a Map's ItemsPath that is not an array).
	ErrorRuntime = "States.Runtime"
)

var predefinedErrors = map[string]bool{
	ErrorAll: true, ErrorHeartbeatTimeout: true, ErrorTimeout: true, ErrorTaskFailed: true,
	ErrorPermissions: true, ErrorResultPathMatchFailure: true, ErrorParameterPathFailure: true,
	ErrorBranchFailed: true, ErrorNoChoiceMatched: true, ErrorIntrinsicFailure: true,
	ErrorExceedToleratedFailureThreshold: true, ErrorItemReaderFailed: true,
	ErrorResultWriterFailed: true, ErrorQueryEvaluationError: true, ErrorRuntime: true,
}

// MatchError reports whether the error name err is matched by pattern, an
// entry of a Retrier's or Catcher's ErrorEquals.
func MatchError(pattern, err string) bool {
	switch {
	case err == ErrorRuntime:
		return false
	case pattern == err:
		return true
	case pattern == ErrorAll:
		return true
	case pattern == ErrorTaskFailed:
		return err != ErrorTimeout
	}
	return false
}

func matchAny(patterns []string, err string) bool {
	for _, p := range patterns {
		if MatchError(p, err) {
			return true
		}
	}
	return false
}
