// libFuzzer's entry for programs that keep their own main (libclang_rt.fuzzer, linked by
// `-sanitize=fuzzer`). SwiftPM renames an executable's main to `<Target>_main` and points the
// linker's `main` at it, which takes the place of libFuzzer's own main: so each fuzz target's
// top-level code hands its `LLVMFuzzerTestOneInput` to this driver.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
