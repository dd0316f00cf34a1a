package out

var host, hostpkg = 1, 2

func strings() {}

type runtime struct{}

const errors, fmt = 0, 1

var _ = runtime{}
