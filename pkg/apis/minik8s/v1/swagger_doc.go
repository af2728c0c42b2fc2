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
