package pidpb

import "github.com/mailroom-go/mailroom/actor"

// From returns pid as a message; the zero PID (no actor) is nil, an unset
// field.
func From(pid actor.PID) *PID {
	if pid.IsZero() {
		return nil
	}
	return &PID{Node: pid.Node, Incarnation: pid.Incarnation, Id: pid.ID}
}

// PID returns the actor.PID x carries; a nil x (an unset field) is the
// zero PID.
func (x *PID) PID() actor.PID {
	if x == nil {
		return actor.PID{}
	}
	return actor.PID{Node: x.Node, Incarnation: x.Incarnation, ID: x.Id}
}
