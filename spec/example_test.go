package spec_test

import (
	"fmt"

	"github.com/personagen/personagen/spec"
)

// A spec loaded and checked: a valid one gives its typed, positioned Persona, a broken one
// every problem at its line and column.
func ExampleLoad() {
	p, diags := spec.Load("shop-assistant.persona.yaml", []byte(`version: 1
name: shop-assistant
description: answer questions about orders
message_resolvers:
  - load_text: {text: "You are {{ .Persona.Name }}."}
  - thread_history: {limit: 20}
responsibilities:
  - {name: daily-digest, schedule: "0 8 * * *", timezone: Europe/Berlin}
`))
	fmt.Println(p.Name.Value, spec.GoName(p.Name.Value), len(p.MessageResolvers), len(diags))

	_, diags = spec.Load("broken.persona.yaml", []byte(`version: 1
name: Shop Assistant
message_resolvers:
  - thread_histroy: {}
responsibilities:
  - {name: digest, schedule: "0 8 * * *", timezone: europe/berlin}
`))
	for _, d := range diags {
		fmt.Println(d)
	}
	// Output:
	// shop-assistant ShopAssistant 2 0
	// broken.persona.yaml:2:7: name: must be kebab-case: lower-case letters and digits joined by single hyphens, starting with a letter (support-agent) (got "Shop Assistant")
	// broken.persona.yaml:4:5: message_resolvers[0]: unknown key "thread_histroy"; did you mean "thread_history"?
	// broken.persona.yaml:6:53: unknown timezone "europe/berlin"; did you mean "Europe/Berlin"?
}
