#include "helper_threads.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace fastsock {
namespace {

struct Task {
  int tid;
  std::string comm;
  unsigned long long start;  // clock ticks since boot (/proc/<pid>/task/<tid>/stat field 22)
};

// Reads `path` whole (small /proc files); empty on failure.
std::string ReadSmall(const char* path) {
  FILE* f = fopen(path, "re");
  if (!f) return std::string();
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  return std::string(buf, n);
}

bool ReadTask(int tid, Task* t) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
  std::string comm = ReadSmall(path);
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  std::string stat = ReadSmall(path);
  // Fields after the command name, which is in parentheses and may hold spaces: state is field 3,
  // starttime field 22, so 19 fields on from the state.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  const char* p = stat.c_str() + close + 2;
  for (int field = 3; field < 22 && *p; field++) {
    p = strchr(p, ' ');
    if (!p) return false;
    p++;
  }
  t->tid = tid;
  t->comm = comm;
  t->start = strtoull(p, nullptr, 10);
  return true;
}

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

int NiceHelperThreads(int nice) {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -errno;
  const int pid = getpid();
  const int self = static_cast<int>(syscall(SYS_gettid));
  std::vector<Task> tasks;
  Task main_task{};
  bool have_main = false;
  while (dirent* e = readdir(d)) {
    int tid = atoi(e->d_name);
    if (tid <= 0) continue;
    Task t;
    if (!ReadTask(tid, &t)) continue;
    if (tid == pid) {
      main_task = t;
      have_main = true;
    } else if (tid != self) {
      tasks.push_back(t);
    }
  }
  closedir(d);
  std::vector<int> targets;
  for (const Task& t : tasks)
    if (EndsWith(t.comm, "V8Worker")) targets.push_back(t.tid);
  if (targets.empty() && have_main) {
    // Unnamed threads: the platform's batch is the earliest non-main threads, started together.
    unsigned long long first = ~0ULL;
    for (const Task& t : tasks)
      if (t.comm == main_task.comm && t.start < first) first = t.start;
    for (const Task& t : tasks)
      if (t.comm == main_task.comm && t.start <= first + 1) targets.push_back(t.tid);
  }
  int changed = 0;
  for (int tid : targets) {
    errno = 0;
    int now = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (errno != 0 || now >= nice) continue;
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) == 0) changed++;
  }
  return changed;
}

}  // namespace fastsock
