// Package controllerref holds what the controllers that own objects do
// alike with controller ownerReferences: find the owner a reference names
// in a cache, and check with the API, before adopting, that the owner is
// still the one the cache showed.
//
// It reads only; adopting and releasing (the patches) stay with each
// controller. It must not import a controller package.
package controllerref
