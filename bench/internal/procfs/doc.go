// Package procfs reads what the benchmark measures of a process from
// Linux's /proc: peak and current resident memory (status VmHWM, VmRSS),
// CPU time (stat utime + stime, every thread, exited ones included) and
// bytes written (io wchar). The parsers are pure functions over the file
// contents; Read ties them to a pid.
package procfs
