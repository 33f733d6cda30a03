/*
 * The pattern of bench/mpi-exchange-tails.js in C over MPI (Open MPI beside fastsock in the same
 * run): 2 ranks; per iteration each rank reads every other element of a 2^21-double array, then
 * MPI_Sendrecv of 7,000 doubles (56,000 B) with its partner, one with itself, and two of one
 * double with its partner. 50 untimed iterations, then `iters`. Rank 0 prints one JSON line:
 * the exchange's and the sums' 50th, 90th, 99th percentiles and maximum (µs), and the count and
 * total (µs) of the sums over 1 ms.
 *
 *   mpirun -np 2 exchange_tails [iters]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p) { return sorted[(int)(p * (n - 1))]; }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "exchange_tails: 2 ranks, not %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int iters = argc > 1 ? atoi(argv[1]) : 1000;
  if (iters < 1) iters = 1000;
  const int peer = 1 - rank, n = 1 << 21, len = 7000;
  double *big = malloc(n * sizeof *big), *w = calloc(len, 8), *q = calloc(len, 8), *q2 = calloc(len, 8);
  double *exch = malloc(iters * sizeof *exch), *sums = malloc(2 * iters * sizeof *sums);
  if (!big || !w || !q || !q2 || !exch || !sums) MPI_Abort(MPI_COMM_WORLD, 3);
  for (int i = 0; i < n; i++) big[i] = i;
  volatile double sink = 0;
  for (int it = -50; it < iters; it++) {
    if (it == 0) MPI_Barrier(MPI_COMM_WORLD);
    double x = 0;
    for (int i = 0; i < n; i += 2) x += big[i];
    sink += x;
    double t0 = now_us();
    MPI_Sendrecv(w, len, MPI_DOUBLE, peer, 1, q, len, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (it >= 0) exch[it] = now_us() - t0;
    MPI_Sendrecv(w, len, MPI_DOUBLE, rank, 1, q2, len, MPI_DOUBLE, rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int k = 0; k < 2; k++) {
      double s = x, r;
      t0 = now_us();
      MPI_Sendrecv(&s, 1, MPI_DOUBLE, peer, 2 + k, &r, 1, MPI_DOUBLE, peer, 2 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (it >= 0) sums[2 * it + k] = now_us() - t0;
    }
  }
  int slow = 0;
  double slow_us = 0;
  for (int i = 0; i < 2 * iters; i++) {
    if (sums[i] > 1000) { slow++; slow_us += sums[i]; }
  }
  qsort(exch, iters, sizeof *exch, by_value);
  qsort(sums, 2 * iters, sizeof *sums, by_value);
  if (rank == 0) {
    printf("{\"exch\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},", pct(exch, iters, .5), pct(exch, iters, .9), pct(exch, iters, .99), exch[iters - 1]);
    printf("\"sums\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},", pct(sums, 2 * iters, .5), pct(sums, 2 * iters, .9), pct(sums, 2 * iters, .99), sums[2 * iters - 1]);
    printf("\"slow\":%d,\"slowUs\":%.1f,\"sink\":%s}\n", slow, slow_us, sink > 0 ? "true" : "false");
  }
  MPI_Finalize();
  return 0;
}
