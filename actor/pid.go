package actor

import (
	"fmt"
	"strconv"
	"strings"
)

// PID names one actor: the node it lives on, the incarnation of that node
// (drawn at every node start), and an ID unique within that incarnation.
// A PID is a value; compare with ==. The zero PID names no actor.
//
// A PID of an earlier incarnation never reaches an actor of a later one:
// sending to it is a dead letter, requesting from it is ErrNoProcess.
type PID struct {
	Node        string
	Incarnation uint64
	ID          uint64
}

// IsZero reports whether p is the zero PID.
func (p PID) IsZero() bool { return p.ID == 0 && p.Node == "" && p.Incarnation == 0 }

// String renders "node/incarnation/id", the incarnation as
// FormatIncarnation prints it.
func (p PID) String() string {
	if p.IsZero() {
		return "<nopid>"
	}
	b := make([]byte, 0, len(p.Node)+1+16+1+20)
	b = append(b, p.Node...)
	b = append(b, '/')
	b = appendIncarnation(b, p.Incarnation)
	b = append(b, '/')
	return string(strconv.AppendUint(b, p.ID, 10))
}

// ParsePID parses the form String produces.
func ParsePID(s string) (PID, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return PID{}, fmt.Errorf("mailroom: parse pid %q: want node/incarnation/id", s)
	}
	j := strings.LastIndexByte(s[:i], '/')
	if j <= 0 {
		return PID{}, fmt.Errorf("mailroom: parse pid %q: want node/incarnation/id", s)
	}
	inc, err := strconv.ParseUint(s[j+1:i], 16, 64)
	if err != nil {
		return PID{}, fmt.Errorf("mailroom: parse pid %q: incarnation: %w", s, err)
	}
	id, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return PID{}, fmt.Errorf("mailroom: parse pid %q: id: %w", s, err)
	}
	return PID{Node: s[:j], Incarnation: inc, ID: id}, nil
}
