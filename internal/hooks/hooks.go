package hooks

// Actor is set by package actor's init, before any package that imports
// actor initialises, to a pointer to the struct of the actor core's
// functions: actor's hookFuncs and internal/actorhooks' funcs are aliases
// of one struct literal, so they are one type. internal/actorhooks
// asserts it once, at its own init, and offers each function typed;
// nothing else reads it.
//
// It cannot be typed here: its fields name actor's types, and actor
// imports this package. One slot keeps that untyped crossing to a single
// assertion, checked before any test or program runs.
var Actor any

// PoolHost is a
//
//	func(*remote.Node) poolpath.Host
//
// set by package remote (not actor) when it is initialised: the pooled
// path (proxypool) reaches a node through it, so that remote.Node
// exports no pool hooks. proxypool imports remote, so it is set before
// proxypool's own initialisation asserts it, once.
var PoolHost any
