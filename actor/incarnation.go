package actor

import (
	"fmt"
	"strconv"
)

// FormatIncarnation is how mailroom prints an incarnation everywhere: 16
// lowercase hexadecimal digits, leading zeros kept (0000a3f09c1b2d4e), in
// PIDs, errors, logs, Consul service IDs and meta, metric labels
// (mailroom_node_info) and the observer, so one incarnation reads the same
// in all of them and can be searched for. ParseIncarnation reads it back.
func FormatIncarnation(inc uint64) string {
	var b [16]byte
	appendIncarnation(b[:0], inc)
	return string(b[:])
}

// appendIncarnation appends FormatIncarnation(inc) to b.
func appendIncarnation(b []byte, inc uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[(inc>>uint(shift))&0xf])
	}
	return b
}

// ParseIncarnation parses an incarnation in hexadecimal: the 16 digits
// FormatIncarnation prints, or fewer (earlier releases printed some without
// leading zeros). Zero is no incarnation and an error.
func ParseIncarnation(s string) (uint64, error) {
	if len(s) == 0 || len(s) > 16 {
		return 0, fmt.Errorf("mailroom: parse incarnation %q: want 1 to 16 hex digits", s)
	}
	inc, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("mailroom: parse incarnation %q: want hex digits", s)
	}
	if inc == 0 {
		return 0, fmt.Errorf("mailroom: parse incarnation %q: zero is no incarnation", s)
	}
	return inc, nil
}
