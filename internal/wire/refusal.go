package wire

import "fmt"

// refusalCode says why a handshake was refused. It travels on the wire
// (a u8, SPEC.md) next to a human reason, so that a side decides on the
// code, never on the text. Only an authenticated refusal (one the peer
// proved the cookie over) may change this node's state, and only
// codeDeclaredDead does: the node stops itself.
type refusalCode uint8

const (
	CodeRefused        refusalCode = 0  // any other reason
	CodeVersion        refusalCode = 1  // protocol version not supported
	CodeMalformed      refusalCode = 2  // a handshake message did not decode
	CodeBadCookie      refusalCode = 3  // the other side could not prove the cookie
	CodeStopping       refusalCode = 4  // the node is shutting down
	CodeNameClash      refusalCode = 5  // the dialer claims the listener's own name
	CodeWrongNode      refusalCode = 6  // the dialer wanted another node
	CodeStale          refusalCode = 7  // the dialer wanted another incarnation
	CodeDeclaredDead   refusalCode = 8  // the dialer's incarnation was declared dead
	CodeNoPool         refusalCode = 9  // a pool link asked of a disabled pool or a worker out of range
	CodeBadRole        refusalCode = 10 // an unknown link role
	CodeStillConnected refusalCode = 11 // an older incarnation of that name still has live links (retry)
	CodeIdentity       refusalCode = 12 // the TLS certificate does not name the node (or VerifyPeer refused)
	CodeTooManyLinks   refusalCode = 13 // the dialer's incarnation has MaxLinksPerPeer links open (retry when one closes)
	CodeTooManyNodes   refusalCode = 14 // MaxNodes names are known and none can be forgotten
	CodeBadName        refusalCode = 15 // the node name is off the rule (internal/nodename): version 5
)

var refusalNames = [...]string{
	CodeRefused:        "refused",
	CodeVersion:        "version",
	CodeMalformed:      "malformed",
	CodeBadCookie:      "bad_cookie",
	CodeStopping:       "stopping",
	CodeNameClash:      "name_clash",
	CodeWrongNode:      "wrong_node",
	CodeStale:          "stale_incarnation",
	CodeDeclaredDead:   "declared_dead",
	CodeNoPool:         "no_pool",
	CodeBadRole:        "bad_role",
	CodeStillConnected: "still_connected",
	CodeIdentity:       "identity",
	CodeTooManyLinks:   "too_many_links",
	CodeTooManyNodes:   "too_many_nodes",
	CodeBadName:        "bad_name",
}

func (c refusalCode) String() string {
	if int(c) < len(refusalNames) {
		return refusalNames[c]
	}
	return fmt.Sprintf("code_%d", uint8(c))
}

// Refusal is a handshake refused by this side or by the peer. It is
// wrapped, with ErrHandshake, in the error the handshake returns.
type Refusal struct {
	Code   refusalCode
	Reason string
	ByPeer bool
	// Authenticated: the peer proved the cookie over this refusal (its
	// MAC covers the whole handshake, the code and the reason). A refusal
	// that is not authenticated is only reported, never acted upon.
	Authenticated bool
}

func (r *Refusal) Error() string {
	switch {
	case !r.ByPeer:
		return fmt.Sprintf("refused (%s): %s", r.Code, r.Reason)
	case r.Authenticated:
		return fmt.Sprintf("refused by peer (%s, authenticated): %s", r.Code, r.Reason)
	}
	return fmt.Sprintf("refused by peer (%s, unauthenticated): %s", r.Code, r.Reason)
}

func Refuse(code refusalCode, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}
