// A malloc shim for scripts/check/heap-census.sh (LD_PRELOAD): counts the live allocations of the process by their
// usable size (malloc_usable_size, in 16-byte classes), and writes the counts every LIVE_SIZES_PERIOD seconds (default
// 60) to LIVE_SIZES_DIR/live-SECOND.txt, one "usable-size count" line per class, sizes of 128 KiB and more together as
// "big BYTES".
//
// Counted as the program calls malloc, free, calloc, realloc and the aligned forms, before glibc's per-thread cache
// sees a freed chunk: the counts are the live heap, whatever the cache keeps. Two dumps a while apart say which size
// of object grows; the size names the type (a block segment is 12,288 bytes, say). Costs an atomic add per call.
//
// LIVE_SIZES_TRACE=CLASS (a usable-size class as the counts name it, 768 say) also records which thread allocated each
// live object of that class, by the thread's name, and writes the live ones per name beside the counts
// (trace-SECOND.txt, "count name" lines): whose objects they are, for a class that grows. Up to 65,536 traced objects
// live at once, in a fixed table (no allocation inside malloc); further ones are counted as "(table full)".
//
// Its constructor removes LD_PRELOAD, LIVE_SIZES_DIR and LIVE_SIZES_TRACE from the environment, so the children the
// program spawns run without it.
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

// The traced class (-1: none) and its live objects: open addressing on the pointer, a name per slot.
enum { traceSlots = 1 << 16, nameLength = 16 };
static long tracedClass = -1;
static _Atomic(void *) tracedPointers[traceSlots];
static char tracedNames[traceSlots][nameLength];
static _Atomic long traceOverflow;

static inline size_t traceSlot(void *pointer) { return ((size_t)pointer >> 4) * 0x9E3779B97F4A7C15ull >> 48; }

static void traceAllocation(void *pointer) {
    size_t slot = traceSlot(pointer);
    for (int probe = 0; probe < traceSlots; probe++, slot = (slot + 1) & (traceSlots - 1)) {
        void *expected = NULL;
        if (atomic_compare_exchange_strong(&tracedPointers[slot], &expected, pointer)) {
            if (pthread_getname_np(pthread_self(), tracedNames[slot], nameLength) != 0) {
                strcpy(tracedNames[slot], "?");
            }
            return;
        }
    }
    atomic_fetch_add(&traceOverflow, 1);
}

static void traceFree(void *pointer) {
    size_t slot = traceSlot(pointer);
    for (int probe = 0; probe < traceSlots; probe++, slot = (slot + 1) & (traceSlots - 1)) {
        void *found = atomic_load(&tracedPointers[slot]);
        if (found == pointer) {
            atomic_store(&tracedPointers[slot], NULL);
            return;
        }
        if (found == NULL) return;  // Allocated before tracing began, or counted as overflow.
    }
}

static inline void count(void *pointer, long delta) {
    if (pointer == NULL) return;
    size_t usable = malloc_usable_size(pointer);
    size_t index = usable / 16;
    if (index >= classes) {
        index = classes;
        atomic_fetch_add_explicit(&bigBytes, delta * (long)usable, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&counts[index], delta, memory_order_relaxed);
    if ((long)index * 16 == tracedClass) {
        if (delta > 0) traceAllocation(pointer); else traceFree(pointer);
    }
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

// Writes the traced class's live objects per allocating thread's name to DIRECTORY/trace-SECOND.txt, sorted by
// nothing (sort -rn it). A removal racing the scan may be missed or counted once more: a dump is a snapshot.
static void writeTrace(int second) {
    static char names[1024][nameLength];
    static long counted[1024];
    int known = 0;
    for (int slot = 0; slot < traceSlots; slot++) {
        if (atomic_load(&tracedPointers[slot]) == NULL) continue;
        int index = 0;
        while (index < known && strncmp(names[index], tracedNames[slot], nameLength) != 0) index++;
        if (index == known) {
            if (known == 1024) continue;
            memcpy(names[known], tracedNames[slot], nameLength);
            counted[known++] = 0;
        }
        counted[index]++;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/trace-%d.txt", directory, second);
    FILE *file = fopen(path, "w");
    if (file == NULL) return;
    for (int index = 0; index < known; index++) fprintf(file, "%ld %.*s\n", counted[index], nameLength, names[index]);
    fprintf(file, "%ld (table full)\n", atomic_load(&traceOverflow));
    fclose(file);
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
        if (tracedClass >= 0) writeTrace(second);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    const char *given = getenv("LIVE_SIZES_DIR");
    if (given == NULL) return;
    strncpy(directory, given, sizeof directory - 1);
    const char *every = getenv("LIVE_SIZES_PERIOD");
    if (every != NULL && atoi(every) > 0) period = atoi(every);
    const char *traced = getenv("LIVE_SIZES_TRACE");
    if (traced != NULL) tracedClass = atol(traced);
    unsetenv("LD_PRELOAD");
    unsetenv("LIVE_SIZES_DIR");
    unsetenv("LIVE_SIZES_TRACE");
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    pthread_create(&thread, &attributes, writer, NULL);
    pthread_attr_destroy(&attributes);
}
