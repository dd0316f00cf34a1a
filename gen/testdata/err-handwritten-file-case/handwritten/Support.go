package out

// Hand-written.
const Support = 1
