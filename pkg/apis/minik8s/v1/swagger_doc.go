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
