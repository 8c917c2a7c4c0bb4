/* replay.c: the main() of a fuzz target outside libFuzzer. It feeds every
 * file of the folders (or files) named on the command line to
 * LLVMFuzzerTestOneInput once, in name order, so the committed corpus
 * (seeds and every crash ever found) runs as a regression test in the
 * ordinary release and sanitizer builds without clang's fuzzer runtime.
 * A broken property aborts inside the target (OB_FUZZ_REQUIRE); the last
 * file named on stderr is the input that did it. A file that cannot be
 * read is an error here. Prints the count of inputs run. */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Reads the whole file; NULL with errno set when it cannot. */
static uint8_t *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  uint8_t *buf = NULL;
  int err = 0;
  for (;; cap *= 2) {
    uint8_t *grown = realloc(buf, cap);
    if (!grown) {
      err = ENOMEM;
      break;
    }
    buf = grown;
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) {
      if (ferror(f)) err = EIO;
      break;
    }
  }
  fclose(f);
  if (err) {
    free(buf);
    errno = err;
    return NULL;
  }
  *size = n;
  return buf;
}

static int run_file(const char *path) {
  size_t size;
  uint8_t *data = read_all(path, &size);
  if (!data) {
    fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(stderr, "replay: %s\n", path);
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d) { return d->d_name[0] != '.'; }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  long inputs = 0;
  for (int a = 1; a < argc; a++) {
    struct stat st;
    if (stat(argv[a], &st) != 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
      return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[a])) return 2;
      inputs++;
      continue;
    }
    struct dirent **names;
    int n = scandir(argv[a], &names, skip_dots, by_name);
    if (n < 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
      return 2;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[a], names[i]->d_name);
      if (!bad && run_file(path)) bad = 1;
      inputs++;
      free(names[i]);
    }
    free(names);
    if (bad) return 2;
  }
  if (inputs == 0) {
    fprintf(stderr, "replay: no inputs: an empty corpus tests nothing\n");
    return 1;
  }
  printf("replay: %ld inputs, no property broken\n", inputs);
  return 0;
}
