package router

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/mailroom-go/mailroom/internal/rendezvous"
)

// Kind is how a router chooses among its routees.
type Kind int

const (
	// RoundRobin gives each message to the next routee in turn.
	RoundRobin Kind = iota
	// Random gives each message to a routee drawn at random.
	Random
	// Broadcast gives every message to every routee. Request is refused
	// (ErrBroadcastRequest): there is no one answer.
	Broadcast
	// ConsistentHash gives a message to the routee its key (Config.Key)
	// hashes to, by rendezvous hashing over the routees: the same key
	// goes to the same routee while the set does not change, and adding
	// or removing one routee moves only the keys it gains or held (about
	// 1/N of them). A pool routee keeps its keys across restarts.
	ConsistentHash
	// SmallestMailbox gives a message to the local routee with the
	// fewest messages waiting (System.MailboxLen), an idle one at once.
	// Routees on other nodes have no depth the router can read: they are
	// used, in turn, only when the router has no live local routee.
	SmallestMailbox
	// ScatterGatherFirst sends a Request to every routee and returns the
	// first answer; the other requests are cancelled and their outcomes
	// counted (Stats). A Send goes to every routee, as Broadcast's.
	ScatterGatherFirst
)

// String names the kind, e.g. "consistent-hash".
func (k Kind) String() string {
	switch k {
	case RoundRobin:
		return "round-robin"
	case Random:
		return "random"
	case Broadcast:
		return "broadcast"
	case ConsistentHash:
		return "consistent-hash"
	case SmallestMailbox:
		return "smallest-mailbox"
	case ScatterGatherFirst:
		return "scatter-gather-first"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// pick returns the index in set of the routee for msg, one of a kind
// that gives a message to one routee. set is not empty.
func (r *Router) pick(set []member, msg any) int {
	switch r.cfg.Kind {
	case Random:
		return rand.IntN(len(set))
	case ConsistentHash:
		return owner(keyHash(r.cfg.Key(msg)), set)
	case SmallestMailbox:
		return r.smallest(set)
	}
	return int((r.next.Add(1) - 1) % uint64(len(set)))
}

func keyHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// owner is the rendezvous owner of key in set: the member of the highest
// weight; a tie (equal 64-bit weights) goes to the lower hash, then the
// lower String, so the choice does not depend on the order of set.
func owner(key uint64, set []member) int {
	best, bestW := 0, rendezvous.Weight(key, set[0].hash)
	for i := 1; i < len(set); i++ {
		w := rendezvous.Weight(key, set[i].hash)
		if w > bestW || (w == bestW && less(&set[i], &set[best])) {
			best, bestW = i, w
		}
	}
	return best
}

func less(a, b *member) bool {
	if a.hash != b.hash {
		return a.hash < b.hash
	}
	return a.String() < b.String()
}

// smallest is the local routee with the fewest messages waiting; the scan
// starts at a rotating place, so routees of equal depth share the work.
// With no live local routee it takes the routees in turn.
func (r *Router) smallest(set []member) int {
	start := int((r.next.Add(1) - 1) % uint64(len(set)))
	best, bestLen := -1, 0
	for j := range set {
		i := (start + j) % len(set)
		n := set[i].mailboxLen(r.sys)
		if n < 0 {
			continue
		}
		if best < 0 || n < bestLen {
			best, bestLen = i, n
			if n == 0 {
				break
			}
		}
	}
	if best < 0 {
		return start
	}
	return best
}
