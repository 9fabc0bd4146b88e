// A malloc shim for scripts/check/heap-census.sh (LD_PRELOAD): counts the live allocations of the process by their
// usable size (malloc_usable_size, in 16-byte classes), and writes the counts every LIVE_SIZES_PERIOD seconds (default
// 60) to LIVE_SIZES_DIR/live-SECOND.txt, one "usable-size count" line per class, sizes of 128 KiB and more together as
// "big BYTES".
//
// Counted as the program calls malloc, free, calloc, realloc and the aligned forms, before glibc's per-thread cache
// sees a freed chunk: the counts are the live heap, whatever the cache keeps. Two dumps a while apart say which size
// of object grows; the size names the type (a block segment is 12,288 bytes, say). Costs an atomic add per call.
//
// Its constructor removes LD_PRELOAD and LIVE_SIZES_DIR from the environment, so the children the program spawns
// run without it.
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

enum { classes = 8192 };  // 16-byte classes below 128 KiB; the last slot counts the bigger ones.
static _Atomic long counts[classes + 1];
static _Atomic long bigBytes;
static char directory[512];
static int period = 60;

static inline void count(void *pointer, long delta) {
    if (pointer == NULL) return;
    size_t usable = malloc_usable_size(pointer);
    size_t index = usable / 16;
    if (index >= classes) {
        index = classes;
        atomic_fetch_add_explicit(&bigBytes, delta * (long)usable, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&counts[index], delta, memory_order_relaxed);
}

void *malloc(size_t size) {
    void *pointer = __libc_malloc(size);
    count(pointer, 1);
    return pointer;
}

void free(void *pointer) {
    count(pointer, -1);
    __libc_free(pointer);
}

void *calloc(size_t count_, size_t size) {
    void *pointer = __libc_calloc(count_, size);
    count(pointer, 1);
    return pointer;
}

void *realloc(void *old, size_t size) {
    count(old, -1);
    void *pointer = __libc_realloc(old, size);
    if (pointer != NULL) {
        count(pointer, 1);
    } else if (old != NULL && size != 0) {
        count(old, 1);  // Failed: the old block stays.
    }
    return pointer;
}

void *memalign(size_t alignment, size_t size) {
    void *pointer = __libc_memalign(alignment, size);
    count(pointer, 1);
    return pointer;
}

void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

void *valloc(size_t size) { return memalign(4096, size); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    void *pointer = memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

static void *writer(void *unused) {
    (void)unused;
    for (int second = period;; second += period) {
        struct timespec left = {period, 0};
        while (nanosleep(&left, &left) != 0) {}
        char path[600];
        snprintf(path, sizeof path, "%s/live-%d.txt", directory, second);
        FILE *file = fopen(path, "w");
        if (file == NULL) continue;
        for (int index = 0; index <= classes; index++) {
            long live = atomic_load_explicit(&counts[index], memory_order_relaxed);
            if (live != 0 && index < classes) fprintf(file, "%d %ld\n", index * 16, live);
        }
        fprintf(file, "big %ld\n", atomic_load_explicit(&bigBytes, memory_order_relaxed));
        fclose(file);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    const char *given = getenv("LIVE_SIZES_DIR");
    if (given == NULL) return;
    strncpy(directory, given, sizeof directory - 1);
    const char *every = getenv("LIVE_SIZES_PERIOD");
    if (every != NULL && atoi(every) > 0) period = atoi(every);
    unsetenv("LD_PRELOAD");
    unsetenv("LIVE_SIZES_DIR");
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    pthread_create(&thread, &attributes, writer, NULL);
    pthread_attr_destroy(&attributes);
}
