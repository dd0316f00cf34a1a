package out

// Version is hand-written.
const Version = 1
