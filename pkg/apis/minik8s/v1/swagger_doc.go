package v1

// SwaggerDoc methods describe the fields in the OpenAPI documents (what
// kubectl explain prints), as k8s.io/api's generated ones do.

func (DNSRecord) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "DNSRecord names a host in the cluster DNS and routes URL paths under it to Services of its namespace, through the gateway.",
		"metadata": "Standard object's metadata.",
		"spec":     "Spec is the host and the paths the record asks for.",
		"status":   "Status is what the gateway reports about the record.",
	}
}

func (DNSRecordSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":      "DNSRecordSpec is the host and the paths a DNSRecord asks for.",
		"host":  "Host is the name that resolves, in the cluster DNS, to the gateway, e.g. minik8s.com. A lowercase DNS-1123 subdomain, no wildcard.",
		"paths": "Paths route URL path prefixes under Host to Services; at least one, no two alike (\"/a\" and \"/a/\" are alike).",
	}
}

func (DNSRecordPath) SwaggerDoc() map[string]string {
	return map[string]string{
		"":        "DNSRecordPath routes one URL path prefix to a Service port.",
		"path":    "Path is a URL path prefix, \"/path1\"; the gateway strips it before forwarding. Only letters, digits and ._~/- are allowed; a missing leading \"/\" is added.",
		"service": "Service names a Service in the record's namespace.",
		"port":    "Port is the Service's port, by number (1-65535) or by name.",
	}
}

func (DNSRecordStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "DNSRecordStatus is what the gateway reports about a DNSRecord.",
		"address":            "Address is the gateway address Host resolves to (set by the gateway).",
		"observedGeneration": "ObservedGeneration is the metadata.generation the gateway last acted on.",
		"conditions":         "Conditions are the gateway's latest observations of the record.",
	}
}

func (DNSRecordList) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "DNSRecordList is a list of DNSRecords.",
		"metadata": "Standard list metadata.",
		"items":    "Items is the list of DNSRecords.",
	}
}

func (Function) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "Function is Python code served over HTTP: each revision of its code and settings is built into an image, run as pods scaled with the requests (from and to zero), and reached at /function/<namespace>/<name> on the gateway.",
		"metadata": "Standard object's metadata.",
		"spec":     "Spec is the function's code and how it runs and scales.",
		"status":   "Status is what the function controller and the autoscaler report.",
	}
}

func (FunctionSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":          "FunctionSpec is the code of a function and how it runs and scales.",
		"runtime":   "Runtime is the base the code runs on: python3, or python3-ml (python3 with numpy and scikit-learn).",
		"handler":   "Handler is module.function, called with each request's JSON body (and, when it takes a second parameter, a context: method, path, query, headers); its return value is the JSON response. Default main.handle.",
		"source":    "Source is where the code is: inline, or files in a ConfigMap.",
		"scale":     "Scale bounds and steers the number of instances.",
		"env":       "Env is set in every instance, as a container's env.",
		"resources": "Resources are each instance's requests and limits, as a container's.",
		"timeout":   "Timeout is the longest a request may take (default 60s); a slower one answers 504.",
	}
}

func (FunctionSource) SwaggerDoc() map[string]string {
	return map[string]string{
		"":          "FunctionSource is the function's code: inline, or files in a ConfigMap (exactly one).",
		"inline":    "Inline is the source of the handler's module (main.py for main.handle), for one-file functions; at most 512 KiB.",
		"configMap": "ConfigMap names a ConfigMap of the function's namespace whose keys are the function's files (data or binaryData); a key ending in .zip is an archive unpacked in place. kubectl fn deploy -f writes it.",
	}
}

func (FunctionSourceConfigMap) SwaggerDoc() map[string]string {
	return map[string]string{
		"":     "FunctionSourceConfigMap names a ConfigMap holding a function's files.",
		"name": "Name of the ConfigMap, in the function's namespace.",
	}
}

func (FunctionScale) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                 "FunctionScale bounds and steers how many instances a function has.",
		"minScale":         "MinScale is the fewest instances (default 0: scale to zero when idle).",
		"maxScale":         "MaxScale is the most instances (default 10).",
		"target":           "Target is the requests in flight per instance the autoscaler aims at (default 4).",
		"scaleToZeroAfter": "ScaleToZeroAfter is how long a function with no request keeps its last instance (default 30s).",
	}
}

func (FunctionStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "FunctionStatus is what the function controller and the autoscaler report.",
		"observedGeneration": "ObservedGeneration is the generation the status describes.",
		"revision":           "Revision counts the changes of code or settings; each is built into a new image.",
		"image":              "Image is the current revision's image in the cluster's registry.",
		"sourceHash":         "SourceHash identifies what the current revision was built from.",
		"url":                "URL is where the function answers, through the gateway.",
		"instances":          "Instances counts the function's pods.",
		"readyInstances":     "ReadyInstances counts the function's ready pods.",
		"conditions":         "Conditions: Ready, with reasons such as BuildFailed, SyntaxError, HandlerNotFound or SourceNotFound and the Python error in the message.",
	}
}

func (Workflow) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "Workflow is a state machine in the Amazon States Language (https://states-language.net/spec.html) whose Task states call the namespace's Functions and Workflows; each execution of it is a WorkflowRun.",
		"metadata": "Standard object's metadata.",
		"spec":     "Spec holds the state machine.",
		"status":   "Status is what the workflow engine reports about the workflow.",
	}
}

func (WorkflowSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "WorkflowSpec holds a Workflow's state machine.",
		"definition": "Definition is the state machine, written inline as YAML or JSON: StartAt, States and optionally Comment, Version, TimeoutSeconds, QueryLanguage (JSONPath). States may be Task, Pass, Choice, Wait, Succeed, Fail, Parallel or Map; a Task's Resource is function:<name> or workflow:<name> (a bare name is a function). Required; it is checked when written (every Next, Default and Catch target must name a state, every state must be reachable from StartAt).",
	}
}

func (WorkflowStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "WorkflowStatus is what the workflow engine reports about a Workflow.",
		"observedGeneration": "ObservedGeneration is the metadata.generation the status describes.",
		"resources":          "Resources are the Functions and Workflows its Task states call, as function:<name> and workflow:<name>.",
		"conditions":         "Conditions: Ready (False with reason ResourceNotFound while a Task names a Function or Workflow that does not exist).",
	}
}

func (WorkflowList) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "WorkflowList is a list of Workflows.",
		"metadata": "Standard list metadata.",
		"items":    "Items is the list of Workflows.",
	}
}

func (WorkflowRun) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "WorkflowRun is one execution of a Workflow, or of a state machine given inline, with an input. Its spec does not change once created; the workflow engine records the execution's progress in its status.",
		"metadata": "Standard object's metadata.",
		"spec":     "Spec says what to run with which input; it is immutable.",
		"status":   "Status is the execution's state, written by the workflow engine after every state.",
	}
}

func (WorkflowRunSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "WorkflowRunSpec says what to run with which input; exactly one of workflow and definition. It is immutable.",
		"workflow":   "Workflow names the Workflow of the run's namespace to run (a DNS-1035 label). Exactly one of workflow and definition.",
		"definition": "Definition is a state machine to run instead of a Workflow's, written as a Workflow's spec.definition (the branches of Parallel states and the items of Map states run so). Exactly one of workflow and definition.",
		"input":      "Input is the execution's input: any JSON value (object, array, string, number, boolean), written inline as YAML or JSON. Default {}.",
	}
}

func (WorkflowRunStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":               "WorkflowRunStatus is the execution's state, recorded after every state so that it resumes where it was after a restart.",
		"phase":          "Phase is Pending, Running, Succeeded, Failed, TimedOut or Aborted.",
		"startTime":      "StartTime is when the execution started.",
		"completionTime": "CompletionTime is when the execution finished.",
		"output":         "Output is the state machine's output (any JSON value) once Succeeded.",
		"error":          "Error is the error name (States.TaskFailed, States.Timeout, a Fail state's Error, ...) the run Failed or TimedOut with.",
		"cause":          "Cause is the human-readable cause of Error.",
		"currentState":   "CurrentState is the state the execution is in.",
		"stateInput":     "StateInput is the current state's input.",
		"attempt":        "Attempt counts the current state's attempts.",
		"retryCounts":    "RetryCounts are the retries so far of each of the current state's Retry rules, in order.",
		"waitUntil":      "WaitUntil is when a Wait state or a retry's backoff ends.",
		"work":           "Work is what the current state waits for: a Task's call, or the child runs of a Parallel or Map state.",
		"definition":     "Definition is the state machine this run executes, fixed when it starts.",
		"transitions":    "Transitions counts the states entered.",
		"history":        "History lists every state entered, in order; past 500 entries the oldest are dropped.",
	}
}

func (WorkflowRunWork) SwaggerDoc() map[string]string {
	return map[string]string{
		"":               "WorkflowRunWork is what a Task, Parallel or Map state needs done.",
		"kind":           "Kind is Task, Parallel or Map.",
		"resource":       "Resource is a Task's function:<name> or workflow:<name>.",
		"input":          "Input is the Task's effective input (after InputPath and Parameters).",
		"timeout":        "Timeout is the longest the Task may run (its TimeoutSeconds).",
		"heartbeat":      "Heartbeat is the Task's HeartbeatSeconds.",
		"children":       "Children are the child runs a Parallel (one per branch) or a Map (one per item) needs.",
		"maxConcurrency": "MaxConcurrency bounds a Map's children running at once; 0 is no bound.",
	}
}

func (WorkflowRunChild) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "WorkflowRunChild is one child run of a Parallel or Map state.",
		"definition": "Definition is the branch's or item processor's state machine.",
		"input":      "Input is the child run's input.",
	}
}

func (WorkflowRunState) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "WorkflowRunState is one state the execution entered.",
		"name":     "Name is the state's name.",
		"type":     "Type is the state's type: Task, Pass, Choice, Wait, Succeed, Fail, Parallel or Map.",
		"input":    "Input is the state's input.",
		"output":   "Output is the state's output, once it exited without an error.",
		"error":    "Error is the error the state failed with.",
		"cause":    "Cause is the human-readable cause of Error.",
		"attempts": "Attempts counts a Task's, Parallel's or Map's attempts.",
		"retries":  "Retries are the failed attempts that were retried.",
		"entered":  "Entered is when the execution entered the state.",
		"exited":   "Exited is when it left the state.",
		"next":     "Next is the state it went to.",
	}
}

func (WorkflowRunRetry) SwaggerDoc() map[string]string {
	return map[string]string{
		"":      "WorkflowRunRetry is one failed attempt that was retried.",
		"at":    "At is when the attempt failed.",
		"error": "Error is the error the attempt failed with.",
		"cause": "Cause is the human-readable cause of Error.",
		"delay": "Delay is the backoff chosen before the next attempt.",
	}
}

func (WorkflowRunList) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "WorkflowRunList is a list of WorkflowRuns.",
		"metadata": "Standard list metadata.",
		"items":    "Items is the list of WorkflowRuns.",
	}
}

func (Trigger) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "Trigger starts a Function or a Workflow with a payload whenever its source fires: a cron schedule, an event of Kubernetes objects, or an HTTP request to /trigger/<namespace>/<name> on the gateway.",
		"metadata": "Standard object's metadata.",
		"spec":     "Spec is what the trigger starts and when.",
		"status":   "Status is what the trigger controller reports.",
	}
}

func (TriggerSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                           "TriggerSpec is what a trigger starts and when: a target and exactly one source (schedule, event or http).",
		"target":                     "Target is the Function or the Workflow the trigger starts.",
		"payload":                    "Payload is the input (any JSON value, written inline as YAML or JSON) of what a schedule starts, and of an HTTP firing without a body. Default {}.",
		"schedule":                   "Schedule fires on a cron schedule. Exactly one of schedule, event and http.",
		"event":                      "Event fires when objects of one kind are added, modified or deleted; the event (type and object) is the payload. Exactly one of schedule, event and http.",
		"http":                       "HTTP fires on a request to /trigger/<namespace>/<name> on the gateway; the request's body is the payload. Exactly one of schedule, event and http.",
		"suspend":                    "Suspend stops the trigger from firing; firings missed while suspended are not caught up on. Default false.",
		"successfulRunsHistoryLimit": "SuccessfulRunsHistoryLimit is how many succeeded WorkflowRuns the trigger started are kept. Default 3.",
		"failedRunsHistoryLimit":     "FailedRunsHistoryLimit is how many failed WorkflowRuns the trigger started are kept. Default 1.",
	}
}

func (TriggerTarget) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "TriggerTarget names exactly one of a Function and a Workflow of the trigger's namespace.",
		"function": "Function names the Function to call (a DNS-1035 label).",
		"workflow": "Workflow names the Workflow to run (a DNS-1035 label); each firing creates a WorkflowRun.",
	}
}

func (ScheduleSource) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                        "ScheduleSource fires on a cron schedule, as a CronJob does.",
		"schedule":                "Schedule is a cron schedule: five fields (minute hour day-of-month month day-of-week), or @hourly, @daily, @weekly, @monthly, @yearly, @every <duration>. Required; no TZ= or CRON_TZ= (use timeZone).",
		"timeZone":                "TimeZone is the IANA time zone of the schedule, e.g. Europe/Paris. Default the controller's: UTC.",
		"concurrencyPolicy":       "ConcurrencyPolicy is what a firing does while a WorkflowRun it started is still running: Allow (default) starts another, Forbid skips the firing, Replace aborts the running one and starts a new one.",
		"startingDeadlineSeconds": "StartingDeadlineSeconds: a firing missed by more than this many seconds is skipped. Unset: never skipped.",
	}
}

func (EventSource) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "EventSource fires when objects of one kind are added, modified or deleted.",
		"apiVersion": "APIVersion is the API version of the kind watched, e.g. v1 or apps/v1. Required.",
		"kind":       "Kind is the kind watched, e.g. ConfigMap. Required.",
		"namespace":  "Namespace limits the trigger to objects of one namespace. Default the trigger's namespace; \"*\" for all namespaces. Ignored for cluster-scoped kinds.",
		"selector":   "Selector limits the trigger to objects with these labels.",
		"types":      "Types are the event types that fire the trigger: ADDED, MODIFIED, DELETED. Default all three.",
	}
}

func (HTTPSource) SwaggerDoc() map[string]string {
	return map[string]string{
		"":        "HTTPSource fires on a request to /trigger/<namespace>/<name> on the gateway; the request's body is the payload.",
		"methods": "Methods are the HTTP methods it answers: GET, POST, PUT, PATCH, DELETE. Default [POST].",
	}
}

func (TriggerStatus) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "TriggerStatus is what the trigger controller reports.",
		"observedGeneration": "ObservedGeneration is the metadata.generation the status describes.",
		"lastFireTime":       "LastFireTime is when the trigger last fired.",
		"lastScheduleTime":   "LastScheduleTime is the schedule's last firing time.",
		"lastRun":            "LastRun is the WorkflowRun or the function invocation the trigger last started.",
		"lastResult":         "LastResult is the outcome of LastRun: Running, Succeeded, Failed, ... or an HTTP status for a function.",
		"active":             "Active are the WorkflowRuns it started that are still running.",
		"fired":              "Fired counts the trigger's firings.",
		"succeeded":          "Succeeded counts the firings whose run or call succeeded.",
		"failed":             "Failed counts the firings whose run or call failed.",
		"url":                "URL is where an HTTP trigger is requested, through the gateway.",
		"conditions":         "Conditions: Ready (False with the reason the source or the target is not usable).",
	}
}

func (TriggerList) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "TriggerList is a list of Triggers.",
		"metadata": "Standard list metadata.",
		"items":    "Items is the list of Triggers.",
	}
}

// OpenAPISchemaType is JSON's type in the OpenAPI documents: none, for
// any JSON value, as apiextensions' JSON. The documents then describe
// JSON fields as a CRD's schema without a type that preserves unknown
// fields: kubectl and field validation accept any value and any nested
// fields there.
func (JSON) OpenAPISchemaType() []string { return nil }

// OpenAPISchemaFormat is JSON's format in the OpenAPI documents: none.
func (JSON) OpenAPISchemaFormat() string { return "" }
