package gen

import (
	"errors"

	"github.com/dave/jennifer/jen"

	"github.com/personagen/personagen/runtime/transcript"
	"github.com/personagen/personagen/spec"
)

// parseTranscript checks a static transcript file at generation time with
// the runtime's own parser. It reports the 1-based line and message of the
// first problem.
func parseTranscript(text string) (line int, msg string, bad bool) {
	_, err := transcript.Parse(text)
	if err == nil {
		return 0, "", false
	}
	var pe *transcript.ParseError
	if errors.As(err, &pe) {
		return pe.Line, pe.Msg, true
	}
	return 1, err.Error(), true
}

// computedTranscript renders a load_transcript entry with a computed path:
// transcript.Load takes a static path only, so a generated helper computes
// the path for each run, refuses one that is absolute or leaves the root
// (runtime.ErrPathEscapes, as a computed load_file path), and delegates.
// id names the helper (supportAgentMessage4Transcript).
func (g *fileGen) computedTranscript(path spec.Template, id string) jen.Code {
	pathFunc := g.template(path, id+"Path")
	name := g.lower + id + "Transcript"
	msgs := jen.Index().Add(rt("Message"))
	fn := jen.Func().Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("inv").Op("*").Add(rt("Invocation")), jen.Id("dst").Add(msgs),
	).Params(msgs, jen.Error()).Block(
		jen.List(jen.Id("path"), jen.Err()).Op(":=").Add(pathFunc).Call(jen.Id("inv")),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Id("dst"), jen.Qual("fmt", "Errorf").Call(jen.Lit("load_transcript: compute path: %w"), jen.Err())),
		),
		jen.If(jen.Op("!").Qual("path/filepath", "IsLocal").Call(jen.Id("path"))).Block(
			jen.Return(jen.Id("dst"), jen.Qual("fmt", "Errorf").Call(
				jen.Lit("load_transcript: %w: computed path %q must be relative and stay inside the root"),
				rt("ErrPathEscapes"), jen.Id("path"))),
		),
		jen.Return(jen.Parens(jen.Op("&").Qual(TranscriptPath, "Load").Values(
			field("Path", jen.Id("path")), field("Files", jen.Id("files")),
		)).Dot("Resolve").Call(jen.Id("ctx"), jen.Id("inv"), jen.Id("dst"))),
	)
	doc := name + " returns the load_transcript resolver whose path " + g.lower + id + "Path computes for each run."
	g.helpers = append(g.helpers, jen.Comment(doc).Line().
		Func().Id(name).Params(jen.Id("files").Op("*").Add(rt("Files"))).Add(rt("Resolver")).Block(
		jen.Return(rt("ResolverFunc").Call(fn)),
	))
	return jen.Id(name).Call(jen.Id("opts").Dot("Files"))
}
