// Package future is the one-shot reply slot a caller waits on: the actor
// core's requests and the remote layer's calls and requests. The first
// completion wins, whether it is a reply (Reply) or the waiting side
// giving up (Claim); later replies are counted as late on the counter the
// future was made with. Not API.
package future
