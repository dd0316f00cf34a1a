package gen_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/personagen/personagen/gen"
	"github.com/personagen/personagen/spec"
)

// A spec generated into Go source, in memory: Generate checks it against the packages it names
// (here only the runtime's) and returns one file per spec; Write would put them into OutDir.
func ExampleGenerate() {
	p, diags := spec.Load("shop-assistant.persona.yaml", []byte(`version: 1
name: shop-assistant
description: answer questions about orders
message_resolvers:
  - load_text: {text: "You are {{ .Persona.Name }}; you {{ .Persona.Description }}."}
`))
	if len(diags) > 0 {
		fmt.Println(diags)
		return
	}
	files, _, err := gen.Generate(context.Background(), []*spec.Persona{p}, gen.Options{
		Package:          "personas",
		OutDir:           "testdata/example/personas", // need not exist; its module resolves the imports
		NoLineDirectives: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range files {
		fmt.Println(f.Name, "from", f.Source)
	}
	src := string(files[0].Content)
	i := strings.Index(src, "func NewShopAssistant")
	fmt.Print(src[i : strings.Index(src[i:], "\n}\n")+i+3])
	// Output:
	// shop_assistant.go from shop-assistant.persona.yaml
	// personas.go from *
	// func NewShopAssistant(opts runtime.Options) (*runtime.Persona, error) {
	// 	p := &runtime.Persona{
	// 		Name:        "shop-assistant",
	// 		Description: "answer questions about orders",
	// 	}
	// 	p.MessageChain = runtime.NewChain(
	// 		runtime.Step{
	// 			Kind:     "load_text",
	// 			Pos:      "shop-assistant.persona.yaml:5:5",
	// 			Resolver: &runtime.LoadText{TextFunc: shopAssistantMessage1Text},
	// 			Changes:  runtime.PerPersona,
	// 		},
	// 	)
	// 	return p, nil
	// }
}
