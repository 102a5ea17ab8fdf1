package discovery

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStaticSeeds(t *testing.T) {
	s, err := NewStatic("a=127.0.0.1:7001", "b=127.0.0.1:7002")
	require.NoError(t, err)
	var got []Event
	require.NoError(t, s.Start(context.Background(), Member{Node: "a"}, func(e Event) { got = append(got, e) }))
	require.Equal(t, []Event{{Type: MemberUp, Member: Member{Node: "b", Addr: "127.0.0.1:7002"}}}, got)
	require.Error(t, s.Start(context.Background(), Member{Node: "a"}, func(Event) {}))

	for _, bad := range []string{"nohost", "=1.2.3.4:5", "x=", "x=1.2.3.4"} {
		_, err := NewStatic(bad)
		require.Error(t, err, bad)
	}
	_, err = NewStatic("a=127.0.0.1:1", "a=127.0.0.1:2")
	require.ErrorContains(t, err, "listed twice")
}
