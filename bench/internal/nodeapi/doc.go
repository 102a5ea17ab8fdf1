// Package nodeapi is the contract between the controller and the node
// roles: role names, each role's configuration, and the commands every
// sender and receiver answers (over package ctl), whatever the path.
//
// A point runs as: start the receiver, start the sender with the
// receiver's address, wait until both report Connected, then twice (the
// warm-up, then the measured phase): Arm both, Start the sender, poll
// Status until the counting side reports an end time. Stats afterwards,
// then Quit.
package nodeapi
