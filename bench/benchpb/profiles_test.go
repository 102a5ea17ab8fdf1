package benchpb

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestProfileSizes(t *testing.T) {
	want := map[string][2]int{ // encoded size bounds
		ProfileTiny:   {2, 8},
		ProfileData:   {215, 235},
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
