package wire

import "github.com/mailroom-go/mailroom/internal/testing/testutil"

// marshal encodes a payload on its own, for tests that build frames by
// hand.
var marshal = testutil.Marshal
