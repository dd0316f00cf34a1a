// Package host is the host code the example personas reference: the Env
// their constructors take, the loaders and record types load_record
// calls, the tools they offer the model, and SupportPolicy, a custom
// resolver configured from a spec's `use.with`. A real application keeps
// the same shapes and backs them with its own database and services; here
// they are in memory so the demo runs anywhere. Start from Env.
package host
