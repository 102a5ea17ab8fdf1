package actor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAnIncarnationIsPrintedInSixteenDigitsEverywhere(t *testing.T) {
	require.Equal(t, "0000000000000abc", FormatIncarnation(0xabc), "leading zeros kept")
	require.Equal(t, "ffffffffffffffff", FormatIncarnation(^uint64(0)))
	require.Equal(t, "orders-1/0000000000000abc/7", PID{Node: "orders-1", Incarnation: 0xabc, ID: 7}.String())
	require.Contains(t, NewError("call", "orders-1", 0xabc, "charge", ErrNoFunction).Error(), "(incarnation 0000000000000abc)", "errors print it the same way")

	sys := newSystem(t, "n1")
	require.Len(t, FormatIncarnation(sys.Incarnation()), 16)

	for _, s := range []string{"0000000000000abc", "abc", "ABC"} {
		inc, err := ParseIncarnation(s)
		require.NoError(t, err, s)
		require.Equal(t, uint64(0xabc), inc, s)
	}
	for _, s := range []string{"", "0", "0000000000000000", "xyz", "10000000000000000", "-1"} {
		_, err := ParseIncarnation(s)
		require.Error(t, err, s)
		require.ErrorContains(t, err, "mailroom: parse incarnation")
	}
	pid, err := ParsePID("orders-1/0000000000000abc/7")
	require.NoError(t, err)
	require.Equal(t, PID{Node: "orders-1", Incarnation: 0xabc, ID: 7}, pid)
	pid, err = ParsePID("orders-1/abc/7")
	require.NoError(t, err, "the unpadded form of earlier releases still parses")
	require.Equal(t, uint64(0xabc), pid.Incarnation)
}
