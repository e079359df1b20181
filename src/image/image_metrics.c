#include "image/image_metrics.h"

#include "common/cleanup.h"
#include "common/metrics_families.h"
#include "image/image_index.h"
#include "image/image_store.h"

int sbx_image_collect_metrics(sbx_error_t *err)
{
	cleanup_free char *root = sbx_image_root(err);
	if (root == NULL)
		return -1;
	struct sbx_index idx;
	if (sbx_index_read(root, &idx, err) < 0)
		return -1;
	double bytes = 0;
	for (size_t i = 0; i < idx.n; i++)
		bytes += (double)idx.entries[i].size;
	sbx_metric_set(&sbx_m_images_cached, NULL, (double)idx.n);
	sbx_metric_set(&sbx_m_images_cached_bytes, NULL, bytes);
	sbx_index_free(&idx);
	return 0;
}
