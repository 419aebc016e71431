// dlbox.stack.cuda verification program (roles/cuda/files/cuda-verify.cu).
// Compiled by the role for the GPU's compute capability; where a GPU answers it runs: a SAXPY over 64 MiB
// per vector, checked element by element, timed with CUDA events. Prints key=value figures.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                       \
      printf("error=%s at=%s\n", cudaGetErrorString(err_), #call);                   \
      return 2;                                                                      \
    }                                                                                \
  } while (0)

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  int runtime = 0, driver = 0, count = 0;
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaDriverGetVersion(&driver));
  printf("cuda_runtime=%d.%d cuda_driver=%d.%d\n", runtime / 1000, (runtime % 1000) / 10, driver / 1000, (driver % 1000) / 10);
  CHECK(cudaGetDeviceCount(&count));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("devices=%d device0=\"%s\" cc=%d.%d\n", count, prop.name, prop.major, prop.minor);

  const int n = 1 << 24;
  const size_t bytes = n * sizeof(float);
  float *x = (float *)malloc(bytes), *y = (float *)malloc(bytes);
  for (int i = 0; i < n; i++) { x[i] = (float)(i % 1024); y[i] = 1.0f; }
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, bytes));
  CHECK(cudaMalloc(&dy, bytes));
  CHECK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice));
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, dx, dy);  // warm-up; also the launch check for this GPU's code
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int reps = 20;
  CHECK(cudaEventRecord(start));
  for (int r = 0; r < reps; r++) saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, dx, dy);
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  CHECK(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost));
  long bad = 0;
  for (int i = 0; i < n; i++) {
    float want = 1.0f + (reps + 1) * 2.0f * (float)(i % 1024);
    if (y[i] != want) bad++;
  }
  printf("saxpy_n=%d reps=%d kernel_ms=%.3f bandwidth_gb_s=%.1f wrong=%ld\n", n, reps, ms / reps,
         3.0 * bytes * reps / (ms / 1000.0) / 1e9, bad);
  cudaFree(dx);
  cudaFree(dy);
  free(x);
  free(y);
  return bad == 0 ? 0 : 1;
}
