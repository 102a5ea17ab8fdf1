package remote

import (
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/mailroom-go/mailroom/internal/wire"
)

// marshal encodes a payload on its own, for tests that build frames by
// hand.
var marshal = testutil.Marshal

// fuzzEnds are the ends of a link from a to b, for frames built by hand.
var fuzzEnds = wire.Ends{SelfNode: "a", SelfInc: 1, PeerNode: "b", PeerInc: 2}
