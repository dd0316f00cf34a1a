package demo

// Hand-written code next to generated files is never touched.
const X = 1
