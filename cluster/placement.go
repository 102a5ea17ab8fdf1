package cluster

import (
	"hash/fnv"

	"github.com/mailroom-go/mailroom/internal/rendezvous"
)

// candidate is a node incarnation that hosts a kind.
type candidate struct {
	node        string
	incarnation uint64
}

// owner returns the rendezvous owner of (kind, identity) among cands:
// the candidate with the highest weight mix(key ^ mix(candidate)). A
// tie (two equal 64-bit weights) goes to the lower node name, so every
// node that sees the same candidates picks the same one, whatever their
// order. ok is false when there is no candidate.
func owner(kind, identity string, cands []candidate) (best candidate, ok bool) {
	key := keyHash(kind, identity)
	var bestW uint64
	for _, c := range cands {
		w := rendezvous.Weight(key, candHash(c))
		if !ok || w > bestW || (w == bestW && c.node < best.node) {
			best, bestW, ok = c, w, true
		}
	}
	return best, ok
}

// keyHash hashes kind and identity with a separator no kind contains
// (kinds follow the node name rule), so ("a", "bc") and ("ab", "c")
// differ.
func keyHash(kind, identity string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(identity))
	return h.Sum64()
}

func candHash(c candidate) uint64 {
	h := fnv.New64a()
	h.Write([]byte(c.node))
	return h.Sum64() ^ rendezvous.Mix64(c.incarnation+0x9e3779b97f4a7c15)
}
