/* timing.c: -v (each phase with its time, as it ends), --time-report (a table at the
 * end, like gcc's -ftime-report), and a progress line on a terminal while a long gcc
 * compile runs. CPU time counts child processes too (gcc's assembler and linker). */
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"

static double wall_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec * 1e-6; }

static double cpu_now(void) {
  struct rusage s, k;
  getrusage(RUSAGE_SELF, &s);
  getrusage(RUSAGE_CHILDREN, &k);
  return tv(s.ru_utime) + tv(s.ru_stime) + tv(k.ru_utime) + tv(k.ru_stime);
}

void timing_start(Ctx *c) {
  c->timing.wall0 = c->timing.wall = wall_now();
  c->timing.cpu0 = c->timing.cpu = cpu_now();
}

void timing_mark(Ctx *c, const char *phase) {
  Timing *t = &c->timing;
  double w = wall_now(), u = cpu_now();
  if (t->n < TIMING_MAX) t->phase[t->n++] = (TimingPhase){phase, w - t->wall, u - t->cpu};
  if (c->opt.phase_times) fprintf(stderr, "tdslc: %-22s %9.3f s wall %9.3f s cpu\n", phase, w - t->wall, u - t->cpu);
  t->wall = w, t->cpu = u;
}

void timing_report(Ctx *c) {
  Timing *t = &c->timing;
  double w = t->wall - t->wall0, u = t->cpu - t->cpu0;
  fprintf(stderr, "\nExecution times (seconds)\n %-24s %15s %15s\n", "phase", "wall", "cpu");
  for (int i = 0; i < t->n; i++)
    fprintf(stderr, " %-24s %8.3f (%3.0f%%) %8.3f (%3.0f%%)\n", t->phase[i].name, t->phase[i].wall,
            w > 0 ? 100 * t->phase[i].wall / w : 0, t->phase[i].cpu, u > 0 ? 100 * t->phase[i].cpu / u : 0);
  fprintf(stderr, " %-24s %8.3f        %8.3f\n", "TOTAL", w, u);
}

/* ---- progress while gcc runs (one blocking call) ---- */

struct TimingWatch {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop, printed;
  const char *what;
};

static void *watch_main(void *arg) {
  TimingWatch *w = arg;
  double t0 = wall_now();
  pthread_mutex_lock(&w->mu);
  while (!w->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&w->cv, &w->mu, &until);
    double el = wall_now() - t0;
    if (!w->stop && el >= 2.0) {
      fprintf(stderr, "\rtdslc: %s: %.0f s", w->what, el);
      w->printed = true;
    }
  }
  if (w->printed) fputs("\r\033[K", stderr);
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

TimingWatch *timing_watch(Ctx *c, const char *what) {
  if (!isatty(2) || c->opt.phase_times) return NULL;
  TimingWatch *w = ANEW(&c->arena, TimingWatch);
  w->what = what;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, watch_main, w)) return NULL;
  return w;
}

void timing_unwatch(TimingWatch *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
}
