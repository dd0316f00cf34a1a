package out

//go:generate personagen generate -pkg out ..
