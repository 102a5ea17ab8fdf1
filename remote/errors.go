package remote

import "github.com/mailroom-go/mailroom/internal/wire"

// ErrHandshake wraps every handshake failure: a refusal by either side
// (with its reason), a failed proof, a TLS failure, a malformed or
// missing message, or the handshake deadline. It is the wire package's
// value, so errors.Is matches either.
var ErrHandshake = wire.ErrHandshake
