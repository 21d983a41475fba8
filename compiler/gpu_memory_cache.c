/* Parity's device-memory cache for MLIR's CUDA runtime wrappers. Generated host code gives every
 * intermediate an mgpuMemAlloc (cuMemAlloc) and an mgpuMemFree (cuMemFree, which waits for the
 * device) on every call; loaded RTLD_GLOBAL ahead of libmlir_cuda_runtime, this library's
 * definitions shadow those and keep freed blocks for requests of the same size. A block freed on
 * stream S is reused at once on S (its queue orders the new user after the old ones) and on other
 * streams only after mgpuStreamSynchronize(S), which every generated function calls before it
 * returns. Misses, foreign pointers and stream calls go on to the runtime named by
 * parity_gpu_memory_cache_attach. Built and loaded by compiler/gpu.py;
 * PARITY_GPU_MEMORY_CACHE=0 leaves it out. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SETTLED ((void *)0) /* no queued kernel can still touch the block */

typedef struct Block {
  void *ptr;
  uint64_t size;
  void *stream; /* cached blocks: SETTLED or the stream it was freed on */
  struct Block *next;
} Block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Block *in_use;        /* handed out by mgpuMemAlloc */
static Block *cached;        /* freed, kept for reuse; newest first */
static uint64_t cached_bytes, hits, misses;
static uint64_t limit_bytes = UINT64_MAX;

typedef void *(*alloc_fn)(uint64_t, void *, bool);
typedef void (*free_fn)(void *, void *);
typedef void (*stream_fn)(void *);

/* The runtime's own definitions. dlsym(RTLD_NEXT) cannot reach them from a dlopen'ed library (it
 * searches only the library's own dependencies), so Python names the runtime: attach below. */
static alloc_fn next_alloc;
static free_fn next_free;
static stream_fn next_synchronize, next_destroy;

static void *next_symbol(void *runtime, const char *name) {
  void *fn = dlsym(runtime, name);
  if (!fn) {
    fprintf(stderr, "parity_gpu_memory_cache: %s is not in the CUDA runtime wrappers\n", name);
    abort();
  }
  return fn;
}

/* Forwards to the library at `path` (libmlir_cuda_runtime, or a test's stand-in); 0 on success. */
int parity_gpu_memory_cache_attach(const char *path) {
  void *runtime = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!runtime) runtime = dlopen(path, RTLD_NOW);
  if (!runtime) return -1;
  next_alloc = (alloc_fn)next_symbol(runtime, "mgpuMemAlloc");
  next_free = (free_fn)next_symbol(runtime, "mgpuMemFree");
  next_synchronize = (stream_fn)next_symbol(runtime, "mgpuStreamSynchronize");
  next_destroy = (stream_fn)next_symbol(runtime, "mgpuStreamDestroy");
  return 0;
}

static void require_attached(void) {
  if (!next_alloc) {
    fprintf(stderr, "parity_gpu_memory_cache: used before parity_gpu_memory_cache_attach\n");
    abort();
  }
}

static void release(Block *b) {
  next_free(b->ptr, NULL);
  free(b);
}

/* Gives cached blocks back to the runtime, oldest first, until at most `keep` bytes stay cached.
 * Any block may go, even one a queued kernel still reads: cuMemFree waits for the device. */
static void trim_locked(uint64_t keep) {
  while (cached_bytes > keep) {
    Block **oldest = &cached;
    while ((*oldest)->next) oldest = &(*oldest)->next;
    Block *b = *oldest;
    *oldest = NULL;
    cached_bytes -= b->size;
    release(b);
  }
}

void *mgpuMemAlloc(uint64_t size, void *stream, bool host_shared) {
  require_attached();
  if (size == 0 || host_shared) return next_alloc(size, stream, host_shared);
  pthread_mutex_lock(&lock);
  Block **link = &cached, *b = NULL;
  for (; *link; link = &(*link)->next)
    if ((*link)->size == size && ((*link)->stream == SETTLED || (*link)->stream == stream)) break;
  if (*link) {
    b = *link;
    *link = b->next;
    cached_bytes -= size;
  }
  pthread_mutex_unlock(&lock);
  bool hit = b != NULL;
  if (!hit) {
    void *ptr = next_alloc(size, stream, false);
    if (!ptr) { /* out of memory: every cached block back (cuMemFree waits for its kernels), once more */
      pthread_mutex_lock(&lock);
      trim_locked(0);
      pthread_mutex_unlock(&lock);
      ptr = next_alloc(size, stream, false);
      if (!ptr) return NULL;
    }
    b = malloc(sizeof *b);
    if (!b) abort();
    b->ptr = ptr;
    b->size = size;
  }
  pthread_mutex_lock(&lock);
  if (hit) hits++; else misses++;
  b->stream = SETTLED;
  b->next = in_use;
  in_use = b;
  pthread_mutex_unlock(&lock);
  return b->ptr;
}

void mgpuMemFree(void *ptr, void *stream) {
  pthread_mutex_lock(&lock);
  Block **link = &in_use;
  while (*link && (*link)->ptr != ptr) link = &(*link)->next;
  Block *b = *link;
  if (b) {
    *link = b->next;
    /* no stream: a DeviceArray freed from Python. Every call that used it synchronized its
       (non-blocking) stream before returning, so no work is queued behind the block. */
    b->stream = stream ? stream : SETTLED;
    b->next = cached;
    cached = b;
    cached_bytes += b->size;
    if (cached_bytes > limit_bytes) trim_locked(limit_bytes);
  }
  pthread_mutex_unlock(&lock);
  if (!b) {
    require_attached();
    next_free(ptr, stream); /* not ours (a DeviceArray, host-shared) */
  }
}

void mgpuStreamSynchronize(void *stream) {
  require_attached();
  next_synchronize(stream);
  pthread_mutex_lock(&lock);
  for (Block *b = cached; b; b = b->next)
    if (b->stream == stream) b->stream = SETTLED;
  pthread_mutex_unlock(&lock);
}

void mgpuStreamDestroy(void *stream) {
  require_attached();
  /* Blocks of a stream destroyed unsynchronized go back to the runtime (cuMemFree waits for their
   * kernels) before the handle can name a new stream. Generated code always synchronizes first. */
  pthread_mutex_lock(&lock);
  for (Block **link = &cached; *link;) {
    Block *b = *link;
    if (b->stream == stream) {
      *link = b->next;
      cached_bytes -= b->size;
      release(b);
    } else {
      link = &b->next;
    }
  }
  pthread_mutex_unlock(&lock);
  next_destroy(stream);
}

/* For Python: counters (hits, misses, cached blocks, cached bytes, blocks in use), trimming, a limit. */
void parity_gpu_memory_cache_stats(uint64_t out[5]) {
  pthread_mutex_lock(&lock);
  uint64_t n_cached = 0, n_used = 0;
  for (Block *b = cached; b; b = b->next) n_cached++;
  for (Block *b = in_use; b; b = b->next) n_used++;
  out[0] = hits, out[1] = misses, out[2] = n_cached, out[3] = cached_bytes, out[4] = n_used;
  pthread_mutex_unlock(&lock);
}

void parity_gpu_memory_cache_trim(void) {
  pthread_mutex_lock(&lock);
  trim_locked(0);
  pthread_mutex_unlock(&lock);
}

void parity_gpu_memory_cache_set_limit(uint64_t bytes) {
  pthread_mutex_lock(&lock);
  limit_bytes = bytes;
  if (cached_bytes > limit_bytes) trim_locked(limit_bytes);
  pthread_mutex_unlock(&lock);
}
