package out

// NewSupport is hand-written.
func NewSupport() {}

// supportMessage1Text is hand-written too.
var supportMessage1Text = 1
