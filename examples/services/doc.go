// Command services shows versioned services: this process is the client
// node "app"; it starts providers as child processes (itself again, with
// SERVICES_CHILD set), calls "search, major version 2" without knowing
// which node serves it, prints the error messages of the failures a
// caller meets, then replaces both search providers, one at a time and
// under new node names, with version 2.2.0 while it calls a
// non-idempotent function 1,000 times:
//
//	calls=1000 failed=0 ran_twice=0
//
// go run ./examples/services (or make demo-services)
package main
