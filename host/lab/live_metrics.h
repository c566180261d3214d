// LiveMetrics (host/wire/live_metrics.h) in the lab's namespace: the agents, the coordinator and the
// socket fabric keep them, the metrics endpoint (metrics.h) renders them.
#pragma once

#include "host/wire/live_metrics.h"

namespace fabemu::lab {

using host::dpdk::kLiveMetricsLinks;
using host::dpdk::LiveMetrics;

}  // namespace fabemu::lab
