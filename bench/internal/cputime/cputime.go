// Package cputime reads the CPU time the benchmark process has used, which the benchmarks of
// this module report per operation (cpu-ns/op) next to wall time: a side that waits on the
// database costs wall time, a side that computes costs CPU time too.
package cputime
