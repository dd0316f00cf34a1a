package out

// Hand-written: personagen must never replace this file.
//go:generate personagen generate -pkg out ..
