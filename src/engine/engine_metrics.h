/* The engine connection's gauges, read at scrape time: up, queued
 * invocations (reconnects are counted where they happen). */
#ifndef SBX_ENGINE_ENGINE_METRICS_H
#define SBX_ENGINE_ENGINE_METRICS_H

struct engine;

void engine_collect_metrics(struct engine *e);

#endif
