package out

// Personas is a hand-written list.
var Personas = []string{"support"}
