package wire

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testCookie is the cookie both ends of a test handshake share.
const testCookie = "remote-test-cookie-0123456789"

// admitAll admits every client that proved the cookie.
func admitAll(*Hello) *Refusal { return nil }
