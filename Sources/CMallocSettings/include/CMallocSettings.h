// Nothing to call: the target only defines jemalloc's `malloc_conf` (see malloc_conf.c).
