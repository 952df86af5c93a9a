/* aot_main.c -- a C program (C99, no netc) linked against a library from
 * `netc build`: reads raw float32 samples from a file, runs them through the
 * library's entry point named on the command line, and writes the outputs as
 * raw float32 (tests/aot/aot_predict_test.py compares them with netc
 * predict's). Compiled per network with -DAOT_HEADER="PREFIX.h" and
 * -DAOT(x)=PREFIX_##x by the test. */
#include AOT_HEADER

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define AOT_CONCAT2(p, x) p##x
#define AOT_CONCAT(p, x) AOT_CONCAT2(p, x)
#define CALL(name) AOT_CONCAT(AOT_PREFIX, name)
#define CONST(name) AOT_CONCAT(AOT_UPPER, name)

static float *readFloats(const char *path, long *count) {
  FILE *f = fopen(path, "rb");
  long bytes;
  float *data;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc((size_t)(bytes > 0 ? bytes : 1));
  if (!data || fread(data, 1, (size_t)bytes, f) != (size_t)bytes) {
    fclose(f);
    free(data);
    return NULL;
  }
  fclose(f);
  *count = bytes / (long)sizeof(float);
  return data;
}

/* "threads": the entry point called from 4 threads at once, each on all the
 * samples with its own outputs; every thread's outputs must be the bits of
 * a call alone (thread safety: no state shared between calls). */
enum { kThreads = 4 };
struct Job {
  const float *in;
  float *out;
  int samples, status;
};
static void *runJob(void *arg) {
  struct Job *job = arg;
  int round;
  for (round = 0; round < 20 && job->status == 0; ++round)
    job->status = CALL(_infer)(job->in, job->out, job->samples);
  return NULL;
}
static int inThreads(const float *in, float *out, int samples) {
  struct Job jobs[kThreads];
  pthread_t threads[kThreads];
  size_t bytes = (size_t)samples * CONST(_OUTPUT_SIZE) * sizeof(float);
  int t, status = CALL(_infer)(in, out, samples);
  for (t = 0; t < kThreads; ++t) {
    jobs[t].in = in;
    jobs[t].out = malloc(bytes + 1);
    jobs[t].samples = samples;
    jobs[t].status = jobs[t].out ? 0 : -1;
    if (pthread_create(&threads[t], NULL, runJob, &jobs[t]) != 0)
      return -1;
  }
  for (t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    if (jobs[t].status != 0 || memcmp(jobs[t].out, out, bytes) != 0) {
      fprintf(stderr, "thread %d: status %d, or outputs that differ from a call alone\n", t, jobs[t].status);
      status = -1;
    }
    free(jobs[t].out);
  }
  return status;
}

int main(int argc, char **argv) {
  long count = 0, samples;
  float *in, *out;
  void *scratch;
  int status = 0;
  FILE *f;
  if (argc != 4) {
    fprintf(stderr, "usage: %s infer|normalized|scratch|scratch-normalized|threads INPUTS.f32 OUTPUTS.f32\n",
            argv[0]);
    return 2;
  }
  in = readFloats(argv[2], &count);
  if (!in || count % CONST(_INPUT_SIZE) != 0) {
    fprintf(stderr, "%s: not a whole number of samples of %d floats\n", argv[2], CONST(_INPUT_SIZE));
    return 2;
  }
  samples = count / CONST(_INPUT_SIZE);
  out = calloc((size_t)(samples * CONST(_OUTPUT_SIZE) + 1), sizeof(float));
  /* The scratch forms take 64-byte aligned memory. */
  scratch = aligned_alloc(64, CONST(_SCRATCH_BYTES));
  if (!out || !scratch)
    return 2;
  if (strcmp(argv[1], "infer") == 0)
    status = CALL(_infer)(in, out, (int)samples);
  else if (strcmp(argv[1], "normalized") == 0)
    status = CALL(_infer_normalized)(in, out, (int)samples);
  else if (strcmp(argv[1], "scratch") == 0)
    status = CALL(_infer_with_scratch)(in, out, (int)samples, scratch);
  else if (strcmp(argv[1], "threads") == 0)
    status = inThreads(in, out, (int)samples);
  else if (strcmp(argv[1], "scratch-normalized") == 0)
    status = CALL(_infer_normalized_with_scratch)(in, out, (int)samples, scratch);
  else
    return 2;
  /* The refusals: a negative batch and a null pointer; batch 0 does nothing. */
  if (status != 0 || CALL(_infer)(in, out, -1) != -1 || CALL(_infer)(NULL, out, 1) != -1 ||
      CALL(_infer)(in, NULL, 1) != -1 || CALL(_infer_with_scratch)(in, out, 1, NULL) != -1 ||
      CALL(_infer)(NULL, NULL, 0) != 0) {
    fprintf(stderr, "the entry points' return values are wrong (status %d)\n", status);
    return 1;
  }
  f = fopen(argv[3], "wb");
  if (!f || fwrite(out, sizeof(float), (size_t)(samples * CONST(_OUTPUT_SIZE)), f) !=
                (size_t)(samples * CONST(_OUTPUT_SIZE)))
    return 2;
  fclose(f);
  printf("%ld samples through %s\n", samples, STR(AOT_PREFIX));
  free(in);
  free(out);
  free(scratch);
  return 0;
}
