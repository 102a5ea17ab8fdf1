// Command sim runs the remote core's simulator over many seeds (make
// sim: 1,000,000) on GOMAXPROCS workers and prints one line,
// "sim seeds=N failures=F steps=S calls=C executed=E duration=D". A
// failure exits 1 after printing the first failing seed's trace.
package main
