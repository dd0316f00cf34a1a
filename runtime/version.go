package runtime

// RuntimeVersion1 exists while this runtime is compatible with code generated for runtime API
// version 1. Generated files assert it at compile time (const _ = runtime.RuntimeVersion1), so
// generated code and an incompatible runtime fail to compile together instead of misbehaving;
// a runtime that speaks version 2 drops it and adds RuntimeVersion2.
const RuntimeVersion1 = true
