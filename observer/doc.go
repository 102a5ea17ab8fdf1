// Package observer is a live, read-only view of one mailroom node in the
// browser: charts of its main rates over the last minutes (messages to
// and from other nodes, calls made and answered, failed calls by outcome,
// what is waiting), a graph of the nodes it knows and its links to them,
// the cluster members and their incarnations with their up/down history,
// the supervision trees with restart counts, the actors with the deepest
// and busiest mailboxes, the links and proxy pools per peer (state, batch
// sizes, queue depth), the calls pending per peer incarnation with the
// oldest one's age, the runtime's counters as a table with their labels,
// and the extra panels other packages add.
//
// One page, embedded in the binary (no build step, no external assets),
// polls a JSON endpoint and redraws itself; every panel has its own JSON
// endpoint too, for scripts:
//
//	/                the page
//	/api/snapshot    every panel at once (what the page polls)
//	/api/series      the charts: rates and levels over the last samples
//	/api/node        this node: name, incarnation, address
//	/api/members     incarnations seen, with their history, and the last events
//	/api/trees       the supervision trees on this node
//	/api/actors      mailbox depth histogram, the deepest and busiest actors
//	/api/peers       links and pools per peer node
//	/api/pending     calls and requests waiting, per peer incarnation
//	/api/counters    the remote layer's and the actor system's counters
//	/api/panels      the extra panels (Options.Panels), each also at
//	                 /api/panels/{name}
//
// # Extra panels
//
// Another package adds a panel without the observer knowing it: it builds
// a Panel (a name and a function returning tables) and the user passes it
// in Options.Panels. The page draws its tables after the built-in panels.
// See Panel for the contract (when Data is called, its deadline, the
// bounds).
//
// # Usage
//
//	node, err := remote.Start(ctx, sys, remote.Config{...})
//	pools, err := proxypool.Start(node, proxypool.Config{})
//	// Mount it on your own server, behind your own authentication:
//	mux.Handle("/observer/", http.StripPrefix("/observer", observer.Handler(node, observer.Options{Pools: pools})))
//	// Or serve it on its own, bound to 127.0.0.1 unless a token is set:
//	err = observer.Serve(ctx, node, "127.0.0.1:7070", observer.Options{Pools: pools})
//
// # The token rule
//
// Serve binds to 127.0.0.1 when addr has no host, and refuses to listen
// on any other address than a loopback one unless Options.Token is set.
// When Token is set, every request must carry it, in the
// "Authorization: Bearer <token>" header, the "X-Observer-Token" header or
// the "token" query parameter (the page passes on the one in its own URL);
// it is compared in constant time and a request without it gets 401.
// Only the page's script and style under /static/, which hold no data,
// are served without it.
// Handler applies the same check when Token is set; without a token it
// serves whoever reaches it, so mount it behind your own authentication.
//
// # What it costs, and its bounds
//
// The observer changes nothing: it answers GET and HEAD only (405
// otherwise). It reads the runtime's accessors (remote.Node's Peers,
// Stats and Pending, proxypool.Manager's ConnectionInfo and Stats,
// supervisor.Trees) and a mailbox sample that walks the actors a table
// shard at a time (nothing per message). The charts' samples are taken
// every Options.SeriesEvery on the node's actor.Clock, whether or not
// anyone watches (atomics and a lock per peer; no walk over the actors),
// into a ring of Options.SeriesPoints; the observer owns no goroutine for
// it (each sample schedules the next) and the System's Stop ends it. A
// snapshot is taken at most once
// per Options.MinInterval and shared by every client, so clients polling
// at any rate cost one snapshot per interval. Every list is capped (Top
// actors, Events, incarnations, peers, pending entries, tree nodes), so
// the response size is bounded; a capped list says how much it left out.
// Membership history and the charts are recorded from the moment Handler
// is called: install it at start-up to see everything.
//
// # The caller's duties
//
//   - Call Handler once per node and reuse the handler: each call adds
//     hooks to the node (for the history) and a sampler (for the charts)
//     that stay until it stops.
//   - Set Token, or keep the observer on loopback, or mount it behind
//     your own authentication: it shows node names, addresses, actor
//     names and function names.
package observer
