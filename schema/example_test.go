package schema_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/personagen/personagen/schema"
)

// A spec's JSON value checked against the embedded schema: an unknown key is reported at the
// key with the closest known one, a wrong type at the value.
func ExampleValidator_Validate() {
	v, err := schema.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	d := json.NewDecoder(strings.NewReader(`{"version": 1, "name": "shop-assistant", "descripton": "answers orders",
		"message_resolvers": [{"thread_history": {"limit": "fifty"}}]}`))
	d.UseNumber() // numbers as written, as Validate takes them
	var spec any
	if err := d.Decode(&spec); err != nil {
		fmt.Println(err)
		return
	}
	for _, viol := range v.Validate(spec) {
		fmt.Printf("%s: %s\n", strings.Join(viol.Path, "."), viol.Message)
	}
	// Output:
	// descripton: unknown key "descripton"; did you mean "description"?
	// message_resolvers.0.thread_history.limit: expected an integer or null, got a string
}
