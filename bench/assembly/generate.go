package assembly

// Regenerate internal/persona from the bench persona spec: `go generate ./...` in bench/.
//go:generate go run github.com/personagen/personagen/cmd/personagen generate -out internal/persona -pkg persona -root . bench-agent.persona.yaml
