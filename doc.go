// Package personagen is the root of the personagen module, which compiles persona chain specs
// (YAML) into typed Go constructors and supplies the runtime they run on. It holds no API of its
// own. Start from package gen (Generate, behind `personagen generate`) to generate personas, from
// package runtime (Persona) and package runtime/agent (Runner) to run them, and from the
// README for a tour. Its generate.go regenerates the example personas committed in generated/.
package personagen
