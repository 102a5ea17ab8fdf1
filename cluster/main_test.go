package cluster

import (
	"testing"

	"github.com/mailroom-go/mailroom/internal/testing/testnode"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testnode.SetChildHook(childHook)
	testnode.MaybeRunChild()
	goleak.VerifyTestMain(m)
}
