#ifndef EDGEALLOC_BASE_THREAD_ANNOTATIONS_H_
#define EDGEALLOC_BASE_THREAD_ANNOTATIONS_H_

// Clang's thread-safety analysis (-Wthread-safety), as LevelDB and Abseil use
// it: a field says which mutex guards it, a function which mutex it needs
// held or takes. Under clang the compiler checks every access; elsewhere the
// macros vanish and remain documentation. base/mutex.h has the annotated
// Mutex these name.

#if defined(__clang__)
#define EDGEALLOC_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define EDGEALLOC_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) EDGEALLOC_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY EDGEALLOC_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) EDGEALLOC_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) EDGEALLOC_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) EDGEALLOC_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define REQUIRES(...) EDGEALLOC_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) EDGEALLOC_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) EDGEALLOC_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) EDGEALLOC_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) EDGEALLOC_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) EDGEALLOC_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) EDGEALLOC_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define EXCLUDES(...) EDGEALLOC_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) EDGEALLOC_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS EDGEALLOC_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // EDGEALLOC_BASE_THREAD_ANNOTATIONS_H_
