/* The image cache's gauges, read at scrape time from its index. */
#ifndef SBX_IMAGE_IMAGE_METRICS_H
#define SBX_IMAGE_IMAGE_METRICS_H

#include "common/error.h"

/* Sets images cached and their bytes; -1 when the index cannot be read
 * (the gauges keep their last values). */
int sbx_image_collect_metrics(sbx_error_t *err);

#endif
