// Package controllerref holds what the controllers that own objects do
// alike with controller ownerReferences: find the owner a reference names
// in a cache, check with the API, before adopting, that the owner is
// still the one the cache showed, and claim an owner's dependents
// (Claimer: adopt the orphans its selector matches, release those it no
// longer matches), as Kubernetes' ControllerRefManager does.
//
// The writes go through the Patch function each controller supplies for
// its dependents' resource. It must not import a controller package.
package controllerref
