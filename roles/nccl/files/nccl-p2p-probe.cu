// dlbox.stack nccl role: GPU peer-to-peer probe (CUDA runtime only, no NCCL).
// For every GPU pair it asks the driver whether peer access is possible, then enables it, copies
// 64 MiB each way with cudaMemcpyPeer and compares the bytes. One line a pair, printed as soon as it is
// known (so a caller's timeout still leaves the pairs that finished):
//   testing A B
//   pair A B access=1 copy=ok gbps=21.4        (or copy=mismatch, copy=error:<cuda error name>)
//   pair A B access=0                           (the driver offers no P2P between them)
// A hang shows as a "testing" line without its "pair" line. Exit code 0 whatever the pairs showed.
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

static const size_t kBytes = 64u << 20;

static bool copy_check(int src, int dst, double *gbps, const char **err) {
  void *a = nullptr, *b = nullptr;
  std::vector<unsigned char> host(kBytes), back(kBytes);
  for (size_t i = 0; i < kBytes; ++i) host[i] = (unsigned char)((i * 131u + src * 7u + dst) & 0xff);
  cudaError_t rc;
  *err = nullptr;
  if ((rc = cudaSetDevice(src)) != cudaSuccess || (rc = cudaMalloc(&a, kBytes)) != cudaSuccess) { *err = cudaGetErrorName(rc); return false; }
  if ((rc = cudaMemcpy(a, host.data(), kBytes, cudaMemcpyHostToDevice)) != cudaSuccess) { *err = cudaGetErrorName(rc); return false; }
  if ((rc = cudaSetDevice(dst)) != cudaSuccess || (rc = cudaMalloc(&b, kBytes)) != cudaSuccess) { *err = cudaGetErrorName(rc); return false; }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  rc = cudaMemcpyPeer(b, dst, a, src, kBytes);
  cudaEventRecord(stop);
  if (rc == cudaSuccess) rc = cudaEventSynchronize(stop);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, start, stop);
  if (rc == cudaSuccess) rc = cudaMemcpy(back.data(), b, kBytes, cudaMemcpyDeviceToHost);
  cudaFree(b);
  cudaSetDevice(src);
  cudaFree(a);
  if (rc != cudaSuccess) { *err = cudaGetErrorName(rc); return false; }
  *gbps = ms > 0.f ? (double)kBytes / (ms * 1e6) : 0.0;
  return std::memcmp(host.data(), back.data(), kBytes) == 0;
}

int main() {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    printf("devices 0 error=%s\n", cudaGetErrorName(rc));
    return 0;
  }
  printf("devices %d\n", n);
  fflush(stdout);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      printf("testing %d %d\n", i, j);
      fflush(stdout);
      int ij = 0, ji = 0;
      cudaDeviceCanAccessPeer(&ij, i, j);
      cudaDeviceCanAccessPeer(&ji, j, i);
      if (!ij || !ji) {
        printf("pair %d %d access=0\n", i, j);
        fflush(stdout);
        continue;
      }
      cudaSetDevice(i);
      cudaDeviceEnablePeerAccess(j, 0);
      cudaSetDevice(j);
      cudaDeviceEnablePeerAccess(i, 0);
      cudaGetLastError();
      double g1 = 0, g2 = 0;
      const char *e1 = nullptr, *e2 = nullptr;
      bool ok1 = copy_check(i, j, &g1, &e1);
      bool ok2 = copy_check(j, i, &g2, &e2);
      const char *err = e1 ? e1 : e2;
      if (err)
        printf("pair %d %d access=1 copy=error:%s\n", i, j, err);
      else
        printf("pair %d %d access=1 copy=%s gbps=%.1f\n", i, j, (ok1 && ok2) ? "ok" : "mismatch", (g1 + g2) / 2);
      fflush(stdout);
    }
  }
  return 0;
}
