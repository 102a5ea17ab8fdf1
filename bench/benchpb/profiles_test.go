package benchpb

import (
	"bytes"
	"testing"

	"github.com/mailroom-go/mailroom/bench/benchpb/vtpb"
	"google.golang.org/protobuf/proto"
)

func TestProfileSizes(t *testing.T) {
	want := map[string][2]int{ // encoded size bounds
		ProfileTiny:   {2, 8},
		ProfileBytes:  {203, 203},
		ProfileData:   {215, 235},
		ProfileDataVT: {215, 235},
		Profile1KiB:   {1024, 1024},
		Profile100KiB: {100 << 10, 100 << 10},
	}
	for _, p := range Profiles {
		m, err := Payload(p)
		if err != nil {
			t.Fatal(err)
		}
		n := proto.Size(m)
		if b := want[p]; n < b[0] || n > b[1] {
			t.Errorf("%s: %d bytes encoded, want %d..%d", p, n, b[0], b[1])
		}
	}
	if _, err := Payload("huge"); err == nil {
		t.Error("an unknown profile was accepted")
	}
}

// TestDataVTIsDataOnTheWire: data-vt carries the same values as data, so
// the same bytes, whichever codec encodes it; and the vtprotobuf methods
// agree with protobuf's.
func TestDataVTIsDataOnTheWire(t *testing.T) {
	d, _ := Payload(ProfileData)
	v, _ := Payload(ProfileDataVT)
	pd, err := proto.MarshalOptions{Deterministic: true}.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	vt, err := v.(*vtpb.Data).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pd, pv) || !bytes.Equal(pd, vt) {
		t.Fatalf("data and data-vt differ on the wire:\n%x\n%x\n%x", pd, pv, vt)
	}
	var back vtpb.Data
	if err := back.UnmarshalVT(pd); err != nil || !proto.Equal(&back, v) {
		t.Fatalf("UnmarshalVT of data's bytes: %v, equal %v", err, proto.Equal(&back, v))
	}
	if v.(*vtpb.Data).SizeVT() != len(pd) {
		t.Fatalf("SizeVT %d, encoded %d", v.(*vtpb.Data).SizeVT(), len(pd))
	}
	if proto.MessageName(d) == proto.MessageName(v) {
		t.Fatal("data-vt must be a type of its own")
	}
}

func TestDecodeAllocs(t *testing.T) {
	// bytes: the BytesValue and its copied field; data: Data, three
	// Records and their two strings each.
	for profile, want := range map[string]int{ProfileBytes: 2, ProfileData: 10, ProfileDataVT: 10} {
		got, err := DecodeAllocs(profile)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %d allocations per decode, want %d", profile, got, want)
		}
	}
}
