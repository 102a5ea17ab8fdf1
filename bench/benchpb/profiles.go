package benchpb

import (
	"fmt"
	"runtime"

	"github.com/mailroom-go/mailroom/bench/benchpb/vtpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Profile names, as they appear in the results.
const (
	ProfileTiny   = "tiny"
	ProfileBytes  = "bytes"
	ProfileData   = "data"
	ProfileDataVT = "data-vt"
	Profile1KiB   = "1KiB"
	Profile100KiB = "100KiB"
)

// BytesLen is the length of the bytes profile's one field.
const BytesLen = 200

// Profiles lists every profile, smallest first.
var Profiles = []string{ProfileTiny, ProfileBytes, ProfileData, ProfileDataVT, Profile1KiB, Profile100KiB}

// Payload returns the message of a profile. The value is built once per
// call; senders build it once and share it read-only (marshalling a
// message concurrently is safe).
//
//   - bytes: a wrapperspb.BytesValue of BytesLen bytes (203 encoded): the
//     runtime's cost with next to no codec work;
//   - data: three nested ten-field records (Data, 224 bytes encoded);
//   - data-vt: the same values in vtpb.Data, whose type also has
//     vtprotobuf's methods; the same bytes on the wire under another type
//     name. A runtime that does not look for those methods encodes it
//     exactly like data.
func Payload(profile string) (proto.Message, error) {
	switch profile {
	case ProfileTiny:
		return &Tiny{Atom: "ok"}, nil
	case ProfileBytes:
		return wrapperspb.Bytes(fill(BytesLen)), nil
	case ProfileData:
		return data(), nil
	case ProfileDataVT:
		return dataVT(), nil
	case Profile1KiB:
		return &Blob{Data: fill(1024 - 3)}, nil // 3 bytes of tag and length
	case Profile100KiB:
		return &Blob{Data: fill(100<<10 - 4)}, nil
	}
	return nil, fmt.Errorf("benchpb: unknown payload profile %q (want one of %v)", profile, Profiles)
}

// Types are the message types both nodes must know.
func Types() []proto.Message {
	return []proto.Message{&Tiny{}, &Record{}, &Data{}, &Blob{}, &Ack{}, &wrapperspb.BytesValue{}, &vtpb.Record{}, &vtpb.Data{}}
}

// vtUnmarshaler is the decoding method vtprotobuf generates.
type vtUnmarshaler interface{ UnmarshalVT([]byte) error }

// DecodeAllocs is the number of heap allocations (runtime.MemStats
// Mallocs, as testing.AllocsPerRun counts them) that decoding one
// message of the profile into a fresh value makes: the new message and
// whatever its fields need. It is the decoded message's own cost, the
// floor of any receiver. Types with vtprotobuf methods are decoded with
// UnmarshalVT (what a runtime that detects them does), others with
// proto.Unmarshal. Run it where nothing else allocates much (it measures
// the whole process over 1,000 decodes and rounds down).
func DecodeAllocs(profile string) (int, error) {
	m, err := Payload(profile)
	if err != nil {
		return 0, err
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return 0, err
	}
	typ := m.ProtoReflect().Type()
	decode := func() error {
		fresh := typ.New().Interface()
		if u, ok := fresh.(vtUnmarshaler); ok {
			return u.UnmarshalVT(b)
		}
		return proto.Unmarshal(b, fresh)
	}
	if err := decode(); err != nil { // warm any lazily built tables
		return 0, err
	}
	const runs = 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if err := decode(); err != nil {
			return 0, err
		}
	}
	runtime.ReadMemStats(&after)
	return int((after.Mallocs - before.Mallocs) / runs), nil
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

// dataVT is data() in the vtprotobuf-generated types.
func dataVT() *vtpb.Data {
	conv := func(r *Record) *vtpb.Record {
		return &vtpb.Record{
			Id: r.Id, Name: r.Name, Price: r.Price, Active: r.Active, Count: r.Count,
			CreatedNs: r.CreatedNs, Kind: r.Kind, Flags: r.Flags, Delta: r.Delta, Ratio: r.Ratio,
		}
	}
	d := data()
	return &vtpb.Data{Order: conv(d.Order), Customer: conv(d.Customer), Item: conv(d.Item)}
}

func fill(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + 7)
	}
	return b
}
