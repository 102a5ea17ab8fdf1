// Package nodename is mailroom's one rule for node names, for the
// packages that check them: the actor system its own name, discovery the
// names it publishes, the wire the names peers claim (a name a peer
// chose reaches log lines, metric labels and error texts, so it is
// checked before anything else is done with it).
//
// The rule: 1 to MaxLen bytes, each an ASCII letter, digit, '.', '_' or
// '-'. Callers check with Valid, name the rule with Rule in their
// errors, and put a name that failed the check in a message only through
// Quote, which bounds it.
package nodename
