package printers

// HorizontalPodAutoscalers (autoscaling/v2).

// EndpointSlices.

// Leases.

// StorageClasses.

// Ingresses.
