// Package rendezvous is highest-random-weight hashing, shared by the
// cluster's grain placement and the router's consistent-hash strategy:
// a key goes to the candidate whose weight for it is the highest, so
// adding or removing a candidate moves only the keys whose best
// candidate changed (about 1/N of them), with no ring to keep.
package rendezvous
