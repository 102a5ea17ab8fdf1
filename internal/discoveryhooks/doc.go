// Package discoveryhooks lets the remote layer hand its logger to a
// discovery provider that was configured without one. discovery fills
// the slot at init; nothing here is API.
package discoveryhooks
