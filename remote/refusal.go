package remote

import "fmt"

// refusalCode says why a handshake was refused. It travels on the wire
// (a u8, SPEC.md) next to a human reason, so that a side decides on the
// code, never on the text. Only an authenticated refusal (one the peer
// proved the cookie over) may change this node's state, and only
// codeDeclaredDead does: the node stops itself.
type refusalCode uint8

const (
	codeRefused        refusalCode = 0  // any other reason
	codeVersion        refusalCode = 1  // protocol version not supported
	codeMalformed      refusalCode = 2  // a handshake message did not decode
	codeBadCookie      refusalCode = 3  // the other side could not prove the cookie
	codeStopping       refusalCode = 4  // the node is shutting down
	codeNameClash      refusalCode = 5  // the dialer claims the listener's own name
	codeWrongNode      refusalCode = 6  // the dialer wanted another node
	codeStale          refusalCode = 7  // the dialer wanted another incarnation
	codeDeclaredDead   refusalCode = 8  // the dialer's incarnation was declared dead
	codeNoPool         refusalCode = 9  // a pool link asked of a disabled pool or a worker out of range
	codeBadRole        refusalCode = 10 // an unknown link role
	codeStillConnected refusalCode = 11 // an older incarnation of that name still has live links (retry)
	codeIdentity       refusalCode = 12 // the TLS certificate does not name the node (or VerifyPeer refused)
)

var refusalNames = [...]string{
	codeRefused:        "refused",
	codeVersion:        "version",
	codeMalformed:      "malformed",
	codeBadCookie:      "bad_cookie",
	codeStopping:       "stopping",
	codeNameClash:      "name_clash",
	codeWrongNode:      "wrong_node",
	codeStale:          "stale_incarnation",
	codeDeclaredDead:   "declared_dead",
	codeNoPool:         "no_pool",
	codeBadRole:        "bad_role",
	codeStillConnected: "still_connected",
	codeIdentity:       "identity",
}

func (c refusalCode) String() string {
	if int(c) < len(refusalNames) {
		return refusalNames[c]
	}
	return fmt.Sprintf("code_%d", uint8(c))
}

// refusal is a handshake refused by this side or by the peer. It is
// wrapped, with ErrHandshake, in the error the handshake returns.
type refusal struct {
	code   refusalCode
	reason string
	byPeer bool
	// authenticated: the peer proved the cookie over this refusal (its
	// MAC covers the whole handshake, the code and the reason). A refusal
	// that is not authenticated is only reported, never acted upon.
	authenticated bool
}

func (r *refusal) Error() string {
	switch {
	case !r.byPeer:
		return fmt.Sprintf("refused (%s): %s", r.code, r.reason)
	case r.authenticated:
		return fmt.Sprintf("refused by peer (%s, authenticated): %s", r.code, r.reason)
	}
	return fmt.Sprintf("refused by peer (%s, unauthenticated): %s", r.code, r.reason)
}

func refuse(code refusalCode, format string, args ...any) *refusal {
	return &refusal{code: code, reason: fmt.Sprintf(format, args...)}
}
