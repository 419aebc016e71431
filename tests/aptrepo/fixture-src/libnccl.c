/* FIXTURE: the stand-in libnccl.so.<major>.<minor>.<patch> of dlbox.stack's test repositories. Not NVIDIA's NCCL: it
 * only answers ncclGetVersion() (nccl.h: ncclResult_t ncclGetVersion(int *version); ncclSuccess is 0) with the code of
 * the release it stands in for (NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9). Built by
 * tests/aptrepo/fixture-src/libnccl.sh (gcc), kept as base64 in the specs. */
int ncclGetVersion(int *version) { *version = NCCL_CODE; return 0; }
