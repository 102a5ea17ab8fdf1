package bridge

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
)

// A protoactor address that names a mailroom node:
//
//	mailroom://orders-1/9f1c0e2a3b4c5d6e   that node's incarnation 9f1c… (hex)
//	mailroom://orders-1                    whichever incarnation is current
//
// The bridge sets its actor system's address to the first form, so every
// PID it spawns is pinned to the incarnation that spawned it: after a
// restart, an old PID never reaches an actor of the new incarnation. The
// second form is for PIDs built from a registered name, like mailroom's
// SendNamed.
const scheme = "mailroom://"

// Process ids that name mailroom targets rather than protoactor actors.
const (
	idPID  = "mailroom:pid:"  // a mailroom actor by its id (the address carries node and incarnation)
	idName = "mailroom:name:" // a mailroom actor by its registered name
	idFn   = "mailroom:fn:"   // a mailroom function
)

// Address is the protoactor address of incarnation inc of mailroom node
// node: the address the bridge gives the actor system it serves.
func Address(node string, inc uint64) string {
	return scheme + node + "/" + strconv.FormatUint(inc, 16)
}

// NodeAddress is the protoactor address of whichever incarnation of node
// is current. Use it to build the PID of an actor spawned under a name:
//
//	counter := actor.NewPID(bridge.NodeAddress("billing"), "counter")
func NodeAddress(node string) string { return scheme + node }

// NamePID is the protoactor PID of the mailroom actor registered as name
// on node. Send delivers to it; Request, RequestFuture and a request from
// an actor get its answer (mailroom's RequestNamed).
func NamePID(node, name string) *actor.PID { return actor.NewPID(NodeAddress(node), idName+name) }

// FunctionPID is the protoactor PID of the mailroom function fn on node:
// Send casts it, Request and RequestFuture call it (mailroom's Cast and
// Call).
func FunctionPID(node, fn string) *actor.PID { return actor.NewPID(NodeAddress(node), idFn+fn) }

// nodeAddr is a parsed mailroom address: inc 0 is "the current one".
type nodeAddr struct {
	node string
	inc  uint64
}

// nodeNameRE is mailroom's rule for node names.
var nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// parseAddress reads a mailroom address; ok is false for any other
// address (protoactor's own host:port, "nonhost"), which other resolvers
// may take.
func parseAddress(s string) (nodeAddr, bool) {
	rest, ok := strings.CutPrefix(s, scheme)
	if !ok {
		return nodeAddr{}, false
	}
	node, incText, pinned := strings.Cut(rest, "/")
	if !nodeNameRE.MatchString(node) {
		return nodeAddr{}, false
	}
	if !pinned {
		return nodeAddr{node: node}, true
	}
	inc, err := strconv.ParseUint(incText, 16, 64)
	if err != nil || inc == 0 {
		return nodeAddr{}, false
	}
	return nodeAddr{node: node, inc: inc}, true
}

// describe names a protoactor process in errors and logs.
func describe(pid *actor.PID) string {
	if pid == nil {
		return "protoactor <nil>"
	}
	return "protoactor " + strconv.Quote(pid.Id)
}
