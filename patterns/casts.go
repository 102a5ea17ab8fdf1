package patterns

import "google.golang.org/protobuf/proto"

// CastOne casts fn with arg to one node, without waiting: the local node
// if listed, else a random one. It returns the node chosen, or
// ErrNoneAvailable for an empty list. It runs on the calling goroutine
// with no coordinator, like System.Cast: it returns once the cast is
// queued (a first contact with a node waits for its link), and a cast
// that cannot be delivered is a dead letter.
func (p *Patterns) CastOne(nodes []string, fn string, arg proto.Message) (string, error) {
	if len(nodes) == 0 {
		return "", ErrNoneAvailable
	}
	node := pickOne(nodes, p.sys.Name())
	p.sys.Cast(node, fn, arg)
	return node, nil
}

// CastAll casts fn with arg to every entry of nodes, in list order,
// without waiting, like System.Cast for each (see CastOne). Successive
// casts from one goroutine reach each node in order. An empty list does
// nothing.
func (p *Patterns) CastAll(nodes []string, fn string, arg proto.Message) {
	for _, n := range nodes {
		p.sys.Cast(n, fn, arg)
	}
}
