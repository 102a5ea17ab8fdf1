// Command quickstart is the tour of mailroom on one node: a supervision
// tree, Send, Request, a registered function and Call, and a crash that
// the supervisor answers with a restart. Run it with `make demo`.
package main
