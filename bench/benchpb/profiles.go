package benchpb

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Profile names, as they appear in the results.
const (
	ProfileTiny   = "tiny"
	ProfileData   = "data"
	Profile1KiB   = "1KiB"
	Profile100KiB = "100KiB"
)

// Profiles lists every profile, smallest first.
var Profiles = []string{ProfileTiny, ProfileData, Profile1KiB, Profile100KiB}

// Payload returns the message of a profile. The value is built once per
// call; senders build it once and share it read-only (marshalling a
// message concurrently is safe).
func Payload(profile string) (proto.Message, error) {
	switch profile {
	case ProfileTiny:
		return &Tiny{Atom: "ok"}, nil
	case ProfileData:
		return data(), nil
	case Profile1KiB:
		return &Blob{Data: fill(1024 - 3)}, nil // 3 bytes of tag and length
	case Profile100KiB:
		return &Blob{Data: fill(100<<10 - 4)}, nil
	}
	return nil, fmt.Errorf("benchpb: unknown payload profile %q (want one of %v)", profile, Profiles)
}

// Types are the message types both nodes must know.
func Types() []proto.Message {
	return []proto.Message{&Tiny{}, &Record{}, &Data{}, &Blob{}, &Ack{}}
}

func data() *Data {
	rec := func(id int64, name, kind string) *Record {
		return &Record{
			Id: id, Name: name, Price: 1234.5678, Active: true, Count: 42,
			CreatedNs: 1_732_900_000_000_000_000 + id, Kind: kind,
			Flags: 0x5a5a, Delta: -977, Ratio: 0.75,
		}
	}
	return &Data{
		Order:    rec(1_000_001, "order-2024-11-29-000001", "purchase"),
		Customer: rec(2_000_002, "customer-anna-k-000002", "retail"),
		Item:     rec(3_000_003, "item-sku-77-blue-000003", "widget"),
	}
}

func fill(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + 7)
	}
	return b
}
