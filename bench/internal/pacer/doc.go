// Package pacer schedules the paced writers: a timing wheel that fires
// "writer i is due" at a resolution of one slot (default 1 ms) from one
// goroutine, instead of one runtime timer and one goroutine per writer
// and operation. Every path's writers are paced by the same wheel, so its
// cost is the same for all of them.
//
// The ring is a synchronous core (add, take) driven by Run. Schedule is
// safe from any goroutine; the fire function runs on Run's goroutine and
// must be quick (it sends the writer a message).
package pacer
