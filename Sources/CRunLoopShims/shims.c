// The storage of CurrentLoop.h's thread-local slot, and dup3(2), which glibc declares only under _GNU_SOURCE;
// everything else in the target lives in its headers.
//
// `nodebug`: without a debug entry for it, the object has no DWARF 5 string forms, which valgrind 3.19 (Debian 12)
// cannot read; CI's allocation check runs loop-bench under it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "CRunLoopShims.h"

__attribute__((nodebug)) __thread void *crunloop_current_loop_slot = 0;

__attribute__((nodebug)) int crunloop_dup3_cloexec(int descriptor, int target) {
    return dup3(descriptor, target, O_CLOEXEC);
}
