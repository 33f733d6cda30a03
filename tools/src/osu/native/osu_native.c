/*
 * osu_native: the Open MPI (C) side of `fastsock osu`, the project's own OSU-style program.
 *
 * It measures exactly what the Node ranks of `fastsock osu` measure, with the same method
 * (OSU Micro-Benchmarks 5.x: warm-up then timed iterations; latency = RTT/2 of a blocking
 * ping-pong; bw = windows of non-blocking sends then a 4-byte ack; bibw = windows both ways;
 * mbw_mr = P/2 sender/receiver pairs; collectives timed per call, a barrier between calls) and
 * JMB's view (the timed iterations are cut into at most M consecutive batches whose mean times are
 * the measurements the sextile is taken over).
 *
 * Compiled at run time with `mpicc -O2` by tools/src/osu/native.ts and started with `mpirun -np P`.
 *
 * Usage: osu_native <benchmark> <sizes> <iters> <warmup> <itersLarge> <warmupLarge> <large>
 *                   <window> <measurements>
 *   benchmark  latency | bw | bibw | mbw_mr | allreduce | bcast | reduce | allgather | alltoall |
 *              gather | scatter | barrier
 *   sizes      comma-separated message sizes in bytes (reductions: multiples of 4, MPI_FLOAT)
 *   iters, warmup            for sizes <= large bytes; itersLarge, warmupLarge above
 *   window     messages per window (bw, bibw, mbw_mr)
 *   measurements  the most batches the timed iterations are cut into (JMB: 150)
 *
 * Output (rank 0, stdout): one JSON object per line and size:
 *   {"bytes":N,"iterations":I,"warmup":W,"avgUs":A,"minUs":m,"maxUs":M,"cpuUs":C,"samplesUs":[...]}
 * avgUs is the time of one iteration: latency, RTT/2; bw/bibw/mbw_mr, one window and its ack
 * (rank 0's clock); collectives, one call averaged over the ranks (minUs/maxUs: the fastest and
 * slowest rank's average). cpuUs: user + system CPU time of all ranks over the timed loop.
 * samplesUs: the batch means, in the same unit (collectives: the slowest rank per batch). Errors: a line on stderr and exit status 2 (usage) or MPI_Abort.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_SIZES 64
#define ACK_BYTES 4

enum bench { LATENCY, BW, BIBW, MBW_MR, ALLREDUCE, BCAST, REDUCE, ALLGATHER, ALLTOALL, GATHER, SCATTER, BARRIER };
static const char *names[] = { "latency", "bw", "bibw", "mbw_mr", "allreduce", "bcast", "reduce", "allgather",
                               "alltoall", "gather", "scatter", "barrier" };

static int rank, nprocs;

/* Batch bookkeeping: iterations [0, iters) cut into m batches; sample k = mean time of batch k. */
struct batches {
  long iters;
  int m, next;
  long bound, prev_bound;
  double prev_t;
  double *samples;
};

static void batches_start (struct batches *b, long iters, int measurements, double *samples, double t)
{
  b->iters = iters;
  b->m = iters < measurements ? (int)iters : measurements;
  b->next = 1;
  b->prev_bound = 0;
  b->bound = b->m > 0 ? iters / b->m : 0;
  b->prev_t = t;
  b->samples = samples;
}

/* Called after timed iteration i (0-based) ended at time t (µs); `scale` divides each sample. */
static void batches_tick (struct batches *b, long i, double t, double scale)
{
  if (b->next > b->m || i + 1 != b->bound) return;
  b->samples[b->next - 1] = (t - b->prev_t) / (double)(b->bound - b->prev_bound) / scale;
  b->prev_t = t;
  b->prev_bound = b->bound;
  b->next++;
  b->bound = (long)((double)b->iters * b->next / b->m);
}

static void print_row (long bytes, long iters, long warmup, double avg, double min, double max, double cpu, const double *samples, int m)
{
  printf("{\"bytes\":%ld,\"iterations\":%ld,\"warmup\":%ld,\"avgUs\":%.6f,\"minUs\":%.6f,\"maxUs\":%.6f,\"cpuUs\":%.1f,\"samplesUs\":[",
         bytes, iters, warmup, avg, min, max, cpu);
  for (int k = 0; k < m; k++) printf(k == 0 ? "%.6f" : ",%.6f", samples[k]);
  printf("]}\n");
  fflush(stdout);
}

static void *xmalloc (size_t n)
{
  void *p = malloc(n > 0 ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "osu_native: out of memory (%zu bytes)\n", n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(p, 'a', n > 0 ? n : 1);
  return p;
}

static double now_us (void) { return MPI_Wtime() * 1e6; }

/* User + system CPU time of this process, µs. */
static double cpu_us (void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* The sum over the ranks of each rank's CPU time since `since` (µs), at rank 0. */
static double cpu_total (double since)
{
  double mine = cpu_us() - since, total = 0;
  MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  return total;
}

/* Point-to-point. Returns rank 0's time per iteration; samples and *cpu_out (all ranks) on rank 0. */
static double p2p (enum bench b, long size, long iters, long warmup, int window, int measurements, double *samples, int *m_out, double *cpu_out)
{
  char *sbuf = xmalloc((size_t)size), *rbuf = xmalloc((size_t)size);
  char ack[ACK_BYTES];
  MPI_Request *reqs = xmalloc(sizeof(MPI_Request) * 2 * (size_t)window);
  int pairs = nprocs / 2;
  int sender = rank < pairs, peer = sender ? rank + pairs : rank - pairs;
  int active = (b == MBW_MR) ? rank < 2 * pairs : rank < 2;
  if (b != MBW_MR) { sender = rank == 0; peer = 1 - rank; }
  struct batches bt;
  double t0 = 0, c0 = 0;
  batches_start(&bt, iters, measurements, samples, t0);
  double scale = b == LATENCY ? 2.0 : 1.0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (long i = 0; i < warmup + iters; i++) {
    if (i == warmup) {
      if (b == MBW_MR) MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_us();
      c0 = cpu_us();
      batches_start(&bt, iters, measurements, samples, t0);
    }
    if (!active) continue;
    switch (b) {
      case LATENCY:
        if (sender) {
          MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
          MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
        break;
      case BW:
      case MBW_MR:
        if (sender) {
          for (int j = 0; j < window; j++) MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[j]);
          MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
          MPI_Recv(ack, ACK_BYTES, MPI_CHAR, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          for (int j = 0; j < window; j++) MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[j]);
          MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
          MPI_Send(ack, ACK_BYTES, MPI_CHAR, peer, 101, MPI_COMM_WORLD);
        }
        break;
      case BIBW:
        for (int j = 0; j < window; j++) MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[j]);
        for (int j = 0; j < window; j++) MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[window + j]);
        MPI_Waitall(2 * window, reqs, MPI_STATUSES_IGNORE);
        break;
      default:
        break;
    }
    if (i >= warmup) batches_tick(&bt, i - warmup, now_us(), scale);
  }
  double t = (now_us() - t0) / (double)iters / scale;
  *cpu_out = cpu_total(c0);
  *m_out = bt.m;
  free(sbuf); free(rbuf); free(reqs);
  return t;
}

/* One collective call. */
static void coll_once (enum bench b, long size, char *sbuf, char *rbuf)
{
  int n = (int)size;
  switch (b) {
    case ALLREDUCE: MPI_Allreduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(sbuf, rbuf, n / 4, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(sbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, MPI_COMM_WORLD); break;
    case GATHER: MPI_Gather(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD); break;
    case SCATTER: MPI_Scatter(sbuf, n, MPI_CHAR, rbuf, n, MPI_CHAR, 0, MPI_COMM_WORLD); break;
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    default: break;
  }
}

/* Collectives: every rank times each call; a barrier (untimed) between calls (OSU, JMB). */
static void coll (enum bench b, long size, long iters, long warmup, int measurements, double *samples)
{
  size_t big = (size_t)size * (size_t)nprocs;
  char *sbuf = xmalloc(big), *rbuf = xmalloc(big);
  double *mine = xmalloc(sizeof(double) * (size_t)measurements);
  double sum = 0, batch = 0;
  long in_batch = 0;
  int m = iters < measurements ? (int)iters : measurements, k = 0;
  long bound = m > 0 ? iters / m : 0;
  double c0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (long i = 0; i < warmup + iters; i++) {
    if (i == warmup) c0 = cpu_us();
    double t0 = now_us();
    coll_once(b, size, sbuf, rbuf);
    double dt = now_us() - t0;
    if (i >= warmup) {
      long j = i - warmup;
      sum += dt;
      batch += dt;
      in_batch++;
      if (j + 1 == bound && k < m) {
        mine[k++] = batch / (double)in_batch;
        batch = 0;
        in_batch = 0;
        bound = (long)((double)iters * (k + 1) / m);
      }
    }
    if (b != BARRIER) MPI_Barrier(MPI_COMM_WORLD); /* osu_barrier times back-to-back barriers */
  }
  double cpu = cpu_total(c0);
  double avg = sum / (double)iters, lo, hi, tot;
  MPI_Reduce(&avg, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&avg, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&avg, &tot, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(mine, samples, m, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) print_row(size, iters, warmup, tot / nprocs, lo, hi, cpu, samples, m);
  free(sbuf); free(rbuf); free(mine);
}

int main (int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  if (argc != 10) {
    if (rank == 0) fprintf(stderr, "osu_native: usage: osu_native <benchmark> <sizes> <iters> <warmup> <itersLarge> <warmupLarge> <large> <window> <measurements>\n");
    MPI_Finalize();
    return 2;
  }
  int b = -1;
  for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) if (strcmp(argv[1], names[i]) == 0) b = i;
  long sizes[MAX_SIZES];
  int nsizes = 0;
  for (char *tok = strtok(argv[2], ","); tok != NULL && nsizes < MAX_SIZES; tok = strtok(NULL, ",")) {
    sizes[nsizes++] = strtol(tok, NULL, 10);
  }
  long iters = atol(argv[3]), warmup = atol(argv[4]), iters_large = atol(argv[5]), warmup_large = atol(argv[6]);
  long large = atol(argv[7]);
  int window = atoi(argv[8]), measurements = atoi(argv[9]);
  int p2p_bench = b == LATENCY || b == BW || b == BIBW || b == MBW_MR;
  const char *bad = b < 0 ? "unknown benchmark"
    : iters <= 0 || iters_large <= 0 || warmup < 0 || warmup_large < 0 || window <= 0 || measurements <= 0 ? "bad iteration counts"
    : (b == LATENCY || b == BW || b == BIBW) && nprocs != 2 ? "this benchmark needs exactly 2 ranks"
    : b == MBW_MR && (nprocs < 2 || nprocs % 2 != 0) ? "mbw_mr needs an even number of ranks"
    : NULL;
  if (bad != NULL) {
    if (rank == 0) fprintf(stderr, "osu_native: %s (%s, %d ranks)\n", bad, argv[1], nprocs);
    MPI_Finalize();
    return 2;
  }
  double *samples = xmalloc(sizeof(double) * (size_t)measurements);
  for (int s = 0; s < nsizes; s++) {
    long size = sizes[s];
    long it = size > large ? iters_large : iters, wu = size > large ? warmup_large : warmup;
    if (p2p_bench) {
      int m = 0;
      double cpu = 0;
      double t = p2p(b, size, it, wu, window, measurements, samples, &m, &cpu);
      if (rank == 0) print_row(size, it, wu, t, t, t, cpu, samples, m);
    } else {
      coll(b, size, it, wu, measurements, samples);
    }
  }
  free(samples);
  MPI_Finalize();
  return 0;
}
