package remote

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mailroom-go/mailroom/actor"
	"github.com/mailroom-go/mailroom/discovery"
	"github.com/mailroom-go/mailroom/internal/testing/testutil"
	"github.com/stretchr/testify/require"
)

// listingProvider is a provider whose members carry no incarnation (as
// discovery.DNS's): the test lists and withdraws them by hand.
type listingProvider struct {
	mu     sync.Mutex // protects notify
	notify func(discovery.Event)
}

func (p *listingProvider) Start(_ context.Context, _ discovery.Member, notify func(discovery.Event)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = notify
	return nil
}
func (p *listingProvider) Update(context.Context, discovery.Member) error { return nil }
func (p *listingProvider) Stop(context.Context) error                     { return nil }

func (p *listingProvider) emit(typ discovery.EventType, m discovery.Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify(discovery.Event{Type: typ, Member: m})
}

// TestListedSeedsAreKeptLinkedWhileListed: a member another provider
// lists with Incarnation 0 is linked with no message sent and relinked
// after it restarts; once withdrawn, it is no longer: a restart of it
// then gets no link until something is sent to it.
func TestListedSeedsAreKeptLinkedWhileListed(t *testing.T) {
	addrB := freeAddr(t)
	sysB, _ := startAt(t, "b", addrB, nil)
	prov := &listingProvider{}
	sysA, err := actor.Start(actor.Config{Name: "a", Logger: actor.DiscardLogger()})
	require.NoError(t, err)
	defer stopNow(t, sysA)
	a, err := Start(context.Background(), sysA, Config{Cookie: testCookie, Discovery: prov})
	require.NoError(t, err)

	b := discovery.Member{Node: "b", Addr: addrB}
	prov.emit(discovery.MemberUp, b)
	testutil.Eventually(t, "a links to b by itself", func() bool { return outLinked(a, "b") == sysB.Incarnation() })

	stopNow(t, sysB)
	sysB2, _ := startAt(t, "b", addrB, nil)
	testutil.Eventually(t, "a relinks to b's new incarnation", func() bool { return outLinked(a, "b") == sysB2.Incarnation() })

	prov.emit(discovery.MemberDown, b)
	stopNow(t, sysB2)
	sysB3, _ := startAt(t, "b", addrB, nil)
	defer stopNow(t, sysB3)
	// The behaviour under test is an absence: a bounded wait of several
	// keeper backoffs (100 ms at first after news of the seed).
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		require.NotEqual(t, sysB3.Incarnation(), outLinked(a, "b"), "a withdrawn seed is not kept linked")
	}
	prov.emit(discovery.MemberUp, b)
	testutil.Eventually(t, "listed again, b is linked again", func() bool { return outLinked(a, "b") == sysB3.Incarnation() })
}
