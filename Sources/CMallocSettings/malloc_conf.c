// jemalloc's settings for the `tether` binary, read by jemalloc at start-up (the `malloc_conf`
// global; `MALLOC_CONF` in the environment still overrides it).
//
// - narenas:1 — one arena. Tether's streams allocate on one thread (decoding), keep values on a
//   second (the protocol machine) and free them on a third (writing); with an arena per thread,
//   each kept its own free pages and a stream's resident memory grew by several MB per thread
//   for no gain (thread caches still serve most allocations without the arena's lock).
// - dirty_decay_ms:200, muzzy_decay_ms:0 — give freed pages back within a fifth of a second
//   instead of ten seconds, so a burst's memory does not stay resident after it.
const char *malloc_conf = "narenas:1,dirty_decay_ms:200,muzzy_decay_ms:0";
