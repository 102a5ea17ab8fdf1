package discovery

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDNSDiff: the events between two views, downs first; an address
// change is a down at the old address then an up at the new one; an
// unchanged target is no event.
func TestDNSDiff(t *testing.T) {
	view, evs := diffDNS(nil, []dnsTarget{{"a", "10.0.0.1:1"}, {"b", "10.0.0.2:1"}})
	require.Equal(t, []Event{
		{MemberUp, Member{Node: "a", Addr: "10.0.0.1:1"}},
		{MemberUp, Member{Node: "b", Addr: "10.0.0.2:1"}},
	}, evs)

	view, evs = diffDNS(view, []dnsTarget{{"a", "10.0.0.1:1"}, {"b", "10.0.0.9:2"}, {"c", "10.0.0.3:1"}})
	require.Equal(t, []Event{
		{MemberDown, Member{Node: "b", Addr: "10.0.0.2:1"}},
		{MemberUp, Member{Node: "b", Addr: "10.0.0.9:2"}},
		{MemberUp, Member{Node: "c", Addr: "10.0.0.3:1"}},
	}, evs)

	view, evs = diffDNS(view, []dnsTarget{{"c", "10.0.0.3:1"}})
	require.Equal(t, []Event{
		{MemberDown, Member{Node: "a", Addr: "10.0.0.1:1"}},
		{MemberDown, Member{Node: "b", Addr: "10.0.0.9:2"}},
	}, evs)
	require.Len(t, view, 1)

	_, evs = diffDNS(view, []dnsTarget{{"c", "10.0.0.3:1"}})
	require.Empty(t, evs)
}

// TestDNSConfig: the defaults, and a field out of range named in the
// error.
func TestDNSConfig(t *testing.T) {
	p, err := NewDNS(DNSConfig{Name: "_mailroom._tcp.shop.default.svc.cluster.local."})
	require.NoError(t, err)
	c := p.Config()
	require.Equal(t, "_mailroom._tcp.shop.default.svc.cluster.local", c.Name)
	require.Equal(t, DefaultDNSInterval, c.Interval)
	require.Equal(t, DefaultDNSTimeout, c.Timeout)
	require.Equal(t, DefaultDNSMaxTargets, c.MaxTargets)
	require.Equal(t, "shop-0", c.NodeName("shop-0.shop.default.svc.cluster.local", "10.1.2.3", 4000))
	require.Equal(t, "10.1.2.3", c.NodeName("", "10.1.2.3", 4000))
	require.Equal(t, "fd00--1", c.NodeName("", "fd00::1", 4000))

	for _, tc := range []struct {
		cfg  DNSConfig
		want string
	}{
		{DNSConfig{}, "Name is empty"},
		{DNSConfig{Name: strings.Repeat("a", 254)}, "Name is 254 bytes"},
		{DNSConfig{Name: "x", Port: 70000}, "Port is 70000"},
		{DNSConfig{Name: "x", Server: "10.0.0.1"}, "Server"},
		{DNSConfig{Name: "x", Interval: time.Millisecond}, "Interval is 1ms"},
		{DNSConfig{Name: "x", MaxTargets: -1}, "must not be negative"},
	} {
		_, err := NewDNS(tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}

// TestDNSStartStop: Start needs a valid self and a notify; Update is a
// no-op until Stop and ErrStopped after; Stop is idempotent and leaves
// nothing running (goleak, TestMain), even when the server never answers.
func TestDNSStartStop(t *testing.T) {
	// A server that is not there: every resolution fails fast.
	p, err := NewDNS(DNSConfig{Name: "nobody.invalid", Server: "127.0.0.1:9", Interval: 10 * time.Millisecond, Timeout: 100 * time.Millisecond, Logger: discardLogger()})
	require.NoError(t, err)
	require.ErrorContains(t, p.Start(context.Background(), Member{Node: "bad name"}, func(Event) {}), "Member.Node")
	require.ErrorContains(t, p.Start(context.Background(), Member{Node: "a"}, nil), "notify is nil")
	require.NoError(t, p.Start(context.Background(), Member{Node: "a"}, func(Event) {}))
	require.ErrorContains(t, p.Start(context.Background(), Member{Node: "a"}, func(Event) {}), "already started")
	require.NoError(t, p.Update(context.Background(), Member{Node: "a", Draining: true}))
	for deadline := time.Now().Add(10 * time.Second); p.Stats().Errors < 2; time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "no failed resolutions counted")
	}
	require.Zero(t, p.Stats().Targets)
	require.NoError(t, p.Stop(context.Background()))
	require.NoError(t, p.Stop(context.Background()))
	require.ErrorIs(t, p.Update(context.Background(), Member{Node: "a"}), ErrStopped)
	require.ErrorIs(t, p.Start(context.Background(), Member{Node: "a"}, func(Event) {}), ErrStopped)
}
