package printers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Pods.

// Nodes.

// Namespaces.

// Services.

// SortedUnique drops empty strings and duplicates and sorts the rest.
func SortedUnique(items []string) []string {
	items = slices.DeleteFunc(items, func(s string) bool { return s == "" })
	slices.Sort(items)
	return slices.Compact(items)
}

// Endpoints.

// ConfigMaps, Secrets and ServiceAccounts.

// Events.

// PersistentVolumes and claims.

func StringPtrCell(s *string) string {
	if s == nil {
		return Unset
	}
	return *s
}

func VolumeModeCell(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return Unset
	}
	return string(*m)
}
