// Package ctl is the benchmark's control plane: the controller process
// starts each node as a child process (this same binary, re-executed with
// a role) and drives it with JSON commands, one per line, on the child's
// stdin; the child answers on file descriptor 3, one JSON line per
// command. Control traffic never touches the links being measured, and
// the child's stdout and stderr stay free for logs.
//
// Child side: Serve(ready, handlers) writes the ready line, then answers
// commands in order until "quit" or stdin closes. Controller side: Start
// runs a child and waits for its ready line; Call sends one command and
// waits for its answer.
package ctl
