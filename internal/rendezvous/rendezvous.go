package rendezvous

// Weight is the weight of a candidate (its hash cand) for a key (its
// hash key): Mix64(key ^ Mix64(cand)). The key with the highest weight
// wins; callers break a tie (two equal 64-bit weights) by an order of
// their own, so that every party that sees the same candidates picks the
// same one, whatever their order.
func Weight(key, cand uint64) uint64 { return Mix64(key ^ Mix64(cand)) }

// Mix64 is the splitmix64 finaliser: every input bit moves about half
// of the output bits, which FNV alone does not do for short keys that
// differ in their last bytes.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
