// The Linux headers Swift's Glibc module leaves out, libdispatch's main-queue hooks (DispatchMainQueueHooks.h), the
// current loop's thread-local slot (CurrentLoop.h), and the fault-injection countdown for C code that cannot reach
// Swift (FaultCountdown.h). Nothing else but tiny wrappers of what Swift cannot call directly (the variadic syscall(2) for gettid, pidfd_open
// and kcmp, dup3, waitid(2) with an idtype_t constant older glibc headers lack, and the GNU thread affinity,
// stack and CPU calls).
#ifndef C_RUNLOOP_SHIMS_H
#define C_RUNLOOP_SHIMS_H

#include <linux/kcmp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "CurrentLoop.h"
#include "DispatchMainQueueHooks.h"
#include "FaultCountdown.h"

/// The calling thread's kernel thread id (gettid(2)), which Swift cannot reach through the variadic syscall(2).
static inline pid_t crunloop_gettid(void) { return (pid_t)syscall(SYS_gettid); }

/// Names the calling thread (prctl(2) PR_SET_NAME, what pthread_setname_np does for the calling thread; prctl is
/// variadic, so Swift cannot call it): 0, or -1 with errno. `name` is cut to 15 bytes by the kernel.
static inline int crunloop_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

/// pidfd_open(2)'s number, for headers older than Linux 5.3's (the same number on every architecture but alpha).
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/// waitid(2)'s P_PIDFD id type (Linux 5.4); glibc declares it in idtype_t only from 2.36 on.
#define CRUNLOOP_P_PIDFD 3

/// A close-on-exec descriptor referring to process `pid` (pidfd_open(2), Linux 5.3+; glibc wraps it only from 2.36
/// on); -1 with errno on failure (ENOSYS on older kernels).
static inline int crunloop_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

/// waitid(2) on the child that `pidfd` refers to (P_PIDFD, Linux 5.4+); 0, or -1 with errno.
static inline int crunloop_waitid_pidfd(int pidfd, siginfo_t *info, int options) {
    return waitid((idtype_t)CRUNLOOP_P_PIDFD, (id_t)pidfd, info, options);
}

/// Makes `target` name the open file `descriptor` names, close-on-exec, closing what `target` named in the same step
/// (dup3(2) with O_CLOEXEC, which glibc declares only under _GNU_SOURCE): `target`, or -1 with errno. Defined in
/// shims.c.
int crunloop_dup3_cloexec(int descriptor, int target);

/// Compares the open files behind descriptors `first` and `second` of the calling process (kcmp(2) with KCMP_FILE,
/// which glibc does not wrap): 0 the same open file, 1 or 2 different ones (the kernel's order of the two), -1 with
/// errno (EBADF: one is not open; ENOSYS or EPERM: kcmp is not built or not allowed).
static inline int crunloop_kcmp_files(int first, int second) {
    pid_t pid = getpid();
    return (int)syscall(SYS_kcmp, pid, pid, KCMP_FILE, first, second);
}

/// Compares the open file behind `descriptor` with the file of entry `index` (0 first) among those epoll set `epoll`
/// watches under descriptor number `target` (kcmp(2) with KCMP_EPOLL_TFD): 0 the same, 1 or 2 different, -1 with
/// errno (ENOENT: the set has no such entry; EBADF: `descriptor` or `epoll` is not open; ENOSYS or EPERM as above).
static inline int crunloop_kcmp_epoll_target(int descriptor, int epoll, int target, unsigned int index) {
    pid_t pid = getpid();
    struct kcmp_epoll_slot slot = {.efd = (__u32)epoll, .tfd = (__u32)target, .toff = index};
    return (int)syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, descriptor, (unsigned long)&slot);
}

/// The control buffer size sendmsg(2) needs to pass `count` descriptors (CMSG_SPACE, a macro Swift cannot call).
static inline size_t crunloop_rights_space(int count) { return CMSG_SPACE(sizeof(int) * (size_t)count); }

/// Fills `message`'s control buffer (`msg_control`, at least crunloop_rights_space(count) bytes) with one
/// SCM_RIGHTS header carrying `descriptors`, and sets `msg_controllen` (CMSG_FIRSTHDR, CMSG_LEN and CMSG_DATA are
/// macros Swift cannot call).
static inline void crunloop_fill_rights(struct msghdr *message, const int *descriptors, int count) {
    message->msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
    struct cmsghdr *header = CMSG_FIRSTHDR(message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
    memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
}

/// SCHED_BATCH and SCHED_IDLE (sched(7)), which <sched.h> defines only under _GNU_SOURCE.
#define CRUNLOOP_SCHED_BATCH 3
#define CRUNLOOP_SCHED_IDLE 5

/// Sets the CPUs a thread made with `attributes` may run on (pthread_attr_setaffinity_np(3), declared only under
/// _GNU_SOURCE): `mask` is `size` bytes, bit n of byte n / 8 standing for CPU n. 0, or an errno value. Defined in
/// shims.c.
int crunloop_attr_set_affinity(pthread_attr_t *attributes, size_t size, const void *mask);

/// The calling thread's stack size in bytes, guard page excluded (pthread_getattr_np(3), declared only under
/// _GNU_SOURCE, then pthread_attr_getstacksize(3)): 0, or an errno value. Defined in shims.c.
int crunloop_current_stack_size(size_t *size);

/// The CPU the calling thread runs on (sched_getcpu(3), declared only under _GNU_SOURCE): the CPU, or -1 with
/// errno. Defined in shims.c.
int crunloop_current_cpu(void);

/// The CPUs the calling thread may run on (sched_getaffinity(2) of thread 0, declared only under _GNU_SOURCE), into
/// `mask` (`size` bytes, as for crunloop_attr_set_affinity): 0, or -1 with errno. Defined in shims.c.
int crunloop_current_affinity(size_t size, void *mask);

#endif
