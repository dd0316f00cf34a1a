package personagen

// Regenerate generated/ from the example specs: `go generate ./...` at the
// module root. `personagen verify` with the same arguments checks that the
// committed files are up to date.
//go:generate go run ./cmd/personagen generate -out generated -pkg generated -root examples examples
