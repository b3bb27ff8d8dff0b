/* fault_run.h: two instances of one --check-bounds model (graph_builder.h
 * gb_symbol_graph_at(b, 2): y[o] = x[n + 2, o] + n, x = range of shape 3|2) run at once
 * in two threads, one in range (n = 0: y = 4 5) and one reading past x (n = 1: index 3).
 * Each must see only its own outcome: the fault word is per instance. Shared by
 * test_fault.c (gccjit, in process) and fault_host.c (static hosts it compiles). */
#ifndef FAULT_RUN_H
#define FAULT_RUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tdsl.h"

enum { FAULT_ROUNDS = 300 };

typedef struct FaultRun {
  tdsl_model *m;
  int n;  /* the index symbol's value: 0 in range, 1 out of range */
  int ok; /* rounds with the expected outcome */
} FaultRun;

static void *fault_thread(void *arg) {
  FaultRun *r = arg;
  for (int k = 0; k < FAULT_ROUNDS; k++) {
    float y[2] = {0, 0};
    if (tdsl_set_index(r->m, "n", r->n)) return NULL;
    int rc = tdsl_call(r->m, "y.forward");
    if (r->n == 0)
      r->ok += rc == 0 && !tdsl_read(r->m, "y", y, 2) && y[0] == 4 && y[1] == 5;
    else
      r->ok += rc == -1 && strstr(tdsl_error(r->m), "y.forward: index 3 out of range [0, 3) on axis 0 of tensor x") != NULL;
  }
  return NULL;
}

/* Runs both instances concurrently; prints the outcome, returns true if every round of
 * both went as expected. */
static bool fault_run_pair(tdsl_model *clean, tdsl_model *faulting, const char *label) {
  FaultRun r[2] = {{.m = clean, .n = 0}, {.m = faulting, .n = 1}};
  pthread_t t[2];
  if (tdsl_init(clean, 0) || tdsl_init(faulting, 0)) return false;
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, fault_thread, &r[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("%s: clean %d/%d faulting %d/%d: %s\n", label, r[0].ok, FAULT_ROUNDS, r[1].ok, FAULT_ROUNDS, tdsl_error(faulting));
  /* after a fault the instance runs again once the index is back in range */
  float y[2] = {0, 0};
  bool again = !tdsl_set_index(faulting, "n", 0) && !tdsl_call(faulting, "y.forward") && !tdsl_read(faulting, "y", y, 2) &&
               y[0] == 4 && y[1] == 5;
  return r[0].ok == FAULT_ROUNDS && r[1].ok == FAULT_ROUNDS && again;
}

#endif
