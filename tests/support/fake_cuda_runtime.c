/* A stand-in for libmlir_cuda_runtime.so for tests without a GPU: each mgpu* entry point a
   GPU kernel library calls forwards to a hook that the test sets (a ctypes callback), so the
   test records the calls and plays the device (host memory as device memory, no kernels run). */
#include <stddef.h>
#include <stdint.h>

void *(*hook_mgpuModuleLoad)(void *, int64_t);
void *(*hook_mgpuModuleGetFunction)(void *, const char *);
void (*hook_mgpuLaunchKernel)(void *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, void *,
                              void **, void **, int64_t);
void *(*hook_mgpuStreamCreate)(void);
void (*hook_mgpuStreamDestroy)(void *);
void (*hook_mgpuStreamSynchronize)(void *);
void *(*hook_mgpuMemAlloc)(uint64_t, void *, int8_t);
void (*hook_mgpuMemFree)(void *, void *);
void (*hook_mgpuMemcpy)(void *, void *, int64_t, void *);

void *mgpuModuleLoad(void *data, size_t size) { return hook_mgpuModuleLoad(data, (int64_t)size); }
/* runs from the library's destructors at exit, when no Python callback may run */
void mgpuModuleUnload(void *module) { (void)module; }
void *mgpuModuleGetFunction(void *module, const char *name) { return hook_mgpuModuleGetFunction(module, name); }
void mgpuLaunchKernel(void *fn, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                      int32_t smem, void *stream, void **params, void **extra, size_t n_params) {
    hook_mgpuLaunchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra, (int64_t)n_params);
}
void *mgpuStreamCreate(void) { return hook_mgpuStreamCreate(); }
void mgpuStreamDestroy(void *stream) { hook_mgpuStreamDestroy(stream); }
void mgpuStreamSynchronize(void *stream) { hook_mgpuStreamSynchronize(stream); }
void *mgpuMemAlloc(uint64_t size, void *stream, _Bool host_shared) { return hook_mgpuMemAlloc(size, stream, host_shared); }
void mgpuMemFree(void *ptr, void *stream) { hook_mgpuMemFree(ptr, stream); }
void mgpuMemcpy(void *dst, void *src, size_t size, void *stream) { hook_mgpuMemcpy(dst, src, (int64_t)size, stream); }

/* The few CUDA driver calls compiler.gpu makes itself (raise_device_errors): one primary
   context, a synchronize that returns what the test set (0, or e.g. 700 for an illegal address),
   and counters the test reads to see every push is popped and every call synchronizes once. */
int fake_cuda_status = 0;
int64_t fake_cuda_synchronizes = 0;
int64_t fake_cuda_context_depth = 0;
static char fake_context;

int cuDeviceGet(int *device, int ordinal) { *device = ordinal; return 0; }
int cuDevicePrimaryCtxRetain(void **context, int device) { (void)device; *context = &fake_context; return 0; }
int cuCtxPushCurrent_v2(void *context) {
  if (context != &fake_context) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  fake_cuda_context_depth++;
  return 0;
}
int cuCtxPopCurrent_v2(void **context) {
  if (fake_cuda_context_depth == 0) return 201;
  fake_cuda_context_depth--;
  if (context) *context = &fake_context;
  return 0;
}
int cuCtxSynchronize(void) {
  if (fake_cuda_context_depth == 0) return 201; /* synchronizing needs a current context */
  fake_cuda_synchronizes++;
  return fake_cuda_status;
}
int cuGetErrorName(int status, const char **name) {
  *name = status == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
