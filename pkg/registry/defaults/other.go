package defaults
