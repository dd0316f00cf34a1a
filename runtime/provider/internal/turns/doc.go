// Package turns is the provider-neutral half of every adapter's conversion: it checks a
// request's messages, drops what no model API accepts (blank text, empty turns), merges
// consecutive turns of one role, gathers a round's tool results into one turn, and makes the
// first non-system turn a user turn. Each adapter then maps the turns to its wire format.
package turns
