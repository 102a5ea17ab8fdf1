// Package fakeclock is a clock whose time moves only when a test
// advances it: the one the actor package's own tests and the public
// testkit (mailroomtest) share.
package fakeclock
